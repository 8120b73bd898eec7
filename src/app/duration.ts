// Durations are written the Go way ("90s", "15m", "1h30m", "0"), as kubectl users expect.
export const DURATION_PATTERN = /^(0|([0-9]+(\.[0-9]+)?(ms|s|m|h))+)$/;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Milliseconds in a Go-style duration; throws on anything else. */
export function parseDuration(text: string): number {
  if (!DURATION_PATTERN.test(text)) {
    throw new Error(`invalid duration "${text}": use a number with a unit, such as 90s, 15m or 1h30m`);
  }
  if (text === '0') return 0;
  let total = 0;
  for (const [, amount, unit] of text.matchAll(/([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)/g)) {
    total += Number(amount) * (UNIT_MS[unit as string] ?? 0);
  }
  return Math.round(total);
}
