/**
 * Per-video reorder buffer with a bounded wait: frames go in in any order, come out
 * in frame-number order, and a frame that never arrives becomes a gap after
 * `reorderWaitMs` instead of blocking the video forever.
 *
 * The buffer holds only references (S3 keys), never image bytes: the worker deletes
 * the SQS messages of buffered frames (an SQS FIFO group is blocked while any of its
 * messages is in flight, so holding them would deadlock the group), and the buffer is
 * part of the checkpoint, so a new owner re-fetches the frames from S3.
 */

/** A frame known to exist in S3 but not yet processed. */
export interface FrameRef {
  readonly frame: number;
  readonly bucket: string;
  readonly key: string;
  readonly sizeBytes: number;
}

/** Serialisable sequencer state; lives inside the video checkpoint. */
export interface SequencerState {
  /** Frame number the video starts at (`firstFrameNumber` when the video was first seen). */
  firstFrame: number;
  /** Next frame the tracker expects. */
  nextFrame: number;
  /** Since when `nextFrame` has been missing while something later is known (epoch ms). */
  waitingSinceMs: number | null;
  /** Buffered frames, ascending by frame number, no duplicates. */
  buffered: FrameRef[];
  /** Last frame number, from the end-of-stream marker. */
  endFrame: number | null;
}

export type OfferResult = 'accepted' | 'duplicate' | 'after-end' | 'before-first';

export type SequencedStep =
  | { readonly type: 'frame'; readonly ref: FrameRef }
  /** Frames `frame`..`throughFrame` never arrived within the wait. */
  | { readonly type: 'gap'; readonly frame: number; readonly throughFrame: number; readonly reason: 'missing-frame' }
  | { readonly type: 'reject'; readonly ref: FrameRef; readonly reason: 'after-end-of-stream' | 'before-first-frame' };

export interface SequencerOptions {
  readonly reorderWaitMs: number;
  readonly reorderBufferFrames: number;
  /** Where every video starts (0 or 1 by convention). Known up front, so no start-up wait. */
  readonly firstFrameNumber: number;
}

export function emptySequencerState(firstFrameNumber = 0): SequencerState {
  return { firstFrame: firstFrameNumber, nextFrame: firstFrameNumber, waitingSinceMs: null, buffered: [], endFrame: null };
}

export class VideoSequencer {
  private readonly state: SequencerState;
  private readonly options: SequencerOptions;

  constructor(options: SequencerOptions, state: SequencerState = emptySequencerState(options.firstFrameNumber)) {
    this.options = options;
    this.state = structuredClone(state);
  }

  /**
   * Restarts the wait for a missing frame (after a change of owner: while nobody owned
   * the video its frames were queueing, not lost), optionally `extraMs` longer than usual.
   */
  restartWait(nowMs: number, extraMs = 0): void {
    if (this.state.waitingSinceMs !== null) this.state.waitingSinceMs = nowMs + extraMs;
  }

  /** A deep copy of the state, for the checkpoint. */
  snapshot(): SequencerState {
    return structuredClone(this.state);
  }

  get nextFrame(): number {
    return this.state.nextFrame;
  }

  get endFrame(): number | null {
    return this.state.endFrame;
  }

  get bufferedCount(): number {
    return this.state.buffered.length;
  }

  /**
   * Offers a frame. `duplicate` means it was already processed, gapped or buffered
   * (a duplicate notification or a redelivery) and must change nothing.
   */
  offer(ref: FrameRef, _nowMs: number): OfferResult {
    const s = this.state;
    if (ref.frame < s.firstFrame) return 'before-first';
    if (ref.frame < s.nextFrame) return 'duplicate';
    if (s.buffered.some((b) => b.frame === ref.frame)) return 'duplicate';
    if (s.endFrame !== null && ref.frame > s.endFrame) return 'after-end';
    const at = s.buffered.findIndex((b) => b.frame > ref.frame);
    if (at === -1) s.buffered.push(ref);
    else s.buffered.splice(at, 0, ref);
    return 'accepted';
  }

  /** Records the end-of-stream marker. Frames already buffered past it are rejected by the next {@link take}. */
  setEnd(endFrame: number): void {
    this.state.endFrame = endFrame;
  }

  /** True once every frame up to the end marker has been emitted. */
  isComplete(): boolean {
    const s = this.state;
    return s.endFrame !== null && s.nextFrame > s.endFrame && s.buffered.length === 0;
  }

  /** True while frames are buffered or known to be outstanding. */
  hasPending(): boolean {
    const s = this.state;
    if (s.buffered.length > 0) return true;
    return s.endFrame !== null && s.nextFrame <= s.endFrame;
  }

  /** When a pending wait runs out (epoch ms), so the caller can poll no later than that. */
  nextDeadlineMs(): number | null {
    const s = this.state;
    return s.waitingSinceMs === null ? null : s.waitingSinceMs + this.options.reorderWaitMs;
  }

  /**
   * Emits everything that can go to the tracker now, in order: frames that are
   * next in line, gaps whose wait ran out, and frames beyond the end marker.
   */
  /**
   * `mayGap: false` defers gap decisions: the caller has just received frames of this
   * video, so the missing one may be right behind them in the queue. A full buffer
   * forces gaps regardless, which bounds the deferral.
   */
  take(nowMs: number, maxWeight = Infinity, weightOf: (step: SequencedStep) => number = () => 1, mayGap = true): SequencedStep[] {
    const s = this.state;
    const steps: SequencedStep[] = [];
    let weight = 0;
    // Stops before a step that would exceed the budget (but always allows one step).
    const fits = (step: SequencedStep) => {
      const w = weightOf(step);
      if (steps.length > 0 && weight + w > maxWeight) return false;
      weight += w;
      return true;
    };
    if (s.endFrame !== null) {
      const end = s.endFrame;
      for (const ref of s.buffered.filter((b) => b.frame > end)) {
        steps.push({ type: 'reject', ref, reason: 'after-end-of-stream' });
      }
      s.buffered = s.buffered.filter((b) => b.frame <= end);
    }
    for (;;) {
      const next: number = s.nextFrame;
      if (s.endFrame !== null && next > s.endFrame) break;
      const head = s.buffered[0];
      if (head && head.frame === next) {
        const step: SequencedStep = { type: 'frame', ref: head };
        if (!fits(step)) break;
        steps.push(step);
        s.buffered.shift();
        s.nextFrame = next + 1;
        s.waitingSinceMs = null;
        continue;
      }
      const outstanding = head !== undefined || (s.endFrame !== null && next <= s.endFrame);
      if (!outstanding) break;
      if (s.waitingSinceMs === null) s.waitingSinceMs = nowMs;
      const overflow = s.buffered.length >= this.options.reorderBufferFrames;
      if (!overflow && (!mayGap || nowMs - s.waitingSinceMs < this.options.reorderWaitMs)) break;
      // The wait ran out: every missing frame up to the next known one is a gap.
      const upTo = head ? head.frame - 1 : (s.endFrame as number);
      const gap: SequencedStep = { type: 'gap', frame: next, throughFrame: upTo, reason: 'missing-frame' };
      if (!fits(gap)) break;
      steps.push(gap);
      s.nextFrame = upTo + 1;
      s.waitingSinceMs = head ? null : nowMs;
    }
    return steps;
  }
}
