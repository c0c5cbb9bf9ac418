/**
 * The deterministic simulation's bench (lab/sim/, decision 61): runs a budget of seeds
 * over the whole pipeline on the twins, prints seeds per second and each fault kind's
 * coverage, shrinks the first failing seed to readable steps, and writes
 * bench/results/sim.json.
 *
 *   npx node bench/sim.ts [--seeds 20000] [--from 1] [--jobs 2] [--shrink] [--scale 1]
 *   npx node bench/sim.ts --seed 4711 --trace     # one seed, its plan and its trace
 *   npx node bench/sim.ts --first-failure          # seeds in order until the first violation
 *
 * A seed replays event for event: `--seed N --trace` shows what seed N did.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { runBatch, mergeTallies, emptyTally, type BatchTally } from '../lab/sim/batch.ts';
import { runSeed } from '../lab/sim/run.ts';
import { describePlan, shrink } from '../lab/sim/shrink.ts';
import { commandLine, machine, RESULTS_DIR, writeResult } from './harness/main.ts';
import { parseFlags } from './harness/options.ts';

const FLAGS = {
  seeds: { num: [20_000, 1, 10_000_000], int: true },
  from: { num: [1, 0, 2 ** 31], int: true },
  jobs: { num: [2, 1, 64], int: true },
  scale: { num: [1, 0.5, 10] },
  seed: { num: [undefined, 0, 2 ** 31], int: true },
  trace: { switch: true },
  shrink: { switch: true },
  'first-failure': { switch: true },
  out: { text: join(RESULTS_DIR, 'sim.json') },
  'child-range': { text: '' },
} as const;

async function main(): Promise<number> {
  const o = parseFlags('sim.ts', FLAGS, process.argv.slice(2));
  if (!o) return 2;
  if (o.childRange) {
    // A child: runs its range and reports its tally to the parent.
    const [from, count] = o.childRange.split(':').map(Number) as [number, number];
    const t = await runBatch(from, count, { scale: o.scale });
    process.send!(t);
    return 0;
  }
  if (o.seed !== undefined) {
    const r = await runSeed(o.seed, { scale: o.scale });
    console.log(describePlan(r.plan, r));
    if (o.trace) for (const line of r.trace) console.log(`${(line.atMs / 1000).toFixed(3).padStart(9)} s  ${line.what}`);
    console.log(`${r.violations.length === 0 ? 'no violation' : `${r.violations.length} invariant(s) violated`}; ended ${r.ended} at ${(r.simulatedMs / 1000).toFixed(1)} s simulated, ${r.steps} steps; digest ${r.digest}`);
    return r.violations.length === 0 ? 0 : 1;
  }

  if (o.firstFailure) {
    // How many seeds, in order from --from, until the first violation (one process).
    const t = await runBatch(o.from, o.seeds, { scale: o.scale, stopAfterFailures: 1 });
    const f = t.failing[0];
    console.log(f ? `first failing seed ${f.seed}: the ${t.seeds}th seed run (${(t.realMs / 1000).toFixed(1)} s): ${f.invariants.join('; ')} (e.g. ${f.example})` : `no failing seed in ${t.seeds} seeds (${(t.realMs / 1000).toFixed(1)} s)`);
    return f ? 1 : 0;
  }
  const t0 = performance.now();
  const per = Math.ceil(o.seeds / o.jobs);
  const script = fileURLToPath(import.meta.url);

  const parts = await Promise.all(
    Array.from({ length: o.jobs }, (_, j) => {
      const from = o.from + j * per;
      const count = Math.max(0, Math.min(per, o.from + o.seeds - from));
      if (count === 0) return Promise.resolve(emptyTally());
      return new Promise<BatchTally>((resolve, reject) => {
        const child = fork(script, ['--child-range', `${from}:${count}`, '--scale', String(o.scale)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
        child.on('message', (m) => {

          resolve(m as BatchTally);
        });
        child.on('exit', (code) => (code === 0 ? undefined : reject(new Error(`seeds ${from}..${from + count - 1}: child exited ${code}`))));
      });
    }),
  );
  const tally = parts.reduce(mergeTallies, emptyTally());
  const realS = (performance.now() - t0) / 1000;
  const seedsPerSecond = tally.seeds / realS;
  console.log(`${tally.seeds} seeds (${o.from}..${o.from + tally.seeds - 1}) in ${realS.toFixed(1)} s on ${o.jobs} process(es): ${seedsPerSecond.toFixed(2)} seeds/s; ${(tally.simulatedMs / 3_600_000).toFixed(1)} h simulated`);
  console.log(`ended: ${Object.entries(tally.ended).map(([k, n]) => `${k} ${n}`).join(', ')}`);
  console.log('fault kind                  seeds   applied');
  for (const [kind, c] of Object.entries(tally.coverage).sort()) console.log(`${kind.padEnd(26)} ${String(c.seeds).padStart(6)} ${String(c.applied).padStart(9)}`);
  console.log(`${tally.failing.length} failing seed(s)${tally.failing.length ? `: ${tally.failing.slice(0, 20).map((f) => f.seed).join(', ')}` : ''}`);
  for (const f of tally.failing.slice(0, 5)) console.log(`  seed ${f.seed}: ${f.invariants.join('; ')} (e.g. ${f.example})`);
  let shrunk: string | undefined;
  if (o.shrink && tally.failing.length > 0) {
    const first = await runSeed(tally.failing[0]!.seed, { scale: o.scale });
    const s = await shrink(first, { scale: o.scale });
    shrunk = describePlan(s.plan, s.result);
    console.log(`shrunk seed ${first.seed} in ${s.runs} runs, ${first.plan.events.length} -> ${s.plan.events.length} events:\n${shrunk}`);
  }
  writeResult(o.out, {
    command: commandLine('sim.ts'),
    machine: machine(),
    at: new Date().toISOString(),
    seeds: tally.seeds,
    from: o.from,
    jobs: o.jobs,
    realSeconds: Math.round(realS * 10) / 10,
    seedsPerSecond: Math.round(seedsPerSecond * 100) / 100,
    simulatedHours: Math.round((tally.simulatedMs / 3_600_000) * 10) / 10,
    ended: tally.ended,
    coverage: tally.coverage,
    failingSeeds: tally.failing.map((f) => f.seed),
    failing: tally.failing.slice(0, 50),
    ...(shrunk ? { shrunk } : {}),
  });
  return tally.failing.length === 0 ? 0 : 1;
}

process.exitCode = await main();
