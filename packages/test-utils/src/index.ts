export { useTempDir, makeTempDir } from './temp-dir';
export { runNode, runProcess, spawnUntil, killAllChildren, type ChildResult, type RunNodeOptions } from './child';
export { processTree } from './process-tree';
export {
  startHubServer,
  type HubServer,
  type HubServerFaults,
  type HubServerRequest,
  type StartHubServerOptions,
  type HubRepoType,
} from './hub-server';
export { createFakeClock, type FakeClock } from './fake-clock';
export { COMMIT_QUOTA_MESSAGE } from './_hub-server-quota';
export { runNodeUnprivileged, giveToUnprivileged, unprivilegedUnavailable, UNPRIVILEGED_ID } from './unprivileged';
export { PYTHON, TORCH_INSTALL, torchMissing } from './torch';
