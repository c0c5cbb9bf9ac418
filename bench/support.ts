/**
 * Pure helpers shared by the benchmarks: seeded draws, percentiles, table cells and
 * command-line numbers. The scaffolding that drives the local stack is in bench/harness/.
 */

/** z-score of the 99th percentile of a standard normal. */
export const Z99 = 2.3263478740408408;

/** One standard normal draw (Box-Muller) from a uniform source. */
export function normal(rand: () => number): number {
  const u = Math.max(rand(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

/** Nearest-rank percentile of unsorted values; NaN when empty. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** A duration for a table cell; `-` when not a number. */
export const ms = (v: number): string => (Number.isFinite(v) ? `${Math.round(v)} ms` : '-');

/** A numeric command-line option in [min, max]; throws naming the option otherwise. */
export function numberOption(values: Record<string, unknown>, name: string, min: number, max: number): number {
  const v = Number(values[name]);
  if (!Number.isFinite(v) || v < min || v > max) throw new Error(`--${name} must be a number in [${min}, ${max}] (got ${String(values[name])})`);
  return v;
}
