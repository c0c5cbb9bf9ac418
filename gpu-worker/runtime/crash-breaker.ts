/**
 * The crash-loop breaker's decisions (decision 28), pure. A frame whose processing kills
 * the process (out of memory on a huge image, a native crash in the decoder or the model)
 * would otherwise kill every successor too: its message is already deleted once it is
 * buffered, so redrive cannot stop the loop, and each successor's mixed round takes the
 * slot's other videos down with it.
 *
 * The evidence rides on writes that happen anyway (core/checkpoint.ts `stall`): an
 * adoption counts, a commit of frames clears. From the adopted checkpoint:
 * - `normal`: nothing suspicious (the normal path, which pays nothing);
 * - `isolate`: adopted twice without progress (an owner adopted it and died): the video
 *   runs alone, one frame per round, after the other videos' round has committed, each
 *   frame announced by a marker commit (`trying`);
 * - `park`: a process died while running that frame alone: it is recorded `failed` with
 *   reason `crashed-worker` instead of being run again.
 */
import type { StallEvidence } from '../../core/checkpoint.ts';
import type { SequencedStep } from '../../core/sequencer.ts';

/** Adoptions without progress from which a video is run isolated. */
export const SUSPECT_ADOPTIONS = 2;
/** Deaths while running the marked frame alone from which it is parked. */
export const PARK_AFTER_TRIES = 1;
/** The failure reason of a parked poison frame. */
export const CRASHED_WORKER_REASON = 'crashed-worker';

export type BreakerVerdict = 'normal' | 'isolate' | { readonly park: number };

/** What the adopted checkpoint's stall evidence says about a video. */
export function breakerVerdict(stall: StallEvidence | undefined): BreakerVerdict {
  if (!stall) return 'normal';
  if (stall.trying !== undefined && (stall.tries ?? 0) >= PARK_AFTER_TRIES) return { park: stall.trying };
  return stall.adoptions >= SUSPECT_ADOPTIONS ? 'isolate' : 'normal';
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

/** The marker's evidence: what was stored, with the frame about to run alone and no deaths yet. */
export function markerStall(stored: StallEvidence | undefined, frame: number): StallEvidence {
  return { adoptions: stored?.adoptions ?? 0, trying: frame };
}

/**
 * Whether an isolated video may go back to normal rounds. Every frame a dead predecessor
 * was running is back in this process by then: buffered ones came with the checkpoint,
 * and the others reappear in the queue within one visibility timeout of its death (which
 * precedes this adoption). So once that long has passed since the adoption, and nothing
 * of the video is waiting to run, each of them has been run alone (or parked).
 */
export function mayLeaveIsolation(input: {
  readonly isolatedSinceMs: number;
  readonly nowMs: number;
  readonly redeliveryMs: number;
  readonly pending: boolean;
}): boolean {
  return !input.pending && input.nowMs - input.isolatedSinceMs >= input.redeliveryMs;
}
