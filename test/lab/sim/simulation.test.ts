/**
 * The deterministic simulation's CI lane (lab/sim/, decision 61): a fixed budget of seeds
 * over the whole pipeline on the twins, each checked by the oracle; the same seed gives
 * the same run; and the shrunk plans of defects the simulation found, kept as
 * regressions. The large budget is bench/sim.ts's.
 */
import { describe, expect, it } from 'vitest';
import { runBatch } from '../../../lab/sim/batch.ts';
import { runPlan, runSeed } from '../../../lab/sim/run.ts';
import { describePlan } from '../../../lab/sim/shrink.ts';
import { SIM_REGRESSIONS } from './regressions.ts';

/** Seeds per CI run: about half a minute on one core of the CI machine. */
const CI_SEEDS = 150;

describe('the deterministic simulation', () => {
  it('replays a seed event for event: the same trace, records and digest', async () => {
    // Prepare: a seed with faults of several kinds, run between others
    const first = await runSeed(119);
    await runSeed(5);
    // Act
    const again = await runSeed(119);
    // Assess
    expect(again.digest).toBe(first.digest);
    expect(again.trace).toEqual(first.trace);
    expect(again.steps).toBe(first.steps);
  });

  it(`finds no violation in ${CI_SEEDS} seeds`, async () => {
    // Act
    const t = await runBatch(1, CI_SEEDS, { stopAfterFailures: 3 });
    // Assess: the failing seeds, with `npx node bench/sim.ts --seed N --trace` to see each
    const failing = await Promise.all(t.failing.map(async (f) => describePlan((await runSeed(f.seed)).plan) + `\n  ${f.invariants.join('; ')}: ${f.example}`));
    expect(failing).toEqual([]);
    expect(t.seeds).toBe(CI_SEEDS);
    // Every fault kind of the plan is exercised in the budget.
    expect(Object.keys(t.coverage).sort()).toEqual(
      expect.arrayContaining(['end-moved', 'kill', 'notification-duplicated', 'notification-late', 'pause-long', 'pause-short', 'reconcile', 'release-force', 'replay', 'segment-reuploaded', 'segment-truncated']),
    );
  }, 300_000);

  for (const r of SIM_REGRESSIONS) {
    it(`regression: ${r.name}`, async () => {
      const result = await runPlan(r.plan);
      expect(result.violations.map((v) => `${v.name}: ${v.examples[0]}`)).toEqual([]);
    });
  }
});
