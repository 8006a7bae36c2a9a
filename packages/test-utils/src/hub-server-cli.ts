// Runs the Hub-protocol test server as its own process (for tests and benches that want it
// outside their own event loop):
//   node --import tsx packages/test-utils/src/hub-server-cli.ts [--dir DIR] [--token hf_x] [--faults JSON]
// Prints one JSON line {"url","token","dir"} once listening; faults can later be changed with
// POST <url>/__admin/faults (Bearer token, JSON body). Stops on SIGTERM/SIGINT.
import { parseArgs } from 'node:util';
import { startHubServer, type HubServerFaults } from './hub-server';

const { values } = parseArgs({
  options: {
    dir: { type: 'string' },
    token: { type: 'string' },
    faults: { type: 'string' },
    'tree-page-size': { type: 'string' },
  },
});

const server = await startHubServer({
  dir: values.dir,
  token: values.token,
  faults: values.faults ? (JSON.parse(values.faults) as HubServerFaults) : undefined,
  treePageSize: values['tree-page-size'] ? Number(values['tree-page-size']) : undefined,
});
process.stdout.write(`${JSON.stringify({ url: server.url, token: server.token, dir: server.dir })}\n`);
const stop = (): void => {
  void server.close().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
