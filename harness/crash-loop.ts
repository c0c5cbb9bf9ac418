/**
 * The crash-loop scenario (decision 28), shared by test/system/crash-loop.int.test.ts and
 * bench/crash-loop.ts: one slot, three cameras streaming, one frame whose processing kills
 * every worker (WORKER_CRASH_ON_KEY). Returns the figures: crashes before the frame was
 * parked, seconds from the first crash until the other videos committed again, which
 * successor of the crashed owner committed each other video's first record after the crash
 * (1 = the first successor, decisions 29 and 41), until the poison frame's record landed,
 * and the crash probe's deaths.
 */
import { frameKey } from '../core/ingest/keys.ts';
import type { WorkerInfo } from '../local/local-task-launcher.ts';
import { jpeg, put, results, summary, waitFor, type TestStack } from './pipeline.ts';

const FRAMES = 30;
// Named so that it is adopted, and so runs isolated, first: without the crash probe, the
// first successor then dies on it before any other video's turn (decision 29's limit).
const POISON = { video: 'cl-0poison', frame: 12 };
const OTHERS = ['cl-a', 'cl-b'];
const VIDEOS = [...OTHERS, POISON.video];

export const CRASH_LOOP = {
  FRAMES,
  POISON,
  OTHERS,
  VIDEOS,
  /**
   * One slot; every worker, and every crash probe's child, dies when its model is handed
   * the poison frame. `crashProbeDeaths: 0` turns the probe off (decision 29 alone).
   */
  stackOptions: (crashProbeDeaths?: number) => ({
    tunables: { slotCount: 1, ...(crashProbeDeaths !== undefined ? { crashProbeDeaths } : {}) },
    workerEnv: { STATS_PROCESSOR_DELAY_MS: '40', WORKER_CRASH_ON_KEY: frameKey(POISON.video, POISON.frame) },
  }),
} as const;

export interface CrashLoopFigures {
  readonly crashes: number;
  readonly othersResumedSeconds: number;
  /** Per other video: which successor of the first crashed worker committed its first record after the crash (1 = the first). */
  readonly othersResumedBySuccessor: Readonly<Record<string, number>>;
  readonly parkedAfterSeconds: number;
  /** Which successor of the first crashed worker committed the poison frame's record. */
  readonly parkedBySuccessor: number;
  /** Deaths of crash-probe children on the poison frame (decision 41). */
  readonly probeDeaths: number;
}


const crashed = (w: WorkerInfo) => !w.alive && (w.exitSignal === 'SIGKILL' || w.exitCode === 137);

/** Runs the scenario on a stack that is already up; returns the figures. */
export async function runCrashLoop(s: TestStack): Promise<CrashLoopFigures> {
  const body = await jpeg();
  // Three cameras streaming on one slot, interleaved, about 10 frames a second each.
  for (let f = 0; f < FRAMES; f++) {
    for (const v of VIDEOS) await put(s, frameKey(v, f), body);
    await new Promise((r) => setTimeout(r, 100));
  }
  for (const v of VIDEOS) await put(s, `frames/${v}/_end`, String(FRAMES - 1));
  for (const v of VIDEOS) await waitFor(`${v} complete`, async () => (await summary(s, v))?.status === 'complete', 240_000);
  const dead = s.launcher.workers().filter(crashed).sort((a, b) => a.exitedAtMs! - b.exitedAtMs!);
  const firstCrashMs = dead[0]!.exitedAtMs!;
  // One slot: its workers one after the other, in launch order; the first crashed one is generation 0.
  const launched = s.launcher.workers().sort((a, b) => a.startedAtMs - b.startedAtMs);
  const crashedAt = launched.findIndex((w) => w.workerId === dead[0]!.workerId);
  const successor = (workerId: string) => launched.findIndex((w) => w.workerId === workerId) - crashedAt;
  const othersResumedBySuccessor: Record<string, number> = {};
  let resumedMs = Infinity;
  for (const v of OTHERS) {
    const after = (await results(s, v)).filter((r) => r.committedAtMs > firstCrashMs).sort((a, b) => a.committedAtMs - b.committedAtMs);
    if (after[0]) othersResumedBySuccessor[v] = successor(after[0].worker);
    resumedMs = Math.min(resumedMs, after[0]?.committedAtMs ?? Infinity);
  }
  const parked = (await results(s, POISON.video)).find((r) => r.frame === POISON.frame)!;
  return {
    crashes: dead.length,
    othersResumedSeconds: (resumedMs - firstCrashMs) / 1000,
    othersResumedBySuccessor,
    parkedAfterSeconds: (parked.committedAtMs - firstCrashMs) / 1000,
    parkedBySuccessor: successor(parked.worker),
    probeDeaths: s.workerLines.filter((l) => l.includes('crash probe: the child process died')).length,
  };
}

