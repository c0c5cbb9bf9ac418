/**
 * The crash-loop breaker's figures (decision 28), on the local stack with real worker
 * processes: one slot, three cameras streaming 30 frames each, one frame whose processing
 * SIGKILLs every worker (WORKER_CRASH_ON_KEY). Prints the crashes before that frame was
 * parked as `crashed-worker` (target ≤ 3), the seconds from the first crash until the
 * slot's other videos committed again and which successor committed them (decision 29: the
 * first), and until the poison frame's record landed.
 *
 *   npx node bench/crash-loop.ts [--crash-probe-deaths 0]
 *
 * `--crash-probe-deaths 0` turns the crash probe off (decision 41), for decision 29 alone;
 * its result goes to `bench/results/crash-loop-no-probe.json` (not committed: decision 41 keeps that
 * run's figures).
 */
import { join } from 'node:path';
import { benchMain, RESULTS_DIR, writeResult, type Bench } from './harness/main.ts';
import { startTestStack } from '../harness/pipeline.ts';
import { CRASH_LOOP, runCrashLoop } from '../harness/crash-loop.ts';
import { parseFlags } from './harness/options.ts';

export async function runCrashLoopBench(bench: Bench, crashProbeDeaths?: number): Promise<number> {
  const stack = await startTestStack(CRASH_LOOP.stackOptions(crashProbeDeaths));
  try {
    const figures = await runCrashLoop(stack);
    bench.say(`crashes before the frame was parked: ${figures.crashes} (target ≤ 3)`);
    bench.say(`first crash -> other videos committed again: ${figures.othersResumedSeconds.toFixed(1)} s`);
    // 1 = the first successor of the crashed owner (decision 29).
    bench.say(`successor that committed each other video's first record after the crash: ${JSON.stringify(figures.othersResumedBySuccessor)}`);
    bench.say(`successor that recorded the poison frame: ${figures.parkedBySuccessor}`);
    bench.say(`first crash -> poison frame recorded crashed-worker: ${figures.parkedAfterSeconds.toFixed(1)} s`);
    bench.say(`deaths of crash-probe children on the poison frame: ${figures.probeDeaths}`);
    const file = crashProbeDeaths === 0 ? 'crash-loop-no-probe.json' : 'crash-loop.json';
    writeResult(join(RESULTS_DIR, file), { scenario: 'crash-loop', crashProbeDeaths: crashProbeDeaths ?? 'default', ...figures }, bench.say);
    return figures.crashes <= 3 ? 0 : 1;
  } finally {
    await stack.stop();
  }
}

if (import.meta.main) {
  const flags = parseFlags('crash-loop.ts', { 'crash-probe-deaths': { num: [undefined, 0, 10], int: true } }, process.argv.slice(2));
  if (flags) await benchMain('crash-loop', (bench) => runCrashLoopBench(bench, flags.crashProbeDeaths));
}
