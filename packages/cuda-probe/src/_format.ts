/** `1.50 GiB`, `300.0 MiB`, `512 B`: binary units, for details and errors. */
export function formatBytes(bytes: number): string {
  const abs = Math.abs(bytes);
  if (abs >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(2)} GiB`;
  if (abs >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  if (abs >= 2 ** 10) return `${(bytes / 2 ** 10).toFixed(1)} KiB`;
  return `${bytes} B`;
}
