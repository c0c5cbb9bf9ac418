/**
 * Per-video ordering with a watermark: frames go in in any order and come out in
 * frame-number order; a frame that is really missing becomes a gap, decided per frame;
 * a frame that turns up after its number was passed is processed as `late`.
 *
 * The rule (docs/decisions.md, "Waiting may delay a frame, never discard it"):
 *
 * - **Evidence, then confirmation.** The missing frame `m` (= `nextFrame`) is *overdue*
 *   once the stream has demonstrably moved past it for `reorderWaitMs`: frames after it
 *   have started arriving (at least {@link SUPPORT_FRAMES} known frames within
 *   {@link SUPPORT_WINDOW_FRAMES} of the next known one: one stray frame far ahead is not
 *   evidence), or the video has been quiet for {@link QUIET_WAITS} × `reorderWaitMs`
 *   with frames outstanding ({@link STRAY_QUIET_WAITS} × when all that is outstanding is
 *   one lone frame far ahead, with no end marker), or the reorder buffer is full. Bounded out-of-orderness, as
 *   in Flink's and Beam's watermarks: the watermark passes `m` at that deadline.
 * - An overdue frame becomes a gap only after an S3 listing made *after* its deadline
 *   says its object does not exist: S3 LIST is strongly consistent, notifications are
 *   only hints. A listed frame is processed in order, from the listing.
 * - **Late is not lost.** A frame below `nextFrame` (gapped, or below an automatically
 *   chosen start) is processed when it comes, as `late`; the caller tells late from
 *   duplicate by the frame's record in the results table, the source of truth.
 * - **No start convention.** Unless `firstFrameNumber` is set, a video starts at the
 *   lowest frame that exists for it: decided `reorderWaitMs` after its first frame is
 *   seen (at once when that frame is 0), from the buffer and a listing.
 *
 * The state holds only references (S3 keys), never image bytes, and is part of the
 * checkpoint: the worker deletes the messages of buffered frames (an SQS FIFO group is
 * blocked while any of its messages is in flight), and a new owner re-fetches from S3.
 */

/** A frame known to exist in S3 but not yet processed. */
export interface FrameRef {
  readonly frame: number;
  readonly bucket: string;
  readonly key: string;
  readonly sizeBytes: number;
}

/** A frame known to exist, with when it became known (notification or listing), epoch ms. */
export interface KnownFrame extends FrameRef {
  readonly seenAtMs: number;
}

/** A late frame waiting to be processed, and whether its record replaces a gap. */
export interface LateFrame extends FrameRef {
  readonly replacesGap: boolean;
}

/** Serialisable sequencer state; lives inside the video checkpoint. */
export interface SequencerState {
  /** Frame number the video starts at; null while the automatic start is undecided. */
  firstFrame: number | null;
  /** When the first frame of the video became known (automatic start), epoch ms. */
  firstSeenAtMs: number | null;
  /** Next frame the tracker expects (meaningless while `firstFrame` is null). */
  nextFrame: number;
  /** Known frames at or after `nextFrame`, ascending, no duplicates. */
  buffered: KnownFrame[];
  /** Late frames to process (below `nextFrame`), ascending, no duplicates. */
  late: LateFrame[];
  /** Last frame number, from the end-of-stream marker. */
  endFrame: number | null;
  /** When a frame of this video last became known, epoch ms. */
  lastArrivalMs: number | null;
  /** The latest S3 listing: frames `from..through` did not exist at `atMs`. */
  absent: { from: number; through: number; atMs: number } | null;
  /** When the latest listing was made (rate limit), epoch ms. */
  listedAtMs: number | null;
}

export type OfferResult =
  | 'accepted'
  | 'duplicate'
  /** Below `nextFrame` (or the chosen start): late or a duplicate; the record decides (see {@link VideoSequencer.addLate}). */
  | 'below'
  /** Beyond the end marker; rejected unless it already has a record. */
  | 'after-end'
  /** Below an explicitly configured `firstFrameNumber`; rejected unless it already has a record. */
  | 'before-first';

export type SequencedStep =
  | { readonly type: 'frame'; readonly ref: FrameRef }
  | { readonly type: 'late'; readonly ref: LateFrame }
  /** Frame `frame` does not exist: the watermark passed it and a listing confirmed it. */
  | { readonly type: 'gap'; readonly frame: number; readonly reason: 'missing-frame' }
  | { readonly type: 'reject'; readonly ref: FrameRef; readonly reason: 'after-end-of-stream' | 'before-first-frame' };

export interface SequencerOptions {
  readonly reorderWaitMs: number;
  readonly reorderBufferFrames: number;
  /** Where every video starts; a negative value means automatic (the lowest frame that exists). */
  readonly firstFrameNumber: number;
}

/** Known frames needed near the next known frame before the frames below it count as overdue. */
export const SUPPORT_FRAMES = 2;
/** How far above the next known frame supporting frames may lie. */
export const SUPPORT_WINDOW_FRAMES = 8;
/** A video quiet for this many reorder waits, with frames outstanding, makes its missing frame overdue. */
export const QUIET_WAITS = 2;
/**
 * The same, when the only evidence is frames far ahead without support (a stray) and no
 * end marker: a pause of the uploader must not turn everything below a stray into gaps
 * (60 s at the default wait). A stray with nothing after it is still settled, not kept.
 */
export const STRAY_QUIET_WAITS = 12;
/** Least time between two listings of one video, ms. */
export const MIN_LISTING_INTERVAL_MS = 1_000;

/** A request to list the video's objects from `fromFrame` on. */
export interface ListingRequest {
  readonly fromFrame: number;
  readonly why: 'start' | 'overdue';
}

export function emptySequencerState(firstFrameNumber = -1): SequencerState {
  const explicit = firstFrameNumber >= 0;
  return {
    firstFrame: explicit ? firstFrameNumber : null,
    firstSeenAtMs: null,
    nextFrame: explicit ? firstFrameNumber : 0,
    buffered: [],
    late: [],
    endFrame: null,
    lastArrivalMs: null,
    absent: null,
    listedAtMs: null,
  };
}

/** Fills fields a checkpoint written by an older version lacks. */
export function upgradeSequencerState(s: Partial<SequencerState> & Pick<SequencerState, 'nextFrame'>): SequencerState {
  return {
    firstFrame: s.firstFrame ?? null,
    firstSeenAtMs: s.firstSeenAtMs ?? null,
    nextFrame: s.nextFrame,
    buffered: (s.buffered ?? []).map((b) => ({ ...b, seenAtMs: b.seenAtMs ?? 0 })),
    late: s.late ?? [],
    endFrame: s.endFrame ?? null,
    lastArrivalMs: s.lastArrivalMs ?? null,
    absent: s.absent ?? null,
    listedAtMs: s.listedAtMs ?? null,
  };
}

export class VideoSequencer {
  private readonly state: SequencerState;
  private readonly options: SequencerOptions;

  constructor(options: SequencerOptions, state: SequencerState = emptySequencerState(options.firstFrameNumber)) {
    this.options = options;
    this.state = structuredClone(state);
  }

  /** A deep copy of the state, for the checkpoint. */
  snapshot(): SequencerState {
    return structuredClone(this.state);
  }

  get nextFrame(): number {
    return this.state.nextFrame;
  }

  get firstFrame(): number | null {
    return this.state.firstFrame;
  }

  get endFrame(): number | null {
    return this.state.endFrame;
  }

  get bufferedCount(): number {
    return this.state.buffered.length;
  }

  /**
   * Offers a frame. `duplicate` means it is already buffered or queued as late (a
   * duplicate notification or a redelivery) and must change nothing.
   */
  offer(ref: FrameRef, nowMs: number): OfferResult {
    const s = this.state;
    if (s.late.some((l) => l.frame === ref.frame)) return 'duplicate';
    if (s.buffered.some((b) => b.frame === ref.frame)) return 'duplicate';
    if (s.firstFrame !== null) {
      if (ref.frame < s.firstFrame && this.options.firstFrameNumber >= 0) return 'before-first';
      if (ref.frame < s.nextFrame) return 'below';
    }
    if (s.endFrame !== null && ref.frame > s.endFrame) return 'after-end';
    this.insert({ ...ref, seenAtMs: nowMs });
    s.lastArrivalMs = nowMs;
    s.firstSeenAtMs ??= nowMs;
    return 'accepted';
  }

  /**
   * Queues a frame that {@link offer} called `below` and that has no `ok`, `late` or
   * `failed` record: it is processed out of line, without touching the tracker.
   */
  addLate(ref: FrameRef, replacesGap: boolean): void {
    const s = this.state;
    if (s.late.some((l) => l.frame === ref.frame)) return;
    const at = s.late.findIndex((l) => l.frame > ref.frame);
    const entry: LateFrame = { frame: ref.frame, bucket: ref.bucket, key: ref.key, sizeBytes: ref.sizeBytes, replacesGap };
    if (at === -1) s.late.push(entry);
    else s.late.splice(at, 0, entry);
  }

  /** Records the end-of-stream marker. Buffered frames past it are rejected by the next {@link take}. */
  setEnd(endFrame: number): void {
    this.state.endFrame = endFrame;
  }

  /** True once every frame from the start up to the end marker has been emitted. */
  isComplete(): boolean {
    const s = this.state;
    return s.firstFrame !== null && s.endFrame !== null && s.nextFrame > s.endFrame && s.buffered.length === 0 && s.late.length === 0;
  }

  /** True while frames are buffered, late, undecided, or known to be outstanding. */
  hasPending(): boolean {
    const s = this.state;
    if (s.buffered.length > 0 || s.late.length > 0) return true;
    return s.firstFrame !== null && s.endFrame !== null && s.nextFrame <= s.endFrame;
  }

  /**
   * The listing the caller should make before the next {@link take} can decide, or
   * undefined: when the automatic start is due, or when the missing frame is overdue
   * and no listing made since its deadline covers it.
   */
  listingNeeded(nowMs: number): ListingRequest | undefined {
    const s = this.state;
    if (s.listedAtMs !== null && nowMs - s.listedAtMs < MIN_LISTING_INTERVAL_MS) return undefined;
    if (s.firstFrame === null) {
      if (s.buffered[0]?.frame === 0) return undefined;
      const due = this.startDueMs();
      if (due === null || nowMs < due) return undefined;
      return s.listedAtMs !== null && s.listedAtMs >= due ? undefined : { fromFrame: 0, why: 'start' };
    }
    const deadline = this.overdueAtMs();
    if (deadline === null || nowMs < deadline) return undefined;
    if (this.confirmedAbsent(s.nextFrame, deadline)) return undefined;
    return { fromFrame: s.nextFrame, why: 'overdue' };
  }

  /**
   * Learns what an S3 listing from `fromFrame` found: the frames that exist there (in any
   * order; may include frames already known or processed). `complete` is false when the
   * listing stopped early (a page limit): then frames above the last one listed are unknown.
   */
  learnListing(fromFrame: number, listed: readonly FrameRef[], complete: boolean, nowMs: number): void {
    const s = this.state;
    s.listedAtMs = nowMs;
    const existing = listed.filter((r) => r.frame >= fromFrame).sort((a, b) => a.frame - b.frame);
    if (s.firstFrame === null) {
      const lowest = Math.min(existing[0]?.frame ?? Infinity, s.buffered[0]?.frame ?? Infinity);
      if (lowest === Infinity) return;
      s.firstFrame = lowest;
      s.nextFrame = lowest;
    }
    // A listing fills holes: frames below the highest one already known (or up to the end
    // marker) whose notifications have not come. Frames beyond are left to their own
    // notifications, which are on their way; taking them here would make each of those a
    // duplicate to tell apart later. Never more than the reorder buffer holds.
    const reach = Math.min(
      s.nextFrame + this.options.reorderBufferFrames - 1,
      Math.max(s.buffered.at(-1)?.frame ?? s.nextFrame, s.endFrame ?? -Infinity, s.nextFrame),
    );
    for (const r of existing) {
      if (r.frame < s.nextFrame || r.frame > reach) continue;
      if (s.endFrame !== null && r.frame > s.endFrame) continue;
      if (s.buffered.some((b) => b.frame === r.frame)) continue;
      this.insert({ frame: r.frame, bucket: r.bucket, key: r.key, sizeBytes: r.sizeBytes, seenAtMs: nowMs });
    }
    const firstExisting = existing.find((r) => r.frame >= fromFrame)?.frame;
    const lastListed = existing.at(-1)?.frame;
    const through = firstExisting !== undefined ? firstExisting - 1 : complete ? Number.MAX_SAFE_INTEGER : (lastListed ?? fromFrame - 1);
    s.absent = through >= fromFrame ? { from: fromFrame, through, atMs: nowMs } : null;
  }

  /**
   * When the next decision may become possible (epoch ms), so the caller polls no later
   * than that; undefined when nothing waits on time.
   */
  nextDeadlineMs(): number | undefined {
    const s = this.state;
    if (s.firstFrame === null) return this.startDueMs() ?? undefined;
    if (s.late.length > 0) return 0;
    const head = s.buffered[0];
    if (head && head.frame === s.nextFrame) return 0;
    const overdue = this.overdueAtMs();
    if (overdue === null) return undefined;
    return Math.max(overdue, s.listedAtMs !== null ? s.listedAtMs + MIN_LISTING_INTERVAL_MS : 0);
  }

  /**
   * Emits what can go on now: late frames (out of line), then frames next in order,
   * gaps the watermark passed and a listing confirmed, and frames beyond the end marker.
   * Stops before a step that would exceed `maxSteps` (one step always fits).
   */
  take(nowMs: number, maxSteps = Infinity): SequencedStep[] {
    const s = this.state;
    const steps: SequencedStep[] = [];
    const room = () => steps.length === 0 || steps.length < maxSteps;
    while (s.late.length > 0 && room()) steps.push({ type: 'late', ref: s.late.shift()! });
    if (s.firstFrame === null && s.buffered[0]?.frame === 0) {
      // Nothing can lie below frame 0: start at once, no listing needed.
      s.firstFrame = 0;
      s.nextFrame = 0;
    }
    if (s.firstFrame === null) return steps;
    if (s.endFrame !== null) {
      const end = s.endFrame;
      while (room()) {
        const beyond = s.buffered.findIndex((b) => b.frame > end);
        if (beyond === -1) break;
        const [ref] = s.buffered.splice(beyond, 1);
        steps.push({ type: 'reject', ref: plainRef(ref!), reason: 'after-end-of-stream' });
      }
      if (s.buffered.some((b) => b.frame > end)) return steps;
    }
    while (room()) {
      const next = s.nextFrame;
      if (s.endFrame !== null && next > s.endFrame) break;
      const head = s.buffered[0];
      if (head && head.frame === next) {
        steps.push({ type: 'frame', ref: plainRef(head) });
        s.buffered.shift();
        s.nextFrame = next + 1;
        continue;
      }
      const deadline = this.overdueAtMs();
      if (deadline === null || nowMs < deadline || !this.confirmedAbsent(next, deadline)) break;
      steps.push({ type: 'gap', frame: next, reason: 'missing-frame' });
      s.nextFrame = next + 1;
    }
    return steps;
  }

  // ------------------------------------------------------------------ the watermark

  /** When the automatic start may be decided: a wait after the first frame, or at once for frame 0. */
  private startDueMs(): number | null {
    const s = this.state;
    if (s.firstSeenAtMs === null) return null;
    if (s.buffered[0]?.frame === 0) return s.firstSeenAtMs;
    return s.firstSeenAtMs + this.options.reorderWaitMs;
  }

  /**
   * When the watermark passes the missing frame `nextFrame` (epoch ms), or null while
   * nothing says it should exist yet. The earliest of: support by frames after it,
   * quiet with frames outstanding, and a full buffer.
   */
  private overdueAtMs(): number | null {
    const s = this.state;
    const next = s.nextFrame;
    const head = s.buffered[0];
    if (head && head.frame === next) return null;
    const outstanding = head !== undefined || (s.endFrame !== null && next <= s.endFrame);
    if (!outstanding) return null;
    const wait = this.options.reorderWaitMs;
    const candidates: number[] = [];
    let strayOnly = false;
    if (head) {
      const windowEnd = head.frame + SUPPORT_WINDOW_FRAMES;
      const support = s.buffered.filter((b) => b.frame < windowEnd).map((b) => b.seenAtMs).sort((a, b) => a - b);
      const possible = s.endFrame !== null ? Math.min(SUPPORT_FRAMES, s.endFrame - head.frame + 1) : SUPPORT_FRAMES;
      if (support.length >= possible) candidates.push(Math.max(support[0]! + wait, support[possible - 1]!));
      else strayOnly = s.endFrame === null && head.frame - next >= SUPPORT_WINDOW_FRAMES;
      if (s.buffered.length >= this.options.reorderBufferFrames) {
        candidates.push(s.buffered.map((b) => b.seenAtMs).sort((a, b) => a - b)[this.options.reorderBufferFrames - 1]!);
      }
    }
    if (s.lastArrivalMs !== null) candidates.push(s.lastArrivalMs + (strayOnly ? STRAY_QUIET_WAITS : QUIET_WAITS) * wait);
    return candidates.length > 0 ? Math.min(...candidates) : null;
  }

  /** Whether a listing made at or after `sinceMs` found no object for `frame`. */
  private confirmedAbsent(frame: number, sinceMs: number): boolean {
    const a = this.state.absent;
    return a !== null && a.atMs >= sinceMs && frame >= a.from && frame <= a.through;
  }

  private insert(ref: KnownFrame): void {
    const b = this.state.buffered;
    const at = b.findIndex((x) => x.frame > ref.frame);
    if (at === -1) b.push(ref);
    else b.splice(at, 0, ref);
  }
}

function plainRef(r: FrameRef): FrameRef {
  return { frame: r.frame, bucket: r.bucket, key: r.key, sizeBytes: r.sizeBytes };
}
