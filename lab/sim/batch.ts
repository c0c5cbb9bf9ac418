/**
 * Runs a range of seeds and tallies them (lab/sim/): what bench/sim.ts and the CI lane's
 * test share. One process runs its seeds one after another (the simulated world owns the
 * process's clock); bench/sim.ts spreads ranges over child processes.
 */
import { runSeed, type SimResult, type SimRunOptions } from './run.ts';

export interface BatchTally {
  readonly seeds: number;
  /** Seeds with any violation, with their invariants. */
  readonly failing: { readonly seed: number; readonly invariants: readonly string[]; readonly example: string }[];
  /** Per fault kind: seeds that applied it, and times applied. */
  readonly coverage: Record<string, { seeds: number; applied: number }>;
  /** How runs ended: `settled` or the simulated deadline. */
  readonly ended: Record<string, number>;
  readonly simulatedMs: number;
  readonly steps: number;
  readonly realMs: number;
}

export function emptyTally(): BatchTally {
  return { seeds: 0, failing: [], coverage: {}, ended: {}, simulatedMs: 0, steps: 0, realMs: 0 };
}

export function addResult(t: BatchTally, r: SimResult): BatchTally {
  const coverage = { ...t.coverage };
  for (const [kind, n] of Object.entries(r.faults)) {
    const c = coverage[kind] ?? { seeds: 0, applied: 0 };
    coverage[kind] = { seeds: c.seeds + 1, applied: c.applied + n };
  }
  return {
    seeds: t.seeds + 1,
    failing: r.violations.length > 0 ? [...t.failing, { seed: r.seed, invariants: r.violations.map((v) => v.name), example: r.violations[0]!.examples[0] ?? '' }] : t.failing,
    coverage,
    ended: { ...t.ended, [r.ended]: (t.ended[r.ended] ?? 0) + 1 },
    simulatedMs: t.simulatedMs + r.simulatedMs,
    steps: t.steps + r.steps,
    realMs: t.realMs,
  };
}

export function mergeTallies(a: BatchTally, b: BatchTally): BatchTally {
  const coverage = { ...a.coverage };
  for (const [kind, c] of Object.entries(b.coverage)) {
    const x = coverage[kind] ?? { seeds: 0, applied: 0 };
    coverage[kind] = { seeds: x.seeds + c.seeds, applied: x.applied + c.applied };
  }
  const ended = { ...a.ended };
  for (const [k, n] of Object.entries(b.ended)) ended[k] = (ended[k] ?? 0) + n;
  return {
    seeds: a.seeds + b.seeds,
    failing: [...a.failing, ...b.failing].sort((x, y) => x.seed - y.seed),
    coverage,
    ended,
    simulatedMs: a.simulatedMs + b.simulatedMs,
    steps: a.steps + b.steps,
    realMs: Math.max(a.realMs, b.realMs),
  };
}

/** Runs seeds `[from, from + count)`, stopping early after `stopAfterFailures` failing seeds. */
export async function runBatch(from: number, count: number, o: SimRunOptions & { stopAfterFailures?: number; onSeed?: (r: SimResult) => void } = {}): Promise<BatchTally> {
  const t0 = performance.now();
  let t = emptyTally();
  for (let seed = from; seed < from + count; seed++) {
    const r = await runSeed(seed, o);
    o.onSeed?.(r);
    t = addResult(t, r);
    if (o.stopAfterFailures !== undefined && t.failing.length >= o.stopAfterFailures) break;
  }
  return { ...t, realMs: performance.now() - t0 };
}
