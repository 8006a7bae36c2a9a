/** `tier: 'auto'` picks `'full'` below this many GB of device memory (as in the Python original). */
export const AUTO_FULL_THRESHOLD_GB = 24;
/** `tier: 'auto'` picks `'medium'` up to and including this many GB, `'selective'` above. */
export const AUTO_SELECTIVE_THRESHOLD_GB = 80;
