/**
 * A segment's closing sentence: why the session ended, the step the store points at (null: none yet, so the next
 * session starts from the beginning), and that the same command continues it.
 */
export function describeSegmentSaved(reason: string, step: number | null, storeName: string): string {
  const where =
    step !== null
      ? `step ${step} is saved in ${storeName}`
      : 'no complete checkpoint yet: the next session starts from the beginning';
  return `segment saved (${reason}): ${where}; run the same command again to continue`;
}
