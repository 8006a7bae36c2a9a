/** `1536 MiB` → "1.50 GiB": binary units, 3 significant figures. */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${units[i]}`;
}

/**
 * Two amounts in one unit, with as many decimals (up to 3) as it takes for unequal amounts to read unequal:
 * `peak 300.4 MiB / budget 300.0 MiB`, where {@link formatBytes} gives 300 MiB for both. Amounts that differ by
 * less than the third decimal read in bytes.
 */
export function formatBytesApart(a: number, b: number): [string, string] {
  const plain: [string, string] = [formatBytes(a), formatBytes(b)];
  if (a === b || plain[0] !== plain[1] || !Number.isFinite(a) || !Number.isFinite(b)) return plain;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  const i = Math.min(units.length - 1, Math.max(0, Math.floor(Math.log2(Math.max(Math.abs(a), 1)) / 10)));
  const scale = 1024 ** i;
  for (let digits = 1; digits <= 3 && i > 0; digits++) {
    const pair: [string, string] = [
      `${(a / scale).toFixed(digits)} ${units[i]}`,
      `${(b / scale).toFixed(digits)} ${units[i]}`,
    ];
    if (pair[0] !== pair[1]) return pair;
  }
  return [`${a} B`, `${b} B`];
}
