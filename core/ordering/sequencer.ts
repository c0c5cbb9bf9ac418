/**
 * Per-video ordering with a watermark: frames go in in any order and come out in
 * frame-number order; a frame that is really missing becomes a gap, decided per frame;
 * a frame that turns up after its number was passed is processed as `late`. The rule in
 * full is docs/decisions.md 12 (and 4 for the start, 24 for gap re-checks):
 *
 * - **Evidence, then confirmation.** The missing frame is overdue once the stream has
 *   moved past it for `reorderWaitMs` ({@link SUPPORT_FRAMES} known frames near the next
 *   one: a stray far ahead is not evidence), the video has been quiet for
 *   {@link QUIET_WAITS} (or {@link STRAY_QUIET_WAITS}) waits, or the buffer is full; it
 *   becomes a gap only after an S3 listing made after that deadline says it is absent.
 * - **Late is not lost.** A frame below `nextFrame` is processed as `late`; the caller
 *   tells late from duplicate by the frame's record, the source of truth.
 * - **No start convention.** Unless `firstFrameNumber` is set, a video starts at the lowest
 *   frame that exists, decided at first sight by one listing (core/ordering/sequencer-start.ts).
 * - **Gaps are re-checked** before completion and at idle release (core/ordering/gap-ranges.ts).
 *
 * The state holds only references (S3 keys), never image bytes, and is part of the
 * checkpoint: the worker deletes the messages of buffered frames (an SQS FIFO group is
 * blocked while any of its messages is in flight), and a new owner re-fetches from S3.
 */

import { holdsInstead } from '../ingest/segment-keys.ts';
import { addGap, advanceRecheck, gapKind, recheckSpan, removeGap, type GapRange } from './gap-ranges.ts';
import { startDueMs, startFromListing, startListing, startListingFailed } from './sequencer-start.ts';
import {
  emptySequencerState,
  MIN_LISTING_INTERVAL_MS,
  packSequencerState,
  upgradeSequencerState,
  plainRef,
  QUIET_WAITS,
  STRAY_QUIET_WAITS,
  SUPPORT_FRAMES,
  SUPPORT_WINDOW_FRAMES,
  type FrameRef,
  type GapRecheck,
  type KnownFrame,
  type LateFrame,
  type ListingLesson,
  type ListingRequest,
  type OfferResult,
  type SequencedStep,
  type SequencerOptions,
  type SequencerState,
} from './sequencer-state.ts';

export * from './sequencer-state.ts';

export class VideoSequencer {
  private readonly state: SequencerState;
  private readonly options: SequencerOptions;

  constructor(options: SequencerOptions, state: SequencerState = emptySequencerState(options.firstFrameNumber)) {
    this.options = options;
    // A checkpoint's state may be packed (runs of one segment's frames): unpack it.
    this.state = upgradeSequencerState(structuredClone(state));
  }

  /** A deep copy of the state. */
  snapshot(): SequencerState {
    return structuredClone(this.state);
  }

  /** The state as the checkpoint stores it: a copy with runs of one segment's frames packed (sequencer-state.ts). */
  checkpointState(): SequencerState {
    return packSequencerState(this.snapshot());
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

  /** The highest frame buffered, or null when none is. */
  get lastBufferedFrame(): number | null {
    return this.state.buffered.at(-1)?.frame ?? null;
  }

  get bufferedCount(): number {
    return this.state.buffered.length;
  }

  /** The buffered frames, ascending (a view, not a copy: for reading ahead, never to change). */
  get buffered(): readonly FrameRef[] {
    return this.state.buffered;
  }

  /**
   * Offers a frame. `duplicate` means it is already buffered or queued as late (a
   * duplicate notification or a redelivery) and must change nothing.
   */
  offer(ref: FrameRef, nowMs: number): OfferResult {
    const s = this.state;
    if (s.late.some((l) => l.frame === ref.frame)) return 'duplicate';
    const held = s.buffered.findIndex((b) => b.frame === ref.frame);
    if (held !== -1) {
      // Two objects cover this frame: the one that starts nearer below it holds it
      // (segment-keys.ts holdsInstead), whichever was offered first.
      const was = s.buffered[held]!;
      if (!holdsInstead(ref.key, was.key)) return 'duplicate';
      s.buffered[held] = { frame: ref.frame, bucket: ref.bucket, key: ref.key, sizeBytes: ref.sizeBytes, seenAtMs: was.seenAtMs };
      return 'accepted';
    }
    if (s.firstFrame !== null) {
      if (ref.frame < s.firstFrame && this.options.firstFrameNumber >= 0) return 'before-first';
      if (ref.frame < s.nextFrame) return 'below';
    }
    if (s.endFrame !== null && ref.frame > s.endFrame) return 'after-end';
    this.insert({ ...ref, seenAtMs: nowMs });
    s.lastArrivalMs = nowMs;
    // News since the last re-check: an object held back behind a gap may have come too.
    this.recheckDue();
    s.firstSeenAtMs ??= nowMs;
    return 'accepted';
  }

  /**
   * Queues a frame that {@link offer} called `below` and that has no `ok`, `late` or
   * `failed` record: it is processed out of line, without touching the tracker. A frame
   * at or above `nextFrame` (a state restored to before its gap) is buffered instead.
   */
  addLate(ref: FrameRef, replacesGap: boolean): void {
    const s = this.state;
    if (s.late.some((l) => l.frame === ref.frame)) return;
    if (s.buffered.some((b) => b.frame === ref.frame)) return;
    if (s.firstFrame !== null && ref.frame >= s.nextFrame) {
      // Not below the tracker (any more): a late frame replayed after a rollback onto a
      // state that never passed it (the gap it was late for did not land). It is next in
      // line, so it joins the buffer: one frame is never both emitted in order and late.
      this.insert({ frame: ref.frame, bucket: ref.bucket, key: ref.key, sizeBytes: ref.sizeBytes, seenAtMs: s.lastArrivalMs ?? 0 });
      return;
    }
    removeGap(s.gaps, ref.frame);
    const at = s.late.findIndex((l) => l.frame > ref.frame);
    const entry: LateFrame = { frame: ref.frame, bucket: ref.bucket, key: ref.key, sizeBytes: ref.sizeBytes, replacesGap };
    if (at === -1) s.late.push(entry);
    else s.late.splice(at, 0, entry);
  }

  /** Records the end-of-stream marker. Buffered frames past it are rejected by the next {@link take}. */
  setEnd(endFrame: number): void {
    this.state.endFrame = endFrame;
  }

  /** True once every frame from the start up to the end marker has been emitted, and the gaps re-checked. */
  isComplete(): boolean {
    const s = this.state;
    return (
      s.firstFrame !== null &&
      s.endFrame !== null &&
      s.nextFrame > s.endFrame &&
      s.buffered.length === 0 &&
      s.late.length === 0 &&
      this.gapsToRecheck() === undefined
    );
  }

  /** The recorded gaps (a copy), for logs and tests. */
  get gaps(): readonly GapRange[] {
    return structuredClone(this.state.gaps);
  }

  /**
   * What one listing must cover to re-check the gaps, or undefined when no re-check is
   * due. Due once gaps were recorded or frames arrived since the last re-check. The
   * sequencer asks for it by itself before the video completes ({@link listingNeeded},
   * `why: 'recheck'`); the worker asks here before it releases the video idle, lists
   * `listFrames(bucket, videoId, fromFrame, padWidth, pages, toFrame)` and passes the
   * result to {@link learnRecheck}.
   */
  gapsToRecheck(): GapRecheck | undefined {
    return recheckSpan(this.state.gaps, this.state.recheck);
  }

  /**
   * Learns a re-check listing (as {@link learnListing}): every listed frame recorded as gap
   * becomes a late step that replaces it, and the re-check is done as far as the listing
   * covered (`coveredThrough`, from `listFrames`).
   */
  learnRecheck(fromFrame: number, listed: readonly FrameRef[], coveredThrough: number, nowMs: number): ListingLesson {
    return this.learnListing(fromFrame, listed, coveredThrough, nowMs);
  }

  /** Drops a frame from the recorded gaps: its record, read by the caller, is not a gap. */
  forgetGap(frame: number): void {
    removeGap(this.state.gaps, frame);
  }

  /** True while frames are buffered, late, undecided, or known to be outstanding. */
  hasPending(): boolean {
    const s = this.state;
    if (s.buffered.length > 0 || s.late.length > 0) return true;
    return s.firstFrame !== null && s.endFrame !== null && s.nextFrame <= s.endFrame;
  }

  /**
   * The listing the caller should make before the next {@link take} can decide, or
   * undefined: at a video's first sight (the automatic start, `why: 'start'`, bounded by
   * `throughFrame` = the frame below the lowest known one), again `reorderWaitMs` later if
   * that one could not decide, or when the missing frame is overdue and no listing made
   * since its deadline covers it. A listing asked for here that fails is reported with
   * {@link listingFailed}.
   */
  listingNeeded(nowMs: number): ListingRequest | undefined {
    const s = this.state;
    const recheck = this.recheckAtEnd();
    if (recheck) {
      // The first listing of a re-check goes at once, so the round that reaches the end
      // commits the completion; one that has to go on is rate-limited like any other.
      const at = s.recheck!.atMs;
      if (at !== null && nowMs - at < MIN_LISTING_INTERVAL_MS) return undefined;
      return { fromFrame: recheck.fromFrame, why: 'recheck', throughFrame: recheck.toFrame };
    }
    if (s.listedAtMs !== null && nowMs - s.listedAtMs < MIN_LISTING_INTERVAL_MS) return undefined;
    if (s.firstFrame === null) return startListing(s, this.options, nowMs);
    const deadline = this.overdueAtMs();
    if (deadline === null || nowMs < deadline) return undefined;
    if (this.confirmedAbsent(s.nextFrame, deadline)) return undefined;
    return { fromFrame: s.nextFrame, why: 'overdue' };
  }

  /**
   * Learns what an S3 listing from `fromFrame` found: the frames that exist there (in any
   * order; may include frames already known or processed), and how far it proves that
   * nothing else exists: `coveredThrough` from `listFrames` (every existing frame from
   * `fromFrame` up to it was listed). A boolean is the older form (true: everything on;
   * false: up to the highest frame listed), which trusts the listing too far when keys are
   * wider than their pad or of mixed widths: pass `coveredThrough`.
   *
   * Listed frames recorded as gap become late steps that replace their gap; a re-check
   * is done as far as the listing covered.
   */
  learnListing(fromFrame: number, listed: readonly FrameRef[], coverage: number | boolean, nowMs: number): ListingLesson {
    const s = this.state;
    s.listedAtMs = nowMs;
    const existing = listed.filter((r) => r.frame >= fromFrame).sort((a, b) => a.frame - b.frame);
    const covered = typeof coverage === 'number' ? coverage : coverage ? Number.MAX_SAFE_INTEGER : (existing.at(-1)?.frame ?? fromFrame - 1);
    const lesson = this.learnGaps(fromFrame, existing, covered, nowMs);
    const nextBefore = s.firstFrame !== null ? s.nextFrame : fromFrame;
    if (s.firstFrame === null) {
      const start = startFromListing(s, this.options, fromFrame, existing[0]?.frame, covered, nowMs);
      if (start === null) return lesson;
      s.firstFrame = start;
      s.nextFrame = start;
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
    // Absence is about frames not yet passed (a re-check lists from below them), and only
    // as far as the listing covered.
    const absentFrom = Math.max(fromFrame, nextBefore);
    const firstExisting = existing.find((r) => r.frame >= absentFrom)?.frame;
    const through = Math.min(firstExisting !== undefined ? firstExisting - 1 : Number.MAX_SAFE_INTEGER, covered);
    s.absent = through >= absentFrom ? { from: absentFrom, through, atMs: nowMs } : null;
    return lesson;
  }

  /**
   * A listing asked for by {@link listingNeeded} failed. A start listing at first sight
   * that failed gives up deciding early: the start is then decided `reorderWaitMs` after
   * the first frame, as when it covered too little. Other listings are retried when the
   * caller's back-off allows (nothing to learn here).
   */
  listingFailed(nowMs: number): void {
    startListingFailed(this.state, nowMs);
  }

  /**
   * When the next decision may become possible (epoch ms), so the caller polls no later
   * than that; undefined when nothing waits on time.
   */
  nextDeadlineMs(): number | undefined {
    const s = this.state;
    if (s.firstFrame === null) return startDueMs(s, this.options) ?? undefined;
    if (s.late.length > 0) return 0;
    if (this.recheckAtEnd()) return s.recheck!.atMs === null ? 0 : s.recheck!.atMs + MIN_LISTING_INTERVAL_MS;
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
      // The step that completes the video waits for the re-check of its gaps.
      if (next === s.endFrame && this.gapsToRecheck() !== undefined) break;
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
      addGap(s.gaps, next);
      // The gap that completes the video was confirmed by a listing made with the end known,
      // after its own wait: a re-check now would ask S3 the same question again.
      if (next !== s.endFrame) this.recheckDue();
      s.nextFrame = next + 1;
    }
    return steps;
  }

  // ------------------------------------------------------------------ gap re-checks

  /** Marks a re-check due, from the first gap, unless one already is (it keeps its place). */
  private recheckDue(): void {
    const s = this.state;
    if (s.gaps.length > 0 && s.recheck === null) s.recheck = { fromFrame: 0, atMs: null };
  }

  /** The re-check to make before completing: due, with the end known and every frame up to it here, passed, or the last one. */
  private recheckAtEnd(): GapRecheck | undefined {
    const s = this.state;
    if (s.firstFrame === null || s.endFrame === null) return undefined;
    const recheck = this.gapsToRecheck();
    if (!recheck) return undefined;
    // Past the end, or only the completing step left (which waits for this re-check).
    if (s.nextFrame >= s.endFrame) return recheck;
    const upToEnd = s.buffered.filter((b) => b.frame <= s.endFrame!);
    return upToEnd.length === s.endFrame - s.nextFrame + 1 ? recheck : undefined;
  }

  /** Queues listed frames recorded as gap, and moves the re-check past what the listing covered. */
  private learnGaps(fromFrame: number, existing: readonly FrameRef[], covered: number, nowMs: number): ListingLesson {
    const s = this.state;
    let lateFrames = 0;
    const verify: FrameRef[] = [];
    for (const r of existing) {
      // Listed means it exists, covered or not; only absence needs the coverage.
      if (s.firstFrame !== null && r.frame >= s.nextFrame) continue;
      const kind = gapKind(s.gaps, r.frame);
      if (kind === 'exact') {
        this.addLate(r, true);
        lateFrames++;
      } else if (kind === 'mixed') verify.push(plainRef(r));
    }
    s.recheck = advanceRecheck(s.gaps, s.recheck, fromFrame, covered, nowMs);
    return { lateFrames, verify, recheckDone: this.gapsToRecheck() === undefined };
  }

  // ------------------------------------------------------------------ the watermark

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
