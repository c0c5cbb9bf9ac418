/**
 * The stack starter: the local stack (DynamoDB Local + fauxqs, router, janitor, worker
 * processes) with the settings every scenario uses unless it says otherwise (quiet, a
 * 1-s router long poll, 5 s for a worker to stop), its log lines kept, the workers' last
 * lines kept for a post-mortem, and a `withStack` that always stops it.
 */
import { startLocalStack, type LocalStack, type LocalStackOptions } from '../../local/stack.ts';
import type { Bench } from './main.ts';

/** A started stack and what it printed. */
export interface BenchStack {
  readonly stack: LocalStack;
  /** Every line the stack logged (router, janitor, launcher). */
  readonly stackLines: string[];
  /** The workers' last lines (stdout and stderr), for a failed run's report. */
  readonly workerTail: string[];
}

/** Options of {@link startBenchStack}: the local stack's, plus how many worker lines to keep. */
export interface BenchStackOptions extends LocalStackOptions {
  /** @default 60 */
  readonly workerTailLines?: number;
}

/** Starts the local stack with the benches' defaults; `log` and `onWorkerLine` still see every line. */
export async function startBenchStack(o: BenchStackOptions): Promise<BenchStack> {
  const stackLines: string[] = [];
  const workerTail: string[] = [];
  const keep = o.workerTailLines ?? 60;
  const stack = await startLocalStack({
    quiet: true,
    routerWaitTimeSeconds: 1,
    workerStopGraceMs: 5_000,
    ...o,
    log: (line) => {
      stackLines.push(line);
      o.log?.(line);
    },
    onWorkerLine: (line) => {
      workerTail.push(line);
      if (workerTail.length > keep) workerTail.shift();
      o.onWorkerLine?.(line);
    },
  });
  return { stack, stackLines, workerTail };
}

/** Runs `fn` on the stack and stops it afterwards; on a failure, prints the workers' last lines first. */
export async function withStack<T>(s: BenchStack, bench: Bench, fn: (stack: LocalStack) => Promise<T>): Promise<T> {
  try {
    return await fn(s.stack);
  } catch (e) {
    bench.say(`run failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    bench.say('worker output (last lines):');
    for (const l of s.workerTail) bench.say(`  ${l}`);
    throw e;
  } finally {
    bench.say(`${bench.clock()}  stopping the stack...`);
    await s.stack.stop();
  }
}

/** The stack's log lines that mention an error or a failure. */
export function errorLines(lines: readonly string[]): string[] {
  return lines.filter((l) => /error|fail/i.test(l));
}
