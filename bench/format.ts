/** How the report writes a figure: significant digits, thousands separators, units, "met". */

/** A number with `digits` significant digits at most and thousands separators: 12,345 / 123 / 1.23; "n/a" when not finite. */
export function fmt(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return 'n/a';
  const magnitude = Math.abs(value) >= 1 ? Math.floor(Math.log10(Math.abs(value))) + 1 : 1;
  const decimals = Math.max(0, digits - magnitude);
  return value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** A ratio with two decimals: "0.93". */
export const ratio = (value: number | undefined): string => (value !== undefined && Number.isFinite(value) ? value.toFixed(2) : 'n/a');
/** Microseconds: "76.8 µs". */
export const us = (value: number): string => `${fmt(value, 3)} µs`;
/** MiB: "131 MiB". */
export const mib = (value: number): string => `${fmt(value, 3)} MiB`;
/** A whole number with thousands separators. */
export const int = (value: number | undefined): string =>
  value !== undefined && Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : 'n/a';
/** Bytes in KB: "412 KB". */
export const kb = (bytes: number): string => `${fmt(bytes / 1024, 3)} KB`;
/** Milliseconds: "551 ms". */
export const ms = (value: number | undefined): string => `${fmt(value ?? Number.NaN, 3)} ms`;
/** Three significant digits: "16.4". */
export const f3 = (value: number | undefined): string => fmt(value ?? Number.NaN, 3);
/** Two significant digits: "0.52". */
export const f2 = (value: number): string => fmt(value, 2);
/** A fraction as a percentage: "4.5 %". */
export const share = (fraction: number): string => (Number.isFinite(fraction) ? `${fmt(100 * fraction, 2)} %` : 'n/a');
/** Whether a goal was met. */
export const met = (ok: boolean): string => (ok ? 'met' : 'NOT met');
/** A count in thousands, e.g. "243k". */
export const kilo = (count: number): string => `${int(count / 1000)}k`;
/** A difference with its sign: "+61.2 µs", "−12.0 µs". */
export const deltaUs = (value: number): string => (value < 0 ? `−${us(-value)}` : `+${us(value)}`);
/** Whole numbers, comma-separated. */
export const ints = (values: readonly number[]): string => values.map((value) => int(value)).join(', ');
/** The sum of `values`. */
export const sum = (values: readonly number[]): number => values.reduce((total, value) => total + value, 0);
/** The mean of `values`. */
export const meanOf = (values: readonly number[]): number => sum(values) / values.length;
/** The mean of counts, whole, or "not counted". */
export const mean = (values: readonly number[] | undefined): string => (values === undefined ? 'not counted' : int(meanOf(values)));
/** The range of `values`: "10–10"; empty when there are none. */
export const span = (values: readonly number[]): string => (values.length === 0 ? '' : `${Math.min(...values)}–${Math.max(...values)}`);
/** Settings as `NAME=value`, comma-separated. */
export const settings = (env: Readonly<Record<string, string>>): string =>
  Object.entries(env)
    .map(([name, value]) => `\`${name}=${value}\``)
    .join(', ');
/** SQS calls by name: "GetQueueUrl × 1"; "none" when there were none. */
export const calls = (counts: Readonly<Record<string, number>>): string =>
  Object.entries(counts)
    .map(([name, count]) => `${name} × ${count}`)
    .join(', ') || 'none';
/** A Markdown bullet list. */
export const bullets = (lines: readonly string[]): string => lines.map((line) => `- ${line}`).join('\n');
/** `render(item)` for every item of `items`, joined. */
export const each = <T>(items: readonly T[] | undefined, render: (item: T) => string): string => (items ?? []).map(render).join('');
