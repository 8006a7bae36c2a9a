export { useTempDir, makeTempDir } from './temp-dir';
export { runNode, runProcess, spawnUntil, killAllChildren, type ChildResult, type RunNodeOptions } from './child';
