/**
 * The crash-loop breaker's figures (decision 28), on the local stack with real worker
 * processes: one slot, three cameras streaming 30 frames each, one frame whose processing
 * SIGKILLs every worker (WORKER_CRASH_ON_KEY). Prints the crashes before that frame was
 * parked as `crashed-worker` (target ≤ 3), the seconds from the first crash until the
 * slot's other videos committed again and which successor committed them (decision 29: the
 * first), and until the poison frame's record landed.
 *
 *   npx node bench/crash-loop.ts
 */
import { join } from 'node:path';
import { benchMain, RESULTS_DIR, writeResult, type Bench } from './harness/main.ts';
import { startTestStack } from '../test/support/pipeline.ts';
import { CRASH_LOOP, runCrashLoop } from '../test/support/crash-loop.ts';

export async function runCrashLoopBench(bench: Bench): Promise<number> {
  const stack = await startTestStack(CRASH_LOOP.stackOptions());
  try {
    const figures = await runCrashLoop(stack);
    bench.say(`crashes before the frame was parked: ${figures.crashes} (target ≤ 3)`);
    bench.say(`first crash -> other videos committed again: ${figures.othersResumedSeconds.toFixed(1)} s`);
    // 1 = the first successor of the crashed owner (decision 29).
    bench.say(`successor that committed each other video's first record after the crash: ${JSON.stringify(figures.othersResumedBySuccessor)}`);
    bench.say(`successor that recorded the poison frame: ${figures.parkedBySuccessor}`);
    bench.say(`first crash -> poison frame recorded crashed-worker: ${figures.parkedAfterSeconds.toFixed(1)} s`);
    writeResult(join(RESULTS_DIR, 'crash-loop.json'), { scenario: 'crash-loop', ...figures }, bench.say);
    return figures.crashes <= 3 ? 0 : 1;
  } finally {
    await stack.stop();
  }
}

if (import.meta.main) await benchMain('crash-loop', runCrashLoopBench);
