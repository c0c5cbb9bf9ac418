/**
 * One owned video's state between commits, and every decision about it: what a message
 * changes, what runs this round, what a landed commit deletes, what a failed round rolls
 * back, when the video is idle. No AWS client and no processor here: methods return
 * actions (handles to delete or hand back, a processor state to restore), and the
 * caller carries them out.
 *
 * Since the last commit, the session keeps a log of what changed its sequencer (offers,
 * late frames, rejects, end markers, listings) and the receipt handles behind them. A
 * round that fails restores the sequencer from the committed checkpoint and replays the
 * log, so the messages stay in this process (kept invisible by the inbox) instead of
 * going back to the queue: a retry never costs a receive, and an outage of any length
 * cannot walk a message into the DLQ by redrive (receives are what redrive counts).
 */
import type { VideoCheckpoint } from '../../core/commit/checkpoint.ts';
import type { CommitUnit } from '../../core/commit/commit-packing.ts';
import { padWidthOf } from '../../core/ingest/keys.ts';
import { UploadTimes } from './upload-times.ts';
import { breakerVerdict, CRASHED_WORKER_REASON, isolatedRoundFull, isolationStep, type Handover } from './crash/crash-breaker.ts';
import type { SourceEvent } from '../../core/analytics/commit-events.ts';
import { markStalled, noteSegment, stallDueAtMs, type SourceWatch } from '../../core/ingest/source-watch.ts';
import { VideoSequencer, type FrameRef, type ListingLesson, type OfferResult, type SequencedStep, type SequencerOptions } from '../../core/ordering/sequencer.ts';

/** Most result items one video commits per round (a transaction holds 100 items). */
export const MAX_RESULT_ITEMS_PER_COMMIT = 80;
/** After this many failed rounds in a row (outages aside), a video's blamed frames are parked as failures. */
export const MAX_VIDEO_FAILURES = 4;
/** Backoff after a failed round: base, doubling per failure, capped. */
export const RETRY_BASE_MS = 500;
export const RETRY_MAX_MS = 30_000;
/** How many settled frames a video remembers (a redelivery of one is a duplicate without a read). */
export const SETTLED_MEMORY_FRAMES = 512;

/** A change to the sequencer since the last commit, replayed after a rollback. */
type LoggedChange =
  | { readonly op: 'offer'; readonly ref: FrameRef; readonly atMs: number }
  | { readonly op: 'late'; readonly ref: FrameRef; readonly replacesGap: boolean }
  | { readonly op: 'reject'; readonly ref: FrameRef; readonly reason: 'after-end-of-stream' | 'before-first-frame' }
  | { readonly op: 'end'; readonly endFrame: number }
  | { readonly op: 'listing'; readonly fromFrame: number; readonly frames: readonly FrameRef[]; readonly coverage: number | boolean; readonly atMs: number }
  | { readonly op: 'forget-gap'; readonly frame: number };

/** What offering a frame decided, and what the caller must look up when the sequencer cannot tell. */
export type FrameOffer =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'duplicate' }
  /** Below the tracker or outside the video: the frame's record decides (see {@link VideoSession.resolveWithRecord}). */
  | { readonly kind: 'needs-record'; readonly offered: Exclude<OfferResult, 'accepted' | 'duplicate'> };

/** One round's plan for a video: the steps to run and the frames to record as parked instead of running. */
export interface SessionPlan {
  readonly steps: readonly SequencedStep[];
  readonly parked: ReadonlyMap<number, string>;
  /** Handles the unit built from this plan covers (deleted once it lands). */
  readonly handles: readonly string[];
  /** Log entries this plan's unit covers. */
  readonly logLength: number;
  /** A crash-loop marker (decision 28): commits the checkpoint with `trying` set, runs nothing. */
  readonly marker?: boolean;
  /** The source watch this plan's unit checkpoints, and the stall events it raises. */
  readonly source?: { readonly watch: SourceWatch | undefined; readonly events: readonly SourceEvent[] };
}

/** The plan of a marker unit: no steps, no handles, no log. */
export const MARKER_PLAN: SessionPlan = { steps: [], parked: new Map(), handles: [], logLength: 0, marker: true };

/** What a rollback asks of the caller. */
export interface RollbackActions {
  /** The processor state to restore the video's tracker to. */
  readonly restoreProcessor: string | undefined;
  readonly backoffMs: number;
  /** Whether the failure counts towards parking (outages do not). */
  readonly counted: boolean;
}

export class VideoSession {
  readonly videoId: string;
  readonly token: number;
  /** Last checkpoint known to be stored. */
  committed: VideoCheckpoint;
  sequencer: VideoSequencer;
  lastActivityMs: number;
  /** Frames outside the video waiting for their failure record. */
  rejects: Extract<SequencedStep, { type: 'reject' }>[] = [];
  /** Receipt handles to delete once this video's next commit lands. */
  handles: string[] = [];
  /** Upload times of frames waiting for their record (upload-times.ts), for `UploadToRecordMs`. */
  readonly uploads = new UploadTimes();
  /** Whether anything changed since the last commit. */
  dirty = false;
  /** Zero-padding width of the video's keys, when they show one (listings can then seek). */
  padWidth: number | undefined;
  /** Failed rounds in a row that count towards parking, and no work before `retryAtMs` (backoff). */
  failures = 0;
  /** Failed rounds in a row for any reason (outages included): drives the backoff. */
  private failedRounds = 0;
  retryAtMs = 0;
  /** Frames blamed by failed rounds, with the reason: parked once `failures` reaches the limit. */
  readonly blamed = new Map<number, string>();
  /** Frames this worker committed a final record for, most recent last. Bounded. */
  readonly settled = new Set<number>();
  /** Frames a commit found already recorded: left out of later rounds (until a replay re-sends them: {@link forgetRecorded}). */
  readonly recorded = new Set<number>();
  /**
   * Since when this video runs isolated (crash-breaker.ts): taken over from an owner that
   * died, or adopted twice without progress. Undefined on the normal path.
   */
  isolatedSinceMs: number | undefined;
  /** The highest frame known when the isolation window closed: run alone up to it, then leave. */
  private isolatedThroughFrame: number | undefined;
  /** The stall evidence this video was adopted with: orders isolated videos (least suspect first). */
  readonly suspicion: VideoCheckpoint['stall'];
  /** Frames a process died running alone (crash-breaker.ts): recorded as failed, never run again. */
  readonly crashParked = new Map<number, string>();
  /** A live source's watch (core/ingest/source-watch.ts); undefined for a video of images. */
  private sourceWatch: SourceWatch | undefined;
  /** When this owner took the video: the source watch counts silence from here at the earliest (decision 85). */
  private readonly tenureStartMs: number;
  /** Stall events raised and not yet committed (a failed round keeps them for the next). */
  private sourceEvents: SourceEvent[] = [];
  private log: LoggedChange[] = [];
  private readonly options: SequencerOptions;
  /** Most steps the next plans take, after a round whose events did not fit one transaction (cleared by a landed commit). */
  private stepCap: number | undefined;

  /** `handover`: how the video came to this worker (crash-breaker.ts {@link Handover}). */
  constructor(videoId: string, token: number, checkpoint: VideoCheckpoint, options: SequencerOptions, nowMs: number, handover: Handover = 'unowned') {
    this.videoId = videoId;
    this.token = token;
    this.committed = checkpoint;
    this.options = options;
    this.sequencer = new VideoSequencer(options, checkpoint.sequencer);
    this.lastActivityMs = nowMs;
    const known = checkpoint.sequencer.buffered[0]?.key;
    this.padWidth = known !== undefined ? padWidthOf(known) : undefined;
    this.suspicion = checkpoint.stall;
    this.sourceWatch = checkpoint.source;
    this.tenureStartMs = nowMs;
    const verdict = breakerVerdict(checkpoint.stall, handover);
    if (verdict !== 'normal') this.isolatedSinceMs = nowMs;
    if (typeof verdict === 'object') this.crashParked.set(verdict.park, CRASHED_WORKER_REASON);
  }

  /** Whether the video runs isolated (alone, one frame per round, each announced by a marker). */
  get isolated(): boolean {
    return this.isolatedSinceMs !== undefined;
  }

  /**
   * Ends isolation once every frame a dead predecessor may have been running has been run
   * alone ({@link isolationStep}); true when it ended now.
   */
  leaveIsolationIfDue(nowMs: number, redeliveryMs: number): boolean {
    if (this.isolatedSinceMs === undefined || this.crashParked.size > 0) return false;
    const state = this.sequencer.snapshot();
    const waiting = [...state.late.map((l) => l.frame), ...state.buffered.map((b) => b.frame)];
    const step = isolationStep({
      isolatedSinceMs: this.isolatedSinceMs,
      nowMs,
      redeliveryMs,
      through: this.isolatedThroughFrame,
      lowestPending: waiting.length > 0 ? Math.min(...waiting) : undefined,
      highestPending: waiting.length > 0 ? Math.max(...waiting) : undefined,
    });
    if (step === 'stay') return false;
    if (step !== 'leave') {
      this.isolatedThroughFrame = step.through;
      return false;
    }
    this.isolatedSinceMs = undefined;
    this.isolatedThroughFrame = undefined;
    return true;
  }

  /** Whether the video is waiting out a backoff at `nowMs`. */
  backingOff(nowMs: number): boolean {
    return this.retryAtMs > nowMs;
  }

  /** A message of this video arrived: its handle is held until the next commit lands. */
  takeHandle(handle: string, nowMs: number): void {
    this.handles.push(handle);
    this.lastActivityMs = nowMs;
    this.dirty = true;
  }

  /** Offers a frame; the caller resolves `needs-record` with the frame's record. */
  offerFrame(ref: FrameRef, nowMs: number): FrameOffer {
    this.padWidth ??= padWidthOf(ref.key);
    const offered = this.sequencer.offer(ref, nowMs);
    if (offered === 'accepted') {
      this.log.push({ op: 'offer', ref, atMs: nowMs });
      return { kind: 'accepted' };
    }
    if (offered === 'duplicate' || this.settled.has(ref.frame)) return { kind: 'duplicate' };
    return { kind: 'needs-record', offered };
  }

  /**
   * Decides a frame below the tracker or outside the video from its record: a final
   * record makes it a duplicate; otherwise it runs late (replacing a gap) or is rejected.
   */
  resolveWithRecord(ref: FrameRef, offered: FrameOffer & { kind: 'needs-record' }, recordStatus: string | undefined): 'duplicate' | 'late' | 'rejected' {
    if (recordStatus !== undefined && recordStatus !== 'gap') return 'duplicate';
    if (offered.offered === 'below') {
      const replacesGap = recordStatus === 'gap';
      this.sequencer.addLate(ref, replacesGap);
      this.log.push({ op: 'late', ref, replacesGap });
      return 'late';
    }
    const reason = offered.offered === 'after-end' ? 'after-end-of-stream' : 'before-first-frame';
    if (!this.rejects.some((r) => r.ref.frame === ref.frame)) {
      this.rejects.push({ type: 'reject', ref, reason });
      this.log.push({ op: 'reject', ref, reason });
    }
    return 'rejected';
  }

  setEnd(endFrame: number): void {
    this.sequencer.setEnd(endFrame);
    this.log.push({ op: 'end', endFrame });
  }

  /**
   * Records what a listing of S3 said (kept for replay after a rollback): `coverage` is the
   * frame through which every existing frame was listed. Frames it lists in a mixed gap
   * range come back in `verify`: the caller decides each by its record
   * ({@link resolveListedGap}). A re-check that finished with nothing left to run marks
   * the video dirty, so the round that follows commits its completion.
   */
  learnListing(fromFrame: number, frames: readonly FrameRef[], coverage: number | boolean, nowMs: number): ListingLesson {
    const lesson = this.sequencer.learnListing(fromFrame, frames, coverage, nowMs);
    this.log.push({ op: 'listing', fromFrame, frames, coverage, atMs: nowMs });
    if (lesson.recheckDone && this.sequencer.isComplete() && !this.committed.complete) this.dirty = true;
    return lesson;
  }

  /** Decides a listed frame that may be a gap from its record: a gap or no record runs late; any other record stands. */
  resolveListedGap(ref: FrameRef, recordStatus: string | undefined): void {
    if (recordStatus === undefined || recordStatus === 'gap') {
      const replacesGap = recordStatus === 'gap';
      this.sequencer.addLate(ref, replacesGap);
      this.log.push({ op: 'late', ref, replacesGap });
    } else {
      this.sequencer.forgetGap(ref.frame);
      this.log.push({ op: 'forget-gap', frame: ref.frame });
    }
  }

  /** The steps due this round, or undefined when the video has nothing to commit. */
  plan(nowMs: number): SessionPlan | undefined {
    const cap = Math.min(MAX_RESULT_ITEMS_PER_COMMIT, this.stepCap ?? MAX_RESULT_ITEMS_PER_COMMIT);
    const rejects = this.rejects.splice(0, cap);
    const room = cap - rejects.length;
    let took: SequencedStep[] = [];
    if (room > 0 && this.isolated) {
      // Isolated: steps one at a time, up to the first that runs a frame (at most one runs).
      // A frame whose record stands runs nothing: it does not fill the round, or each such
      // frame would cost a round of its own (and a marker naming a frame that never runs).
      while (took.length < room && !isolatedRoundFull(took.filter((st) => !this.recorded.has(stepFrame(st))))) {
        const next = this.sequencer.take(nowMs, 1);
        if (next.length === 0) break;
        took.push(...next);
      }
    } else if (room > 0) {
      took = this.sequencer.take(nowMs, room);
    }
    const taken = oneStepPerFrame([...rejects, ...took]);
    const steps = this.recorded.size === 0 ? taken : taken.filter((st) => !this.recorded.has(stepFrame(st)));
    // Taking moved the sequencer: even when every step taken was a frame whose record stands
    // (left out), the plan commits the checkpoint that moved, or the session runs ahead of
    // what is stored (the next rollback takes it back, an idle release hands over the old
    // buffer, and the video never completes).
    if (steps.length === 0 && took.length === 0 && !this.dirty) return undefined;
    const parked = new Map(this.failures >= MAX_VIDEO_FAILURES ? this.blamed : []);
    for (const [frame, reason] of this.crashParked) parked.set(frame, reason);
    const source = this.sourceWatch !== this.committed.source || this.sourceEvents.length > 0 ? { watch: this.sourceWatch, events: [...this.sourceEvents] } : undefined;
    return { steps, parked, handles: [...this.handles], logLength: this.log.length, ...(source ? { source } : {}) };
  }

  /**
   * The frames this video runs next, in order: `plan`'s (the round about to run), then
   * those buffered behind it. What the worker reads segments ahead from (decision 51).
   */
  *upcoming(plan?: SessionPlan): Generator<FrameRef> {
    for (const st of plan?.steps ?? []) if (st.type === 'frame' || st.type === 'late') yield st.ref;
    yield* this.sequencer.buffered;
  }

  /**
   * A new segment of this video arrived (its frames were taken, not all duplicates): the
   * source watch learns it, and a stalled source raises `source.resumed` with the next commit.
   */
  noteSegment(firstFrame: number, nowMs: number): void {
    const { watch, resumed } = noteSegment(this.sourceWatch, nowMs);
    if (resumed) this.sourceEvents.push({ kind: 'source.resumed', frame: firstFrame, stalls: watch.stalls, lastSegmentAtMs: this.sourceWatch!.lastSegmentAtMs, intervalMs: watch.intervalMs });
    this.sourceWatch = watch;
    this.dirty = true;
  }

  /** When the source counts as stalled (source-watch.ts), judged from this owner's tenure at the earliest; undefined when it cannot. */
  private stallDueAtMs(): number | undefined {
    return stallDueAtMs(this.sourceWatch, this.sequencer.endFrame !== null, this.tenureStartMs);
  }

  /** Raises `source.stalled` when the source's segments stopped (source-watch.ts); true when it did now. */
  checkStall(nowMs: number): boolean {
    const due = this.stallDueAtMs();
    if (due === undefined || nowMs < due) return false;
    const w = markStalled(this.sourceWatch!);
    this.sourceWatch = w;
    this.sourceEvents.push({ kind: 'source.stalled', frame: this.sequencer.nextFrame, stalls: w.stalls, lastSegmentAtMs: w.lastSegmentAtMs, intervalMs: w.intervalMs });
    this.dirty = true;
    return true;
  }

  /**
   * Limits the next plans to `steps` steps: a round raised more events than one transaction
   * holds (round-builder.ts), so it is re-run smaller. A landed commit lifts the cap.
   */
  capNextPlan(steps: number): void {
    this.stepCap = Math.max(1, steps);
  }

  /** Undoes a plan that will not run (its marker did not land): the sequencer is rebuilt from the committed state. */
  undoPlan(): void {
    this.restore();
  }

  /** How many of a plan's frames are recorded as parked. */
  parkedIn(plan: SessionPlan): number {
    if (plan.parked.size === 0) return 0;
    return plan.steps.filter((s) => (s.type === 'frame' || s.type === 'late') && plan.parked.has(s.ref.frame)).length;
  }

  /**
   * A unit built from `plan` landed: it is the committed state now. Returns the handles
   * to delete (exactly those the checkpoint covers) and whether the video is complete.
   */
  applyCommitted(unit: CommitUnit, plan: SessionPlan): { deleteHandles: readonly string[]; complete: boolean } {
    this.committed = unit.checkpoint;
    // A marker is no progress: failures, handles and the log stay as they are.
    if (plan.marker) return { deleteHandles: [], complete: false };
    this.stepCap = undefined;
    if (plan.source) this.sourceEvents = this.sourceEvents.slice(plan.source.events.length);
    for (const r of unit.results) this.crashParked.delete(r.frame);
    const covered = new Set(plan.handles);
    this.handles = this.handles.filter((h) => !covered.has(h));
    this.log = this.log.slice(plan.logLength);
    this.dirty = this.handles.length > 0 || this.log.length > 0 || this.sourceEvents.length > 0 || this.sourceWatch !== unit.checkpoint.source;
    if (this.failures >= MAX_VIDEO_FAILURES) this.blamed.clear();
    this.failures = 0;
    this.failedRounds = 0;
    remember(this.settled, unit.results.filter((r) => r.status !== 'gap').map((r) => r.frame));
    return { deleteHandles: plan.handles, complete: unit.checkpoint.complete };
  }

  /**
   * A round failed: restore the last committed state, replay what arrived since, and
   * back off. `counted` failures (not outages) blame frames and lead to parking; the
   * messages stay held either way.
   */
  rollback(blamed: readonly number[], reason: string, counted: boolean, nowMs: number): RollbackActions {
    this.failedRounds++;
    if (counted) {
      this.failures++;
      for (const f of blamed) this.blamed.set(f, reason);
    }
    const backoffMs = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (this.failedRounds - 1));
    this.restore();
    this.retryAtMs = nowMs + backoffMs;
    return { restoreProcessor: this.committed.processor, backoffMs, counted };
  }

  /**
   * A commit found `frame` already recorded (a frame recorded `after-end-of-stream` before
   * its end marker was corrected, or by an earlier owner): that record stands. The unit did
   * not land, so the state is restored and replayed as in {@link rollback}, but this is no
   * failure: nothing is blamed or counted and there is no backoff, since the retry leaves
   * the frame out (each such commit settles one more frame, so it cannot loop).
   */
  settleExisting(frame: number): RollbackActions {
    this.recorded.add(frame);
    // Its record stands: no record of ours will land for it, so its upload time would stay forever.
    this.uploads.forget(frame);
    this.restore();
    return { restoreProcessor: this.committed.processor, backoffMs: 0, counted: false };
  }

  /**
   * An operator's deliberate re-send of `frames` (a message with a replay tag): what this
   * session remembers about their records (settled by its own commit, or found recorded by
   * a commit) may no longer hold, since a replay deletes records before it re-sends their
   * frames. Forgotten, each frame is decided by its record again (issue 40, defect 2: a new
   * owner that met a replay's old records before the replay deleted them left the re-sent
   * frames out of every plan, and they ended with no record).
   */
  forgetRecorded(frames: Iterable<number>): void {
    for (const f of frames) {
      this.recorded.delete(f);
      this.settled.delete(f);
    }
  }

  /** Rebuilds the sequencer from the committed checkpoint and replays the log on it. */
  private restore(): void {
    this.sequencer = new VideoSequencer(this.options, this.committed.sequencer);
    this.rejects = [];
    for (const c of this.log) {
      if (c.op === 'offer') this.sequencer.offer(c.ref, c.atMs);
      else if (c.op === 'late') this.sequencer.addLate(c.ref, c.replacesGap);
      else if (c.op === 'reject') this.rejects.push({ type: 'reject', ref: c.ref, reason: c.reason });
      else if (c.op === 'end') this.sequencer.setEnd(c.endFrame);
      else if (c.op === 'forget-gap') this.sequencer.forgetGap(c.frame);
      else this.sequencer.learnListing(c.fromFrame, c.frames, c.coverage, c.atMs);
    }
    this.dirty = this.handles.length > 0 || this.log.length > 0 || this.sourceEvents.length > 0;
  }

  /**
   * Whether the video may be released for idleness at `nowMs`. A live source is watched
   * until its stall is raised: the video is not released before, or nobody would raise it.
   */
  idleReleaseDue(nowMs: number, idleMs: number): boolean {
    const failing = this.failedRounds > 0 || this.backingOff(nowMs);
    const watching = this.stallDueAtMs() !== undefined;
    return !failing && !watching && !this.dirty && this.handles.length === 0 && this.rejects.length === 0 && !this.sequencer.hasPending() && nowMs - this.lastActivityMs >= idleMs;
  }

  /** When this video next has work of its own (a backoff's end, a sequencer deadline), or undefined. */
  nextWakeMs(nowMs: number): number | undefined {
    if (this.backingOff(nowMs)) return this.retryAtMs;
    if (this.rejects.length > 0 || this.dirty) return nowMs;
    const sequencer = this.sequencer.nextDeadlineMs();
    const stall = this.stallDueAtMs();
    return sequencer === undefined ? stall : stall === undefined ? sequencer : Math.min(sequencer, stall);
  }

  /**
   * Whether a frame message would be run by this video soon (decoding it ahead is worth
   * it): not a duplicate, not settled, the video is not backing off, and it is not isolated
   * (a suspect's frames are decoded only in their own round: a decoder crash ahead would
   * kill the process outside isolation, decision 28).
   */
  wouldRun(frame: number, nowMs: number): boolean {
    if (this.isolated || this.backingOff(nowMs) || this.settled.has(frame) || this.recorded.has(frame)) return false;
    const next = this.sequencer.nextFrame;
    const first = this.sequencer.firstFrame;
    if (first !== null && frame < next) return false;
    const end = this.sequencer.endFrame;
    return end === null || frame <= end;
  }
}

/** The frame a step records. */
export function stepFrame(step: SequencedStep): number {
  return step.type === 'gap' ? step.frame : step.ref.frame;
}

/** Which step a plan keeps when two record one frame: the one that runs it, then a reject, then a gap. */
const STEP_RANK: Readonly<Record<SequencedStep['type'], number>> = { frame: 0, late: 1, reject: 2, gap: 3 };

/**
 * At most one step per frame, in the steps' order. A unit writes one record per step, and
 * DynamoDB rejects a transaction with two operations on one item (a ValidationException,
 * where DynamoDB Local reports a condition failure): so a plan never carries two. Two can
 * only meet after a rollback replays decisions made from a state the rollback undid (a
 * redelivered frame rejected after-end while the buffer still holds it); the step that
 * runs the frame wins, a gap never displaces a frame.
 */
export function oneStepPerFrame(steps: readonly SequencedStep[]): SequencedStep[] {
  const best = new Map<number, SequencedStep>();
  for (const st of steps) {
    const seen = best.get(stepFrame(st));
    if (!seen || STEP_RANK[st.type] < STEP_RANK[seen.type]) best.set(stepFrame(st), st);
  }
  return best.size === steps.length ? [...steps] : steps.filter((st) => best.get(stepFrame(st)) === st);
}

function remember(settled: Set<number>, frames: readonly number[]): void {
  for (const f of frames) {
    settled.delete(f);
    settled.add(f);
  }
  for (const f of settled) {
    if (settled.size <= SETTLED_MEMORY_FRAMES) break;
    settled.delete(f);
  }
}
