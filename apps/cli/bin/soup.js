#!/usr/bin/env node
// Node opens its debugger on 127.0.0.1:9229 at SIGUSR1 unless a listener is installed: one is, before anything
// loads, and stays. A SIGUSR1/SIGUSR2 that arrives while the CLI loads is handed to main() once it listens.
const early = [];
const hold = (sig) => void early.push(sig);
process.on('SIGUSR1', () => {});
for (const sig of ['SIGUSR1', 'SIGUSR2']) process.on(sig, hold);

const { main } = await import('../dist/index.js');
const done = main(process.argv);
for (const sig of ['SIGUSR1', 'SIGUSR2']) process.off(sig, hold);
for (const sig of early) process.emit(sig, sig);
done.then((code) => {
  process.exitCode = code;
});
