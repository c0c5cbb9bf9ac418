/**
 * Helpers shared by the benchmarks that drive the local stack (bench/soak.ts,
 * bench/chaos.ts): seeded draws, percentiles, and what a video left behind in S3.
 */
import type { FrameResultItem } from '../core/results.ts';
import { listVideoObjects } from '../cli/read.ts';
import type { LocalStack } from '../local/stack.ts';

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

export const sleep = (t: number): Promise<void> => new Promise((r) => setTimeout(r, t));

/** Frame numbers of a video whose objects exist in the bucket now (one LIST per 1,000 keys). */
export async function framesInS3(stack: Pick<LocalStack, 'clients' | 'wiring'>, videoId: string): Promise<Set<number>> {
  const objects = await listVideoObjects({ clients: stack.clients, bucket: stack.wiring.bucket }, videoId);
  return new Set(objects.map((o) => Number(/\/(\d+)\.[a-z]+$/i.exec(o.key)?.[1] ?? Number.NaN)).filter((f) => Number.isFinite(f)));
}

/** Frames whose record is a gap (old gap runs, `frame..throughFrame`, expanded). */
export function gapFrames(results: readonly FrameResultItem[]): Set<number> {
  const out = new Set<number>();
  for (const r of results) if (String(r.status) === 'gap') for (let f = r.frame; f <= (r.throughFrame ?? r.frame); f++) out.add(f);
  return out;
}

/** A numeric command-line option in [min, max]; throws naming the option otherwise. */
export function numberOption(values: Record<string, unknown>, name: string, min: number, max: number): number {
  const v = Number(values[name]);
  if (!Number.isFinite(v) || v < min || v > max) throw new Error(`--${name} must be a number in [${min}, ${max}] (got ${String(values[name])})`);
  return v;
}
