/**
 * A duration in words, the one way the construct's messages, alarms and dashboard and local mode's
 * banner and warnings word one. Free of imports, so the CDK app and the local runner can load it
 * without the function's dependencies (as aws-limits.ts and settings.ts).
 */

/** The units a duration is worded in, largest first. */
const UNITS = [
  ['days', 86_400, 'day'],
  ['hours', 3600, 'hour'],
  ['minutes', 60, 'minute'],
  ['seconds', 1, 'second'],
] as const;

/** The largest unit a duration may be worded in. */
export type LargestDurationUnit = (typeof UNITS)[number][0];

/**
 * A number of seconds in words, every unit kept, largest first: "4 days 6 hours 3 minutes",
 * "30 minutes", "0 seconds" (CDK's `Duration.toHumanString` drops all but two units).
 * @param totalSeconds rounded to whole seconds
 * @param largestUnit the largest unit used: `hours` words a retry window as it is set
 *   (`RETRY_WINDOW_HOURS`), "36 hours" rather than "1 day 12 hours"
 */
export function durationText(totalSeconds: number, largestUnit: LargestDurationUnit = 'days'): string {
  let left = Math.round(totalSeconds);
  const parts: string[] = [];
  for (const [unit, size, name] of UNITS.slice(UNITS.findIndex(([unit]) => unit === largestUnit))) {
    const count = Math.floor(left / size);
    left -= count * size;
    if (count > 0 || (unit === 'seconds' && parts.length === 0)) parts.push(`${count} ${name}${count === 1 ? '' : 's'}`);
  }
  return parts.join(' ');
}
