// Pure helpers of the bench's figures: percentiles and the formats of the table.

/**
 * The nearest-rank percentile (p in 0..1) of the values; undefined when there
 * are none. Nearest rank, so that a p99 of 50 samples is the worst but none is
 * interpolated between two real samples.
 */
export function percentile(values: readonly number[], p: number): number | undefined {
  if (values.length === 0) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil(p * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

export const MiB = 1024 * 1024;

/** A number for the table: thousands separated, fixed decimals. */
export function num(value: number | undefined, decimals = 0): string {
  if (value === undefined || Number.isNaN(value)) return '–';
  return value.toLocaleString('en-US', { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
}

/** A figure with the 1-minute load average it was taken under. */
export function withLoad(text: string, load: number | undefined): string {
  return load === undefined ? text : `${text} (load ${load.toFixed(1)})`;
}
