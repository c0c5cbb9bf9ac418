/**
 * The crash-loop breaker's decisions (decision 28), pure. A frame whose processing kills
 * the process (out of memory on a huge image, a native crash in the decoder or the model)
 * would otherwise kill every successor too: its message is already deleted once it is
 * buffered, so redrive cannot stop the loop, and each successor's mixed round takes the
 * slot's other videos down with it.
 *
 * The evidence rides on writes and reads that happen anyway (core/commit/checkpoint.ts `stall`):
 * an adoption counts, a commit of frames clears; the slot claim's answer says whether the
 * previous owner released the slot, and the adoption's read whom the video was taken from
 * (decision 29). From the adopted checkpoint and that:
 * - `normal`: nothing suspicious (the normal path, and any clean handover: drain, idle
 *   exit), which pays nothing;
 * - `isolate`: taken over from an owner that died (it never released the slot, and it
 *   held the video), or adopted twice without progress: the video runs alone, one frame
 *   per round, after the other videos' round has committed, each frame announced by a
 *   marker commit (`trying`);
 * - `park`: processes died twice while running that frame alone: it is recorded `failed`
 *   with reason `crashed-worker` instead of being run again.
 */
import type { StallEvidence } from '../../../core/commit/checkpoint.ts';
import type { SequencedStep } from '../../../core/ordering/sequencer.ts';

/** Adoptions without progress from which a video is run isolated. */
export const SUSPECT_ADOPTIONS = 2;
/**
 * Deaths while running the marked frame alone from which it is parked. Two, not one: every
 * takeover from a dead owner isolates its videos (decision 29), so one operator kill -9
 * landing while a successor runs an innocent frame alone must not park it; two deaths on
 * the same frame run alone, after a first death with it in flight, is the poison's
 * signature. Worst case 3 crashes: the owner (mixed round), two successors (alone).
 */
export const PARK_AFTER_TRIES = 2;
/** The failure reason of a parked poison frame. */
export const CRASHED_WORKER_REASON = 'crashed-worker';

export type BreakerVerdict = 'normal' | 'isolate' | { readonly park: number };

/**
 * How a video came to this worker (decision 29): taken from an owner that died
 * (`dead-owner`: this worker claimed its slot from an owner that never released it, and
 * the video's lease had an owner), handed over by a live owner (`clean`: the previous
 * owner released the slot: drain, idle exit), or from nobody (`unowned`: a new video, one
 * released idle, or one the janitor unpinned).
 */
export type Handover = 'dead-owner' | 'clean' | 'unowned';

/**
 * What the adopted checkpoint's stall evidence and the handover say about a video. Taken
 * from a dead owner, the video runs isolated from this first successor on: that owner may
 * have been running its frames when it died. A clean handover isolates nothing (nobody
 * died; its adoption was not counted) unless a marker with a death is stored. From nobody:
 * the count of adoptions without progress decides (decision 28).
 */
export function breakerVerdict(stall: StallEvidence | undefined, handover: Handover = 'unowned'): BreakerVerdict {
  if (stall?.trying !== undefined && (stall.tries ?? 0) >= PARK_AFTER_TRIES) return { park: stall.trying };
  if (handover === 'dead-owner') return 'isolate';
  if (handover === 'clean') return stall?.trying !== undefined && (stall.tries ?? 0) >= 1 ? 'isolate' : 'normal';
  if (!stall) return 'normal';
  return stall.adoptions >= SUSPECT_ADOPTIONS ? 'isolate' : 'normal';
}

/**
 * How an adopted video came (see {@link Handover}): from the slot claim's answer
 * (`slotTakenOver`: the previous slot owner never released it) and the adoption's read
 * (`adoptedFrom`: the video lease's previous owner).
 */
export function handoverOf(input: { readonly slotTakenOver: boolean; readonly adoptedFrom: string | undefined; readonly self: string }): Handover {
  if (input.adoptedFrom === undefined || input.adoptedFrom === input.self) return 'unowned';
  return input.slotTakenOver ? 'dead-owner' : 'clean';
}

/**
 * The order isolated videos run in within one pass: least suspect first (fewest deaths
 * while running a frame alone, then fewest adoptions without progress), ties in the given
 * order. A video a process already died on runs after the others, so their frames commit
 * before it can take the process down again. Stable; returns a new array.
 */
export function isolationOrder<T extends { readonly suspicion: StallEvidence | undefined }>(videos: readonly T[]): T[] {
  const rank = (s: StallEvidence | undefined): [number, number] => [s?.trying !== undefined ? (s.tries ?? 0) : 0, s?.adoptions ?? 0];
  return videos
    .map((v, i) => ({ v, i, r: rank(v.suspicion) }))
    .sort((a, b) => a.r[0] - b.r[0] || a.r[1] - b.r[1] || a.i - b.i)
    .map((x) => x.v);
}

/**
 * How many of the taken steps an isolated round keeps: everything up to and including
 * the first step that runs a frame (gaps and rejects run nothing), so at most one frame
 * runs. The caller takes steps one at a time; this says whether to stop.
 */
export function isolatedRoundFull(steps: readonly SequencedStep[]): boolean {
  return steps.some((s) => s.type === 'frame' || s.type === 'late');
}

/** The frame an isolated plan runs (the marker's `trying`), or undefined when it runs none or only parks. */
export function frameToTry(steps: readonly SequencedStep[], parked: ReadonlyMap<number, string>): number | undefined {
  const run = steps.find((s) => s.type === 'frame' || s.type === 'late');
  if (!run) return undefined;
  return parked.has(run.ref.frame) ? undefined : run.ref.frame;
}

/**
 * The marker's evidence: what was stored, with the frame about to run alone and the token
 * of the tenure about to run it (only that tenure's death counts as a try: core/commit/
 * checkpoint.ts `stallAfterAdoption`). The deaths already counted on that same frame stay
 * (a second try must reach {@link PARK_AFTER_TRIES}); a different frame starts with none.
 */
export function markerStall(stored: StallEvidence | undefined, frame: number, token: number): StallEvidence {
  const tries = stored?.trying === frame ? (stored.tries ?? 0) : 0;
  return { adoptions: stored?.adoptions ?? 0, trying: frame, ...(tries > 0 ? { tries } : {}), tryingToken: token };
}

/** What {@link isolationStep} decides: stay isolated, leave, or close the window at a frame. */
export type IsolationStep = 'stay' | 'leave' | { readonly through: number };

/**
 * Whether an isolated video may go back to normal rounds. Every frame a dead predecessor
 * may have been running is back in this process one redelivery window (the slot queue's
 * visibility timeout) after its death, which precedes this adoption: buffered ones came
 * with the checkpoint, the others reappear in the queue. So the frames to run alone are
 * those known when the window closes: the step then returns `through` (the highest frame
 * waiting, which the caller keeps), and the video leaves once nothing at or below it waits.
 * Frames that arrive later were never the predecessor's: a video that keeps streaming
 * faster than it runs alone still leaves (waiting for "nothing pending" would keep it
 * isolated for as long as it streams).
 *
 * `through` is the kept watermark (undefined until the window closed); `lowestPending` and
 * `highestPending` the frame numbers waiting to run (buffered or late), undefined when none.
 */
export function isolationStep(input: {
  readonly isolatedSinceMs: number;
  readonly nowMs: number;
  readonly redeliveryMs: number;
  readonly through: number | undefined;
  readonly lowestPending: number | undefined;
  readonly highestPending: number | undefined;
}): IsolationStep {
  if (input.nowMs - input.isolatedSinceMs < input.redeliveryMs) return 'stay';
  const through = input.through ?? input.highestPending;
  if (through === undefined || input.lowestPending === undefined || input.lowestPending > through) return 'leave';
  return input.through === undefined ? { through } : 'stay';
}
