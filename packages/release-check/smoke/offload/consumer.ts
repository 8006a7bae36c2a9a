import { ActivationStore, type OffloadTensor } from '@soup/offload';

const store = new ActivationStore({ target: 'cpu' });
const t: OffloadTensor = { dtype: 'int64', dims: [2], data: new BigInt64Array([1n, 2n]) };
const back: OffloadTensor = store.unpack(store.pack(t));
// @ts-expect-error dtype and data must agree
const bad: OffloadTensor = { dtype: 'float32', dims: [1], data: new BigInt64Array(1) };
store.close();
export { back, bad };
