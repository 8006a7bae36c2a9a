// The byte format every soup line uses lives in @soup/batch-probe, so that @soup/tune's notes read the same.
export { formatBytes, formatBytesApart } from '@soup/batch-probe';
