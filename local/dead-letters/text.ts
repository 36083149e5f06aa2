/** How the `dead-letters` commands write numbers, times and bodies for a person. */

/** A whole number with thousands separators: 10,000. */
export function count(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

/** A time as UTC to the second: `2026-11-20 10:02:03Z`. */
export function when(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}

/** A span of time, roughly, in its two largest units: `3 d 4 h`, `12 min`, `45 s`. */
export function span(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  const units: [number, string][] = [
    [86_400, 'd'],
    [3_600, 'h'],
    [60, 'min'],
    [1, 's'],
  ];
  const parts: string[] = [];
  let left = seconds;
  for (const [size, name] of units) {
    const amount = Math.floor(left / size);
    if (amount > 0 || (parts.length === 0 && size === 1)) parts.push(`${amount} ${name}`);
    left -= amount * size;
    if (parts.length === 2) break;
    if (parts.length === 1 && amount > 0 && size === 1) break;
  }
  return parts.join(' ');
}

/** Characters of a body or a response shown on a line. */
export const SAMPLE_CHARS = 100;

/** Text on one line, cut to `max` characters (whole characters) with `…`. */
export function excerpt(text: string, max = SAMPLE_CHARS): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  const characters = Array.from(flat);
  return characters.length <= max ? flat : `${characters.slice(0, max).join('')}…`;
}

/** Rows as columns, each padded to its widest cell; `right` lists the columns aligned right. */
export function table(rows: readonly (readonly string[])[], right: ReadonlySet<number> = new Set()): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, index) => {
      widths[index] = Math.max(widths[index] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, index) =>
        index === row.length - 1 && !right.has(index)
          ? cell
          : right.has(index)
            ? cell.padStart(widths[index] ?? 0)
            : cell.padEnd(widths[index] ?? 0),
      )
      .join('  ')
      .trimEnd(),
  );
}
