/**
 * The worker runtime: holds one slot, receives that slot's FIFO queue, keeps each
 * video's frames in order, runs the FrameProcessor, and commits results together
 * with the checkpoint that covers them, fenced by the slot epoch and video token.
 *
 * Message life cycle: a message is deleted only after the commit whose checkpoint
 * covers it (as a processed frame, or as a reference in the reorder buffer) is durable.
 */
import type { Tunables } from '../../core/config.ts';
import { parseEndMarkerBody } from '../../core/keys.ts';
import { parseSlotMessage, type SlotMessage } from '../../core/messages.ts';
import type { FrameInput, FrameOutcome, FrameProcessor, LogSink, MetricSink } from '../../core/ports.ts';
import { VideoSequencer, type SequencedStep, type SequencerState } from '../../core/sequencer.ts';
import type { VideoCheckpoint } from '../../core/checkpoint.ts';
import { summaryOf } from '../../core/checkpoint.ts';
import type { CommitUnit, LeaseStore, SlotFence } from '../../core/lease-store.ts';
import { UnconfirmedError } from '../../core/lease-store.ts';
import type { FrameResultItem } from '../../core/results.ts';
import type { ReceivedMessage, SlotQueues } from '../../core/slot-queues.ts';
import { ObjectMissingError, type FrameStore } from '../../core/frame-store.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';

export type WorkerLog = LogSink;

export interface WorkerDeps {
  readonly workerId: string;
  /** The slot to claim; undefined = the first free one. */
  readonly slot?: number;
  readonly tunables: Tunables;
  readonly leases: LeaseStore;
  readonly queues: SlotQueues;
  readonly frames: FrameStore;
  readonly processor: FrameProcessor;
  readonly metrics: MetricSink;
  readonly log: WorkerLog;
  readonly now?: () => number;
  /** Called on every confirmed heartbeat (health file for the container health check). */
  readonly onHeartbeat?: () => void;
  /** Called the moment the slot lease is lost or cannot be confirmed; the process should exit at once. */
  readonly onLeaseLost?: (reason: string) => void;
}

/** Why the run loop ended; main.ts maps it to an exit code. */
export type ExitReason = 'drained' | 'lease-lost' | 'no-slot';

/** Gap runs longer than this are written as one range item instead of one item per frame. */
export const MAX_GAP_ITEMS_PER_RUN = 20;
/** Most result items one video commits per loop iteration (a transaction holds 100 items). */
const MAX_RESULT_ITEMS_PER_COMMIT = 80;
/** Longest long poll; it also bounds how long a drain waits for the receive in progress. */
const MAX_POLL_WAIT_SECONDS = 5;
/** Concurrent S3 GETs per batch. */
const FETCH_CONCURRENCY = 8;

interface OwnedVideo {
  readonly videoId: string;
  readonly token: number;
  /** Last committed checkpoint. */
  committed: VideoCheckpoint;
  sequencer: VideoSequencer;
  lastActivityMs: number;
  /** After-end frames waiting for their failure record. */
  rejects: SequencedStep[];
  /** Receipt handles to delete once this video's next commit is durable. */
  handles: string[];
  /** Whether anything changed since the last commit. */
  dirty: boolean;
}

export class Worker {
  private readonly d: WorkerDeps;
  private readonly now: () => number;
  private readonly owned = new Map<string, OwnedVideo>();
  private fence: SlotFence | undefined;
  private lastConfirmedExpiryMs = 0;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeatInFlight = false;
  private stopRequested = false;
  private lost: string | undefined;
  private receiveAbort = new AbortController();

  constructor(deps: WorkerDeps) {
    this.d = deps;
    this.now = deps.now ?? Date.now;
  }

  get slot(): number | undefined {
    return this.fence?.slot;
  }

  get ownedVideos(): string[] {
    return [...this.owned.keys()];
  }

  /** Asks the loop to drain: finish the current batch, commit, release the slot. */
  requestStop(): void {
    // The receive in progress is not aborted: SQS may already have handed its messages
    // out, and abandoning them would hide them (and block their videos) for a whole
    // visibility timeout. The drain handles them instead; a poll lasts at most MAX_POLL_WAIT_SECONDS.
    this.stopRequested = true;
  }

  async run(): Promise<ExitReason> {
    const t = this.d.tunables;
    await this.d.processor.start();
    this.d.log.info('processor ready', { processor: this.d.processor.description, provider: this.d.processor.provider });
    // onnxruntime can fall back to CPU silently: report what really runs.
    if (this.d.processor.provider) this.d.metrics.count(METRIC_NAMES.worker.executionProvider, 1, { Provider: this.d.processor.provider });
    const fence = await this.claimSlot();
    if (!fence) return 'no-slot';
    this.fence = fence;
    this.d.log.info('slot claimed', { slot: fence.slot, epoch: fence.epoch, workerId: fence.workerId });
    this.d.metrics.count(METRIC_NAMES.worker.slotsClaimed);
    this.heartbeatTimer = setInterval(() => void this.heartbeat(), t.heartbeatIntervalSeconds * 1000);
    try {
      // Take over every video already pinned to this slot (a predecessor's), so their
      // checkpoints — including buffered frames — resume even if no new message comes.
      for (const videoId of await this.d.leases.listPinned(fence.slot)) {
        if (this.lost) break;
        await this.ensureOwned(videoId);
      }
      while (!this.stopRequested && !this.lost) {
        const messages = await this.receive();
        if (this.lost) break;
        await this.handle(messages);
        if (this.lost) break;
        await this.housekeeping();
      }
    } finally {
      clearInterval(this.heartbeatTimer);
    }
    if (this.lost) return 'lease-lost';
    // Drain: everything received has been committed and deleted; hand the slot off now
    // rather than making the successor wait for the lease to run out.
    await this.d.leases.releaseSlot(fence, this.now());
    this.d.log.info('drained and released slot', { slot: fence.slot, videos: this.ownedVideos });
    await this.d.processor.stop();
    return 'drained';
  }

  // ------------------------------------------------------------------ slot lease

  private async claimSlot(): Promise<SlotFence | undefined> {
    const t = this.d.tunables;
    const ttlMs = t.slotLeaseTtlSeconds * 1000;
    // A replacement may start while the dead owner's lease still runs: wait it out.
    const giveUpAtMs = this.now() + 2 * ttlMs + 5_000;
    const candidates = this.d.slot !== undefined ? [this.d.slot] : Array.from({ length: t.slotCount }, (_, i) => i);
    while (!this.stopRequested && this.now() < giveUpAtMs) {
      for (const slot of candidates) {
        const now = this.now();
        const claimed = await this.d.leases.claimSlot(slot, this.d.workerId, now, ttlMs);
        if (claimed) {
          this.lastConfirmedExpiryMs = claimed.expiresAtMs;
          this.d.onHeartbeat?.();
          return { slot, workerId: this.d.workerId, epoch: claimed.epoch };
        }
      }
      await sleep(500);
    }
    this.d.log.warn('no slot could be claimed; exiting', { candidates });
    return undefined;
  }

  private async heartbeat(): Promise<void> {
    const fence = this.fence;
    if (!fence || this.heartbeatInFlight || this.lost) return;
    this.heartbeatInFlight = true;
    const ttlMs = this.d.tunables.slotLeaseTtlSeconds * 1000;
    const now = this.now();
    try {
      const r = await this.d.leases.renewSlot(fence, now, ttlMs);
      if (r === 'lost') {
        this.loseLease('slot taken over by another worker');
        return;
      }
      this.lastConfirmedExpiryMs = now + ttlMs;
      this.d.onHeartbeat?.();
    } catch (e) {
      const detail = e instanceof UnconfirmedError ? e.message : String(e);
      this.d.log.warn('heartbeat not confirmed', { detail });
      this.d.metrics.count(METRIC_NAMES.worker.heartbeatsUnconfirmed);
      // Keep trying while the last confirmed lease still has a heartbeat's margin left.
      if (this.now() >= this.lastConfirmedExpiryMs - this.d.tunables.heartbeatIntervalSeconds * 1000) {
        this.loseLease(`heartbeat could not be confirmed: ${detail}`);
      }
    } finally {
      this.heartbeatInFlight = false;
    }
  }

  private loseLease(reason: string): void {
    if (this.lost) return;
    this.lost = reason;
    this.d.log.error('slot lease lost; stopping at once', { reason, slot: this.fence?.slot });
    this.d.metrics.count(METRIC_NAMES.worker.slotLeasesLost);
    this.receiveAbort.abort();
    this.d.onLeaseLost?.(reason);
  }

  // ------------------------------------------------------------------ receive

  private async receive(): Promise<ReceivedMessage[]> {
    const fence = this.fence!;
    const waitSeconds = this.pollWaitSeconds();
    if (this.receiveAbort.signal.aborted) this.receiveAbort = new AbortController();
    try {
      return await this.d.queues.receive(fence.slot, 10, waitSeconds, this.receiveAbort.signal);
    } catch (e) {
      if (this.stopRequested || this.lost) return [];
      this.d.log.warn('receive failed', { error: String(e) });
      await sleep(1000);
      return [];
    }
  }

  /**
   * After a takeover, a missing frame may be one the previous owner had received when it
   * died: hidden for up to the queue's visibility timeout, not lost. Its wait is
   * stretched so the gap decision comes no earlier than that.
   */
  private adoptionGraceMs(): number {
    return Math.max(0, this.d.tunables.slotQueueVisibilitySeconds * 1000 - this.d.tunables.reorderWaitMs);
  }

  /** Long-poll unless a reorder wait or idle release is due soon. */
  private pollWaitSeconds(): number {
    const now = this.now();
    let soonestMs = Infinity;
    for (const v of this.owned.values()) {
      const deadline = v.sequencer.nextDeadlineMs();
      if (deadline !== null) soonestMs = Math.min(soonestMs, deadline);
      else if (v.sequencer.hasPending()) soonestMs = Math.min(soonestMs, now + 1000);
      if (v.rejects.length > 0 || v.dirty) soonestMs = now;
    }
    if (soonestMs === Infinity) return MAX_POLL_WAIT_SECONDS;
    if (soonestMs <= now && [...this.owned.values()].some((v) => v.rejects.length > 0 || v.dirty)) return 0;
    // At least 1 s: a gap is declared only after a receive that found none of the video's
    // frames, and a short poll can miss messages that exist.
    return Math.max(1, Math.min(MAX_POLL_WAIT_SECONDS, Math.ceil((soonestMs - now) / 1000)));
  }

  // ------------------------------------------------------------------ one batch

  private async handle(messages: readonly ReceivedMessage[]): Promise<void> {
    const fence = this.fence!;
    const now = this.now();
    const touched = new Set<string>();
    const immediateDeletes: string[] = [];
    const extender = this.startVisibilityExtender(messages.map((m) => m.receiptHandle));
    try {
      for (const m of messages) {
        const msg = parseSlotMessage(m.body);
        if (!msg) {
          this.d.log.warn('malformed slot message dead-lettered', { messageId: m.messageId });
          this.d.metrics.count(METRIC_NAMES.worker.messagesDeadLettered, 1, { Reason: 'malformed-message' });
          await this.d.queues.deadLetter(fence.slot, m.body, 'malformed-message', 'malformed');
          immediateDeletes.push(m.receiptHandle);
          continue;
        }
        const owner = await this.ensureOwned(msg.videoId);
        if (owner === 'lost') return;
        if (typeof owner === 'number') {
          await this.forward(msg, owner);
          immediateDeletes.push(m.receiptHandle);
          continue;
        }
        touched.add(msg.videoId);
        owner.handles.push(m.receiptHandle);
        owner.lastActivityMs = now;
        owner.dirty = true;
        await this.accept(owner, msg, now);
      }
      if (immediateDeletes.length > 0) await this.d.queues.delete(fence.slot, immediateDeletes);
      await this.processAndCommit(now, touched);
    } finally {
      extender.stop();
    }
  }

  private async accept(v: OwnedVideo, msg: SlotMessage, now: number): Promise<void> {
    if (msg.kind === 'end') {
      let endFrame: number | undefined;
      let problem = '';
      try {
        endFrame = parseEndMarkerBody(await this.d.frames.getText(msg.bucket, msg.key));
        if (endFrame === undefined) problem = 'end marker body is not a frame number';
      } catch (e) {
        problem = e instanceof ObjectMissingError ? 'end marker object is missing' : String(e);
        if (!(e instanceof ObjectMissingError)) throw e;
      }
      if (endFrame === undefined) {
        this.d.log.warn('bad end-of-stream marker ignored', { videoId: v.videoId, key: msg.key, problem });
        this.d.metrics.count(METRIC_NAMES.worker.eventsRejected, 1, { Reason: 'bad-end-marker' });
        await this.d.queues.deadLetter(this.fence!.slot, JSON.stringify(msg), `bad-end-marker: ${problem}`, v.videoId);
        return;
      }
      v.sequencer.setEnd(endFrame);
      this.d.log.info('end of stream announced', { videoId: v.videoId, endFrame });
      return;
    }
    const offered = v.sequencer.offer({ frame: msg.frame, bucket: msg.bucket, key: msg.key, sizeBytes: msg.sizeBytes }, now);
    if (offered === 'duplicate') this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate);
    if (offered === 'after-end' || offered === 'before-first') {
      const reason = offered === 'after-end' ? 'after-end-of-stream' : 'before-first-frame';
      v.rejects.push({ type: 'reject', ref: { frame: msg.frame, bucket: msg.bucket, key: msg.key, sizeBytes: msg.sizeBytes }, reason });
    }
  }

  /**
   * Finds or takes the lease of a video. Returns the owned state, the slot to forward
   * to when the video lives elsewhere, or `lost` when our slot is gone.
   */
  private async ensureOwned(videoId: string): Promise<OwnedVideo | number | 'lost'> {
    const existing = this.owned.get(videoId);
    if (existing) return existing;
    const fence = this.fence!;
    for (let attempt = 0; attempt < 4; attempt++) {
      const adopted = await this.d.leases.adoptVideo(videoId, fence, this.now());
      if (adopted !== 'not-here') {
        const ck = adopted.checkpoint;
        this.d.processor.openVideo(videoId, ck.processor);
        const v: OwnedVideo = {
          videoId,
          token: adopted.token,
          committed: ck,
          sequencer: adoptedSequencer(this.d.tunables, ck.sequencer, this.now(), this.adoptionGraceMs()),
          lastActivityMs: this.now(),
          rejects: [],
          handles: [],
          dirty: false,
        };
        this.owned.set(videoId, v);
        this.d.metrics.count(METRIC_NAMES.worker.videoLeasesAdopted);
        if (ck.owners.length > 1) this.d.metrics.count(METRIC_NAMES.worker.videoTakeovers);
        this.d.log.info('video adopted', {
          videoId,
          token: adopted.token,
          nextFrame: ck.sequencer.nextFrame,
          buffered: ck.sequencer.buffered.length,
          previousOwner: ck.owners.at(-2)?.worker,
        });
        return v;
      }
      const current = await this.d.leases.getVideo(videoId);
      if (current.pinnedSlot !== undefined && current.pinnedSlot !== fence.slot) return current.pinnedSlot;
      if (current.pinnedSlot === undefined) {
        // Released (idle or finished) while the router still sent here: take it ourselves.
        await this.d.leases.pinVideo(videoId, fence.slot, this.now());
      }
    }
    if (this.lost) return 'lost';
    throw new Error(`could not settle the lease of video ${videoId}`);
  }

  private async forward(msg: SlotMessage, slot: number): Promise<void> {
    const [outcome] = await this.d.queues.send(slot, [{ message: msg }]);
    if (!outcome?.ok) throw new Error(`forward of ${msg.videoId} to slot ${slot} failed: ${outcome?.ok === false ? outcome.error : ''}`);
    this.d.metrics.count(METRIC_NAMES.worker.framesForwarded);
    this.d.log.info('forwarded frame of a video pinned elsewhere', { videoId: msg.videoId, toSlot: slot });
  }

  private async processAndCommit(now: number, received: ReadonlySet<string>): Promise<void> {
    const fence = this.fence!;
    const plans: { v: OwnedVideo; steps: SequencedStep[] }[] = [];
    for (const v of this.owned.values()) {
      // A video that just received frames may have its missing one right behind them.
      const steps = [...v.rejects, ...takeBounded(v.sequencer, now, !received.has(v.videoId))];
      v.rejects = [];
      if (steps.length > 0 || v.dirty) plans.push({ v, steps });
    }
    if (plans.length === 0) return;
    let outcomes: Map<string, FrameOutcome>;
    try {
      outcomes = await this.runFrames(plans);
    } catch (e) {
      this.d.log.error('batch failed before commit; reloading its videos from their checkpoints', { error: String(e) });
      await this.rollback(plans.map((p) => p.v));
      return;
    }
    const units = plans.map(({ v, steps }) => this.commitUnitFor(v, steps, outcomes, now));
    let outcome;
    try {
      outcome = await this.d.leases.commit(fence, units, now);
    } catch (e) {
      this.d.log.error('commit failed; reloading videos from their checkpoints', { error: String(e) });
      await this.rollback(plans.map((p) => p.v));
      return;
    }
    if (outcome.kind === 'slot-lost') {
      this.d.metrics.count(METRIC_NAMES.worker.commitsFenced);
      this.d.log.error('commit rejected: slot lease no longer ours (fenced)', { slot: fence.slot, epoch: fence.epoch });
      this.loseLease('commit fenced by the store');
      return;
    }
    const fenced = outcome.kind === 'videos-fenced' ? new Set(outcome.videoIds) : new Set<string>();
    const toDelete: string[] = [];
    for (const u of units) {
      const v = this.owned.get(u.videoId)!;
      if (fenced.has(u.videoId)) {
        this.d.metrics.count(METRIC_NAMES.worker.commitsFenced);
        this.d.log.warn('commit rejected for video: lease moved (fenced)', { videoId: u.videoId, token: u.token });
        await this.drop(v, true);
        continue;
      }
      v.committed = u.checkpoint;
      v.dirty = false;
      toDelete.push(...v.handles);
      v.handles = [];
      this.countCommitted(u.results);
    }
    if (toDelete.length > 0) {
      const failed = await this.d.queues.delete(fence.slot, toDelete);
      if (failed > 0) this.d.log.warn('some deletes failed; redeliveries will be recognised as duplicates', { failed });
    }
    for (const u of units) {
      const v = this.owned.get(u.videoId);
      if (v && u.checkpoint.complete) await this.release(v, 'end-of-stream');
    }
  }

  /** Turns one video's sequenced steps and their outcomes into results, checkpoint and summary. */
  private commitUnitFor(v: OwnedVideo, steps: readonly SequencedStep[], outcomes: ReadonlyMap<string, FrameOutcome>, now: number): CommitUnit {
    const fence = this.fence!;
    const prev = v.committed;
    const results: FrameResultItem[] = [];
    let { framesOk, framesFailed, framesGap, firstFrame, lastFrame } = prev;
    const base = { videoId: v.videoId, token: v.token, worker: fence.workerId, committedAtMs: now };
    const note = (frame: number) => {
      firstFrame = firstFrame === undefined ? frame : Math.min(firstFrame, frame);
      lastFrame = lastFrame === undefined ? frame : Math.max(lastFrame, frame);
    };
    for (const step of steps) {
      if (step.type === 'gap') {
        const run = step.throughFrame - step.frame + 1;
        framesGap += run;
        note(step.frame);
        note(step.throughFrame);
        if (run <= MAX_GAP_ITEMS_PER_RUN) {
          for (let f = step.frame; f <= step.throughFrame; f++) results.push({ ...base, frame: f, status: 'gap', detections: [], reason: step.reason });
        } else {
          results.push({ ...base, frame: step.frame, status: 'gap', detections: [], reason: step.reason, throughFrame: step.throughFrame });
        }
      } else if (step.type === 'reject') {
        framesFailed++;
        results.push({ ...base, frame: step.ref.frame, status: 'failed', detections: [], reason: step.reason, key: step.ref.key });
        this.d.log.warn('frame outside the video rejected', { videoId: v.videoId, frame: step.ref.frame, reason: step.reason });
      } else {
        note(step.ref.frame);
        const outcome = outcomes.get(`${v.videoId}:${step.ref.frame}`)!;
        if (outcome.status === 'ok') {
          framesOk++;
          results.push({ ...base, frame: step.ref.frame, status: 'ok', detections: outcome.detections, key: step.ref.key });
        } else {
          framesFailed++;
          const detail = outcome.detail ? { detail: outcome.detail.slice(0, 500) } : {};
          results.push({ ...base, frame: step.ref.frame, status: 'failed', detections: [], reason: outcome.reason, ...detail, key: step.ref.key });
          this.d.log.warn('frame failed', { videoId: v.videoId, frame: step.ref.frame, reason: outcome.reason, detail: outcome.detail });
        }
      }
    }
    const checkpoint: VideoCheckpoint = {
      ...prev,
      seq: prev.seq + 1,
      sequencer: v.sequencer.snapshot(),
      processor: this.d.processor.snapshot(v.videoId),
      framesOk,
      framesFailed,
      framesGap,
      ...(firstFrame !== undefined ? { firstFrame } : {}),
      ...(lastFrame !== undefined ? { lastFrame } : {}),
      complete: v.sequencer.isComplete(),
    };
    return {
      videoId: v.videoId,
      token: v.token,
      expectedSeq: prev.seq,
      checkpoint,
      results,
      summary: summaryOf(v.videoId, checkpoint, { token: v.token, worker: fence.workerId, slot: fence.slot }, now),
    };
  }

  /** Metrics for results once they are durable. */
  private countCommitted(results: readonly FrameResultItem[]): void {
    let processed = 0;
    for (const r of results) {
      if (r.status === 'ok') processed++;
      else if (r.status === 'gap') this.d.metrics.count(METRIC_NAMES.worker.framesGap, (r.throughFrame ?? r.frame) - r.frame + 1);
      else this.d.metrics.count(METRIC_NAMES.worker.framesFailed, 1, { Reason: r.reason ?? 'unknown' });
    }
    if (processed > 0) this.d.metrics.count(METRIC_NAMES.worker.framesProcessed, processed);
  }

  /** Fetches the frames to process and runs each video's frames through the processor as soon as they are in. */
  private async runFrames(plans: readonly { v: OwnedVideo; steps: SequencedStep[] }[]): Promise<Map<string, FrameOutcome>> {
    const outcomes = new Map<string, FrameOutcome>();
    const wanted: { videoId: string; ref: { frame: number; bucket: string; key: string; sizeBytes: number } }[] = [];
    for (const { v, steps } of plans) {
      for (const s of steps) {
        if (s.type !== 'frame') continue;
        const id = `${v.videoId}:${s.ref.frame}`;
        if (s.ref.sizeBytes === 0) outcomes.set(id, { status: 'failed', reason: 'empty-object', detail: 'zero-byte object' });
        else if (s.ref.sizeBytes > this.d.tunables.maxFrameBytes) {
          outcomes.set(id, { status: 'failed', reason: 'oversized', detail: `${s.ref.sizeBytes} bytes > maxFrameBytes ${this.d.tunables.maxFrameBytes}` });
        } else wanted.push({ videoId: v.videoId, ref: s.ref });
      }
    }
    if (wanted.length === 0) return outcomes;
    this.d.log.debug('processing batch', { frames: wanted.length, videos: plans.length });
    // Each video's frames go to the processor as soon as they are fetched, so S3 GETs of
    // one video overlap inference of another: the processor's micro-batcher merges the
    // concurrent calls into cross-video batches (full, or after maxBatchWaitMs).
    const byVideo = new Map<string, typeof wanted>();
    for (const w of wanted) {
      const list = byVideo.get(w.videoId);
      if (list) list.push(w);
      else byVideo.set(w.videoId, [w]);
    }
    const fetchSlots = new Semaphore(FETCH_CONCURRENCY);
    await Promise.all(
      [...byVideo.values()].map(async (frames) => {
        const inputs = await Promise.all(
          frames.map(async (w): Promise<FrameInput | undefined> => {
            try {
              const image = await fetchSlots.run(() => this.d.frames.get(w.ref.bucket, w.ref.key));
              return { videoId: w.videoId, frame: w.ref.frame, image };
            } catch (e) {
              if (!(e instanceof ObjectMissingError)) throw e;
              outcomes.set(`${w.videoId}:${w.ref.frame}`, { status: 'failed', reason: 'object-missing', detail: e.message });
              return undefined;
            }
          }),
        );
        const present = inputs.filter((i): i is FrameInput => i !== undefined);
        if (present.length === 0) return;
        const started = this.now();
        const results = await this.d.processor.process(present);
        this.d.metrics.milliseconds(METRIC_NAMES.worker.inferenceLatencyMs, (this.now() - started) / present.length);
        present.forEach((input, i) => outcomes.set(`${input.videoId}:${input.frame}`, results[i]!));
      }),
    );
    return outcomes;
  }

  /** Forgets in-memory progress of these videos and makes their messages visible again at once. */
  private async rollback(videos: readonly OwnedVideo[]): Promise<void> {
    for (const v of videos) await this.drop(v, true);
  }

  private async drop(v: OwnedVideo, redeliverNow: boolean): Promise<void> {
    this.d.processor.closeVideo(v.videoId);
    this.owned.delete(v.videoId);
    if (redeliverNow && v.handles.length > 0) {
      try {
        await this.d.queues.extendVisibility(this.fence!.slot, v.handles, 0);
      } catch (e) {
        this.d.log.warn('could not reset visibility; messages return after the timeout', { error: String(e) });
      }
    }
  }

  // ------------------------------------------------------------------ housekeeping

  private async housekeeping(): Promise<void> {
    const now = this.now();
    const idleMs = this.d.tunables.videoIdleReleaseSeconds * 1000;
    for (const v of [...this.owned.values()]) {
      if (!v.dirty && v.handles.length === 0 && !v.sequencer.hasPending() && now - v.lastActivityMs >= idleMs) {
        await this.release(v, 'idle');
      }
    }
  }

  private async release(v: OwnedVideo, why: 'idle' | 'end-of-stream'): Promise<void> {
    const fence = this.fence!;
    const ok = await this.d.leases.releaseVideo(v.videoId, fence, v.token, v.committed.seq, this.now(), this.d.tunables.releasedVideoRetentionDays);
    this.d.processor.closeVideo(v.videoId);
    this.owned.delete(v.videoId);
    this.d.metrics.count(METRIC_NAMES.worker.videosReleased, 1, { Why: why });
    this.d.log.info('video released', { videoId: v.videoId, why, ok, token: v.token, framesOk: v.committed.framesOk });
  }

  /** Keeps received messages invisible while a slow batch is still being processed. */
  private startVisibilityExtender(handles: readonly string[]): { stop(): void } {
    if (handles.length === 0) return { stop() {} };
    const seconds = this.d.tunables.slotQueueVisibilitySeconds;
    const timer = setInterval(() => {
      void this.d.queues.extendVisibility(this.fence!.slot, handles, seconds).catch((e) => {
        this.d.log.warn('visibility extension failed', { error: String(e) });
      });
    }, (seconds * 1000) / 2);
    return { stop: () => clearInterval(timer) };
  }
}

function adoptedSequencer(options: ConstructorParameters<typeof VideoSequencer>[0], state: SequencerState, now: number, graceMs: number): VideoSequencer {
  const seq = new VideoSequencer(options, state);
  seq.restartWait(now, graceMs);
  return seq;
}

/** Takes sequenced steps without exceeding one transaction's worth of result items. */
function takeBounded(seq: VideoSequencer, now: number, mayGap: boolean): SequencedStep[] {
  return seq.take(now, MAX_RESULT_ITEMS_PER_COMMIT, (s) => {
    if (s.type !== 'gap') return 1;
    const run = s.throughFrame - s.frame + 1;
    return run <= MAX_GAP_ITEMS_PER_RUN ? run : 1;
  }, mayGap);
}

/** Bounds concurrent S3 GETs across the videos of a batch. */
class Semaphore {
  private free: number;
  private readonly waiting: (() => void)[] = [];

  constructor(size: number) {
    this.free = size;
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.free > 0) this.free--;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.free++;
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
