/** Renders rows as left-aligned columns (the first row is the header), two spaces apart. */
export function renderTable(rows: readonly (readonly string[])[], bold: (s: string) => string = (s) => s): string {
  const widths: number[] = [];
  for (const row of rows)
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, [...cell].length);
    });
  return rows
    .map((row, r) => {
      const line = row
        .map((cell, i) => (i === row.length - 1 ? cell : cell + ' '.repeat((widths[i] ?? 0) - [...cell].length)))
        .join('  ')
        .trimEnd();
      return r === 0 ? bold(line) : line;
    })
    .join('\n');
}
