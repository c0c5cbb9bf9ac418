/**
 * The watch loop: polls the pipeline until the run settles (every video done, nothing
 * new for a while, a cap after the last upload, a deadline, or an interrupt), handing
 * each poll to the scenario (progress lines, a timeline, a kill at the right moment);
 * and the kill helpers.
 */
import type { VideoSummaryItem } from '../../core/commit/results.ts';
import type { LocalStack } from '../../local/stack.ts';
import { sleep } from './main.ts';
import type { Uploads } from './uploader.ts';

/** How a run ended. */
export type Outcome = 'complete' | 'quiet' | 'cap' | 'timeout' | 'interrupted';

/** One poll of the pipeline. */
export interface Progress {
  /** Frames with a record so far. */
  readonly records: number;
  /** Whether every video is done (all summaries `complete`, or every frame recorded). */
  readonly done: boolean;
}

/** When a run stops waiting. */
export interface SettleRules {
  /** Between polls. */
  readonly everyMs: number;
  /** After the uploads: this long without a new record ends the run as `quiet`. */
  readonly quietMs?: number;
  /** After the uploads: this long ends the run as `cap`. */
  readonly capAfterUploadsMs?: number;
  /** Absolute time (ms since the epoch) that ends the run as `timeout`. */
  readonly deadlineMs?: number;
  readonly interrupted?: () => boolean;
}

/**
 * Polls until the run settles. `onPoll` runs after each poll, before the end is decided
 * (where a scenario prints, records a timeline or kills). Throws the uploads' error.
 */
export async function watchUntilSettled<P extends Progress>(
  uploads: Uploads,
  rules: SettleRules,
  poll: () => Promise<P>,
  onPoll: (p: P) => void | Promise<void> = () => {},
): Promise<{ outcome: Outcome; finishedMs: number }> {
  let lastRecords = -1;
  let lastChangeMs = Date.now();
  for (;;) {
    if (uploads.error() !== undefined) throw uploads.error();
    const p = await poll();
    if (p.records !== lastRecords) {
      lastRecords = p.records;
      lastChangeMs = Date.now();
    }
    await onPoll(p);
    const doneMs = uploads.doneMs();
    const now = Date.now();
    let outcome: Outcome | undefined;
    if (rules.interrupted?.()) outcome = 'interrupted';
    else if (doneMs !== undefined && p.done) outcome = 'complete';
    else if (doneMs !== undefined && rules.quietMs !== undefined && now - Math.max(lastChangeMs, doneMs) > rules.quietMs) outcome = 'quiet';
    else if (doneMs !== undefined && rules.capAfterUploadsMs !== undefined && now > doneMs + rules.capAfterUploadsMs) outcome = 'cap';
    else if (rules.deadlineMs !== undefined && now > rules.deadlineMs) outcome = 'timeout';
    if (outcome) return { outcome, finishedMs: Date.now() };
    await sleep(rules.everyMs);
  }
}

/** Progress from summaries: a throttled line every `everyMs`. */
export function every(everyMs: number): () => boolean {
  let last = 0;
  return () => {
    if (Date.now() - last < everyMs) return false;
    last = Date.now();
    return true;
  };
}

/** Unfinished videos by the worker their summary names, the worker holding most first. */
export function ownersBySummary(summaries: readonly (VideoSummaryItem | undefined)[]): [workerId: string, videoIds: string[]][] {
  const owners = new Map<string, string[]>();
  for (const s of summaries) if (s?.worker && s.status !== 'complete') owners.set(s.worker, [...(owners.get(s.worker) ?? []), s.videoId]);
  return busiestFirst(owners);
}

/** Workers with the videos they hold, most videos first. */
export function busiestFirst(held: ReadonlyMap<string, string[]>): [string, string[]][] {
  return [...held.entries()].sort((a, b) => b[1].length - a[1].length);
}

/** A signal sent to a worker. */
export interface Kill {
  readonly atMs: number;
  readonly workerId: string;
  readonly videos: string[];
  readonly slot?: number;
  readonly pid?: number;
}

/**
 * "Kill the busiest worker": SIGKILL to the first of `candidates` (busiest first) that is a
 * live worker, through `find` and `kill` (the stack's launcher by default, or a baseline
 * fleet). Undefined when none of them is alive.
 */
export function killBusiest(
  candidates: readonly (readonly [string, string[]])[],
  target: { find: (workerId: string) => { pid: number; slot?: number } | undefined; kill: (pid: number) => void },
): Kill | undefined {
  for (const [workerId, videos] of candidates) {
    const w = target.find(workerId);
    if (!w) continue;
    const atMs = Date.now();
    target.kill(w.pid);
    return { atMs, workerId, videos, pid: w.pid, ...(w.slot !== undefined ? { slot: w.slot } : {}) };
  }
  return undefined;
}

/** The local stack's live workers as a {@link killBusiest} target. */
export function stackWorkers(stack: LocalStack): Parameters<typeof killBusiest>[1] {
  return {
    find: (workerId) => stack.launcher.workers().find((x) => x.alive && x.workerId === workerId),
    kill: (pid) => stack.launcher.kill({ pid }, 'SIGKILL'),
  };
}
