// The one duration grammar: Go's and Kubernetes' ("500ms", "90s", "15m",
// "1h30m", "0"), as kubectl users and Kubernetes components' flags expect. The
// App's and the checks' fields, the operator's flags, the chart's values and
// the CLI all read durations through this file. A bare number has no unit and
// is refused, but "0", as Go's time.ParseDuration does: "15" could mean seconds
// or milliseconds, and "1m" read as a number is 1.
export const DURATION_PATTERN = /^(0|([0-9]+(\.[0-9]+)?(ms|s|m|h))+)$/;

/** What a duration looks like, for messages: "<field> must be <DURATION_HINT>". */
export const DURATION_HINT = 'a duration such as 90s, 15m or 1h30m';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Milliseconds in a duration; throws on anything else. */
export function parseDuration(text: string): number {
  if (!DURATION_PATTERN.test(text)) {
    const unitless = /^[0-9]+(\.[0-9]+)?$/.test(text) ? ` (no unit: ${text}s is ${text} seconds)` : '';
    throw new Error(`invalid duration "${text}"${unitless}: use ${DURATION_HINT}`);
  }
  if (text === '0') return 0;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g)) {
    total += Number(amount) * (UNIT_MS[unit as string] ?? 0);
  }
  return Math.round(total);
}
