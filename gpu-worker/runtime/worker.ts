/**
 * The worker runtime: holds one slot (slot-keeper.ts), receives that slot's FIFO queue,
 * keeps each video's frames in order (core/sequencer.ts), runs them (frame-runner.ts),
 * and commits results together with the checkpoint that covers them (commit-builder.ts),
 * fenced by the slot epoch and the video token.
 *
 * Message life cycle: a message is deleted only after the commit whose checkpoint covers
 * it (as a processed frame, a record, or a reference in the reorder buffer) is durable.
 *
 * Rounds overlap behind a backlog (the last receive came back full; at a live rate the
 * commit is awaited, so rounds stay whole): a round's commit runs in the background while
 * the next round receives, fetches, decodes and infers. The videos of the commit in flight
 * sit that round out (their FIFO groups are blocked anyway until its deletes), a receive
 * that brings one of them waits for the commit first, and commits stay one at a time in
 * round order, so each video still sees rounds strictly one after another.
 *
 * Receive ahead: once the commit in flight is applied, a worker behind a backlog receives
 * the next messages while its round is still running, starts their frames' S3 GETs
 * (frame-prefetch.ts) and hands the bytes to the processor to decode ahead
 * (vision/prepared-ahead.ts), so the next round starts inferring at once instead of after
 * a receive, a GET and a batch of decodes. Messages received ahead are kept invisible
 * from the moment they arrive and, if the loop ends before their round, handed back to
 * the queue at once.
 *
 * Faults cost one video a few seconds, never the slot: a video whose round fails is
 * restored alone from its last checkpoint and retried with backoff; a frame that keeps
 * failing is parked as a `failed` record with its reason; errors the loop does not
 * expect are logged, counted and survived. Only a lost lease ends the process early.
 *
 * Idle exit: a worker that owns no video, finds none pinned to its slot and has received
 * nothing for `workerIdleExitSeconds` releases its slot and ends (`idle`), so an idle fleet
 * drains to zero tasks; the next frame for the slot launches a task again.
 */
import type { Tunables } from '../../core/config.ts';
import { parseEndMarkerBody } from '../../core/keys.ts';
import { parseSlotMessage, type SlotMessage } from '../../core/messages.ts';
import type { FrameProcessor, LogSink, MetricSink } from '../../core/ports.ts';
import { VideoSequencer, type FrameRef, type SequencedStep } from '../../core/sequencer.ts';
import type { VideoCheckpoint } from '../../core/checkpoint.ts';
import type { CommitOutcome, LeaseStore, SlotFence, UnitOutcome } from '../../core/lease-store.ts';
import { estimatedBytes, MAX_CHECKPOINT_BYTES } from '../../core/commit-packing.ts';
import type { FrameResultItem } from '../../core/results.ts';
import { getFrameResult, type ResultsSource } from '../../core/results-reader.ts';
import type { ReceivedMessage, SlotQueues } from '../../core/slot-queues.ts';
import { ObjectMissingError, padWidthOf, type FrameStore } from '../../core/frame-store.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import { SlotKeeper, sleep } from './slot-keeper.ts';
import { FrameRunner, errorCode } from './frame-runner.ts';
import { buildCommit } from './commit-builder.ts';
import { FramePrefetch } from './frame-prefetch.ts';

export type WorkerLog = LogSink;

export interface WorkerDeps {
  readonly workerId: string;
  /** The slot to claim; undefined = the first free one. */
  readonly slot?: number;
  readonly tunables: Tunables;
  readonly leases: LeaseStore;
  readonly queues: SlotQueues;
  readonly frames: FrameStore;
  /** The frame bucket, listed to confirm gaps and find where a video starts. */
  readonly bucket: string;
  /** The results table: a frame's record tells a late frame from a duplicate. */
  readonly results: ResultsSource;
  readonly processor: FrameProcessor;
  readonly metrics: MetricSink;
  readonly log: WorkerLog;
  readonly now?: () => number;
  /** Called on every confirmed heartbeat (health file for the container health check). */
  readonly onHeartbeat?: () => void;
  /** Called the moment the slot lease is lost or cannot be confirmed; the run loop ends within one poll. */
  readonly onLeaseLost?: (reason: string) => void;
}

/** Why the run loop ended; main.ts maps it to an exit code. */
export type ExitReason = 'drained' | 'idle' | 'lease-lost' | 'no-slot';

/** Most result items one video commits per round (a transaction holds 100 items). */
const MAX_RESULT_ITEMS_PER_COMMIT = 80;
/** Longest long poll; it also bounds how long a drain or a lost lease waits for the receive in progress. */
export const MAX_POLL_WAIT_SECONDS = 5;
/** After this many failed rounds in a row, a video's blamed frames are parked as failures. */
export const MAX_VIDEO_FAILURES = 4;
const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 30_000;
/** Unpadded keys are listed whole, at most this many pages of 1,000. */
const MAX_UNPADDED_LISTING_PAGES = 100;

interface OwnedVideo {
  readonly videoId: string;
  readonly token: number;
  /** Last committed checkpoint. */
  committed: VideoCheckpoint;
  sequencer: VideoSequencer;
  lastActivityMs: number;
  /** Frames outside the video waiting for their failure record. */
  rejects: Extract<SequencedStep, { type: 'reject' }>[];
  /** Receipt handles to delete once this video's next commit is durable. */
  handles: string[];
  /** Whether anything changed since the last commit. */
  dirty: boolean;
  /** Zero-padding width of the video's keys, when they show one (listings can then seek). */
  padWidth?: number;
  /** Failed rounds in a row, and no work before `retryAtMs` (backoff). */
  failures: number;
  retryAtMs: number;
  /** Frames blamed by failed rounds, with the reason: parked once `failures` reaches the limit. */
  blamed: Map<number, string>;
  /**
   * Frames this worker committed a final record for (ok, late or failed), most recent
   * last: a redelivery of one is a duplicate without reading its record. Bounded.
   */
  settled: Set<number>;
  /** Frames a commit found already recorded: left out of later rounds. */
  recorded: Set<number>;
}

/** One video's share of a round, built while the round ran, committed after it. */
interface RoundUnit {
  readonly v: OwnedVideo;
  readonly unit: ReturnType<typeof buildCommit>['unit'];
  /** Frames parked (given up on) in this unit, for the metric once it is durable. */
  readonly parked: number;
  /** The receipt handles the unit's checkpoint covers: deleted once it is durable. */
  readonly handles: readonly string[];
}

/** Received messages, and the extender keeping them invisible until their round takes over. */
interface Received {
  readonly messages: ReceivedMessage[];
  readonly extender: { stop(): void };
}

/**
 * Rounds that do not receive ahead after one whose receive ahead found nothing: each empty
 * one is an extra SQS call (a lone busy video, whose group its own round blocks, never has
 * messages ahead), so a queue without other videos' messages pays for one in four rounds.
 */
const AHEAD_SKIP_ROUNDS_AFTER_EMPTY = 3;

/** Most messages one receive asks for (SQS's limit); a receive that fills it finds a backlog. */
const RECEIVE_MAX_MESSAGES = 10;

/** How many settled frames a video remembers. */
const SETTLED_MEMORY_FRAMES = 512;

export class Worker {
  private readonly d: WorkerDeps;
  private readonly now: () => number;
  private readonly owned = new Map<string, OwnedVideo>();
  private readonly keeper: SlotKeeper;
  private readonly runner: FrameRunner;
  private stopRequested = false;
  /** When the last receive brought messages (or the slot was claimed): the idle-exit clock. */
  private lastMessageAtMs = 0;
  /** The previous round's commit, running while the next round is processed; never rejects. */
  private pendingCommit: Promise<boolean> | undefined;
  /** Videos of {@link pendingCommit}: left out of rounds until it is applied. */
  private readonly committing = new Set<string>();
  /** Frame bytes fetched for the receive ahead (see {@link receiveAhead}). */
  private readonly prefetch: FramePrefetch;
  /** The next round's messages, received while this round runs; never rejects. */
  private ahead: Promise<Received> | undefined;
  private aheadSkips = 0;

  constructor(deps: WorkerDeps) {
    this.d = deps;
    this.now = deps.now ?? Date.now;
    this.keeper = new SlotKeeper({
      workerId: deps.workerId,
      ...(deps.slot !== undefined ? { slot: deps.slot } : {}),
      tunables: deps.tunables,
      leases: deps.leases,
      metrics: deps.metrics,
      log: deps.log,
      now: this.now,
      ...(deps.onHeartbeat ? { onHeartbeat: deps.onHeartbeat } : {}),
      onLost: (reason) => deps.onLeaseLost?.(reason),
    });
    this.prefetch = new FramePrefetch(deps.frames, { now: this.now, onFetched: (bytes) => deps.processor.prepareAhead?.(bytes) });
    this.runner = new FrameRunner({
      frames: deps.frames,
      prefetch: this.prefetch,
      processor: deps.processor,
      results: deps.results,
      tunables: deps.tunables,
      metrics: deps.metrics,
      log: deps.log,
      now: this.now,
    });
  }

  get slot(): number | undefined {
    return this.keeper.fence?.slot;
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

  private get lost(): boolean {
    return this.keeper.lost !== undefined;
  }

  private get fence(): SlotFence {
    return this.keeper.fence!;
  }

  async run(): Promise<ExitReason> {
    await this.d.processor.start();
    this.d.log.info('processor ready', { processor: this.d.processor.description, provider: this.d.processor.provider });
    // onnxruntime can fall back to CPU silently: report what really runs.
    if (this.d.processor.provider) this.d.metrics.count(METRIC_NAMES.worker.executionProvider, 1, { Provider: this.d.processor.provider });
    const fence = await this.keeper.claim(() => this.stopRequested);
    if (!fence) return 'no-slot';
    this.d.log.info('slot claimed', { slot: fence.slot, epoch: fence.epoch, workerId: fence.workerId });
    this.d.metrics.count(METRIC_NAMES.worker.slotsClaimed);
    this.keeper.startHeartbeat();
    let exit: 'drained' | 'idle' = 'drained';
    try {
      // Take over every video already pinned to this slot (a predecessor's), so their
      // checkpoints — including buffered frames — resume even if no new message comes.
      await this.survive('adopt-pinned', async () => {
        for (const videoId of await this.d.leases.listPinned(fence.slot)) {
          if (this.lost) break;
          await this.ensureOwned(videoId);
        }
      });
      let idle = false;
      this.lastMessageAtMs = this.now();
      while (!this.stopRequested && !this.lost) {
        const { messages, extender } = await this.nextMessages(idle);
        if (this.lost) {
          extender.stop();
          await this.giveBack(messages);
          break;
        }
        if (messages.length > 0) this.lastMessageAtMs = this.now();
        const worked = await this.survive('batch', () => this.handle(messages, extender));
        await this.survive('housekeeping', () => this.housekeeping());
        idle = messages.length === 0 && worked !== true;
        if (idle && (await this.survive('idle-exit', () => this.idleExitDue())) === true) {
          exit = 'idle';
          break;
        }
      }
    } finally {
      // Messages received ahead of a round that will not run go back to the queue at once.
      const ahead = await this.takeAhead();
      if (ahead) await this.giveBack(ahead.messages);
      ahead?.extender.stop();
      // Whatever ends the loop, the last round's commit finishes (or is fenced) under the lease.
      await this.settleCommit();
      this.keeper.stopHeartbeat();
    }
    if (this.lost) return 'lease-lost';
    // Drain or idle exit: everything received has been committed and deleted (or handed
    // back); hand the slot off now rather than making a successor wait for the lease to run out.
    await this.keeper.release();
    if (exit === 'idle') {
      this.d.log.info('idle: released slot and exiting', { slot: fence.slot, idleSeconds: Math.round((this.now() - this.lastMessageAtMs) / 1000) });
    } else {
      this.d.log.info('drained and released slot', { slot: fence.slot, videos: this.ownedVideos });
    }
    await this.d.processor.stop();
    return exit;
  }

  /**
   * Whether the worker may exit for idleness: it owns no video, has received nothing for
   * `workerIdleExitSeconds`, and no video is pinned to its slot. The router pins a video
   * before it sends the video's first frame, so a pin this worker has not seen means frames
   * are on their way (or a predecessor's video was never adopted): such videos are adopted,
   * as at start, and released by the idle rule if nothing comes, rather than left pinned to
   * a slot without an owner. Released videos the index still lists are not taken back.
   */
  private async idleExitDue(): Promise<boolean> {
    const limitSeconds = this.d.tunables.workerIdleExitSeconds;
    if (limitSeconds === 0 || this.owned.size > 0) return false;
    if (this.now() - this.lastMessageAtMs < limitSeconds * 1000) return false;
    for (const videoId of await this.d.leases.listPinned(this.fence.slot)) {
      if (this.lost) return false;
      await this.ensureOwned(videoId, async () => false);
    }
    return this.owned.size === 0 && !this.lost && !this.stopRequested;
  }

  /** Runs one part of the loop; an error it did not expect is logged and counted, and the loop goes on. */
  private async survive<T>(where: string, fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn();
    } catch (e) {
      this.d.log.error('worker error survived', { where, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: where });
      await sleep(1000);
      return undefined;
    }
  }

  // ------------------------------------------------------------------ receive

  /**
   * The messages received ahead during the last round if it brought any, else a receive
   * now; either way their visibility is kept extended from the moment they arrive.
   */
  private async nextMessages(idle: boolean): Promise<Received> {
    const ahead = await this.takeAhead();
    if (ahead && ahead.messages.length > 0) return ahead;
    const messages = await this.receive(idle);
    return { messages, extender: this.startVisibilityExtender(messages.map((m) => m.receiptHandle)) };
  }

  private takeAhead(): Promise<Received> | undefined {
    const ahead = this.ahead;
    this.ahead = undefined;
    return ahead;
  }

  /** Frames fetched ahead of their round, and how many of them a round used. */
  get prefetchedFrames(): { readonly started: number; readonly used: number } {
    return { started: this.prefetch.started, used: this.prefetch.used };
  }

  /**
   * While a round runs behind a backlog, receive the next messages (without waiting: the
   * backlog has them) and start fetching (and, through the prefetch, decoding) their
   * frames, so the next round does not begin with a receive and a GET latency while the
   * model waits. Only other videos can come back: a video in this round has messages in
   * flight, which blocks its FIFO group. The next round handles these exactly as if it
   * had received them itself.
   */
  private receiveAhead(): void {
    if (this.ahead || this.stopRequested || this.lost) return;
    if (this.aheadSkips > 0) {
      this.aheadSkips--;
      return;
    }
    // After the commit in flight: until it has deleted its messages, its videos' groups are blocked.
    this.ahead = (this.pendingCommit ?? Promise.resolve()).then(() => this.receive(false, 0)).then((messages) => {
      if (messages.length === 0) this.aheadSkips = AHEAD_SKIP_ROUNDS_AFTER_EMPTY;
      const extender = this.startVisibilityExtender(messages.map((m) => m.receiptHandle));
      this.prefetch.prefetch(
        messages.flatMap((m) => {
          const msg = parseSlotMessage(m.body);
          return msg?.kind === 'frame' && msg.sizeBytes <= this.d.tunables.maxFrameBytes ? [msg] : [];
        }),
      );
      return { messages, extender };
    });
  }

  private async receive(idle: boolean, waitSeconds = this.pollWaitSeconds(idle)): Promise<ReceivedMessage[]> {
    try {
      const messages = await this.d.queues.receive(this.fence.slot, RECEIVE_MAX_MESSAGES, waitSeconds);
      // How long frames waited in the slot queue: one fleet-wide series for the age alarm.
      const sentAt = messages.flatMap((m) => (m.sentAtMs !== undefined ? [m.sentAtMs] : []));
      if (sentAt.length > 0) this.d.metrics.milliseconds(METRIC_NAMES.worker.slotMessageAgeMs, Math.max(0, this.now() - Math.min(...sentAt)));
      return messages;
    } catch (e) {
      if (this.stopRequested || this.lost) return [];
      this.d.log.warn('receive failed', { error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'receive' });
      await sleep(1000);
      return [];
    }
  }

  /** Long-poll unless a video has work due sooner; never spin when the last round did nothing. */
  private pollWaitSeconds(idle: boolean): number {
    const now = this.now();
    let soonestMs = Infinity;
    for (const v of this.owned.values()) {
      if (v.retryAtMs > now) {
        soonestMs = Math.min(soonestMs, v.retryAtMs);
        continue;
      }
      if (v.rejects.length > 0 || v.dirty) soonestMs = now;
      const deadline = v.sequencer.nextDeadlineMs();
      if (deadline !== undefined) soonestMs = Math.min(soonestMs, deadline);
    }
    if (soonestMs === Infinity) return MAX_POLL_WAIT_SECONDS;
    const wait = Math.min(MAX_POLL_WAIT_SECONDS, Math.max(0, Math.ceil((soonestMs - now) / 1000)));
    return idle ? Math.max(1, wait) : wait;
  }

  /** Makes messages received after the lease was lost visible again at once, for the successor. */
  private async giveBack(messages: readonly ReceivedMessage[]): Promise<void> {
    if (messages.length === 0) return;
    try {
      await this.d.queues.extendVisibility(this.fence.slot, messages.map((m) => m.receiptHandle), 0);
    } catch (e) {
      this.d.log.warn('could not hand messages back; they return after the visibility timeout', { error: errorText(e) });
    }
  }

  // ------------------------------------------------------------------ one batch

  /**
   * Handles one receive and runs what is due, then starts its commit in the background
   * (after the previous round's has been applied); true when anything was or is being committed.
   */
  private async handle(messages: readonly ReceivedMessage[], receivedExtender: { stop(): void }): Promise<boolean> {
    const now = this.now();
    // A full receive means a backlog: only then do rounds overlap and receive ahead. At a
    // live rate a receive after the round finds more messages than one during it, and the
    // receive made while a commit still blocks its videos' groups would bring only the
    // other videos: rounds (and commits, deletes, receives) would halve in size for nothing.
    const backlog = messages.length >= RECEIVE_MAX_MESSAGES;
    const byVideo = new Map<string, { msg: SlotMessage; handle: string }[]>();
    const immediateDeletes: string[] = [];
    let extender = receivedExtender;
    try {
      for (const m of messages) {
        const msg = parseSlotMessage(m.body);
        if (!msg) {
          if (await this.deadLetter(m.body, 'malformed-message', 'malformed')) immediateDeletes.push(m.receiptHandle);
          this.d.metrics.count(METRIC_NAMES.worker.messagesDeadLettered, 1, { Reason: 'malformed-message' });
          continue;
        }
        const list = byVideo.get(msg.videoId);
        if (list) list.push({ msg, handle: m.receiptHandle });
        else byVideo.set(msg.videoId, [{ msg, handle: m.receiptHandle }]);
      }
      // A video of the commit in flight takes new messages only once that commit is applied
      // (its outcome may restore the video, or delete exactly the handles it covers).
      let committed = false;
      if ([...byVideo.keys()].some((videoId) => this.committing.has(videoId))) committed = await this.settleCommit();
      for (const [videoId, items] of byVideo) {
        if (this.lost) return committed;
        await this.acceptVideo(videoId, items, now, immediateDeletes);
      }
      if (immediateDeletes.length > 0) await this.deleteMessages(immediateDeletes);
      if (this.lost) return committed;
      await this.listWhereNeeded(now);
      if (backlog) this.receiveAhead();
      const round = await this.processRound(now);
      committed = (await this.settleCommit()) || committed;
      if (!round || this.lost) return committed;
      // The commit keeps this round's messages invisible until it has deleted them.
      const roundExtender = extender;
      extender = { stop() {} };
      for (const { v } of round) this.committing.add(v.videoId);
      this.pendingCommit = this.commitRound(round, now)
        .catch((e: unknown) => {
          this.d.log.error('worker error survived', { where: 'commit', error: errorText(e) });
          this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'commit' });
          return false;
        })
        .finally(() => {
          roundExtender.stop();
          this.committing.clear();
        });
      if (!backlog) await this.settleCommit();
      return true;
    } finally {
      extender.stop();
    }
  }

  /** Waits for the commit in flight, if any, to be applied; whether it committed anything. */
  private async settleCommit(): Promise<boolean> {
    const pending = this.pendingCommit;
    if (!pending) return false;
    const committed = await pending;
    if (this.pendingCommit === pending) this.pendingCommit = undefined;
    return committed;
  }

  /** Takes one video's messages of a receive: forward them, or offer them to its sequencer. */
  private async acceptVideo(videoId: string, items: readonly { msg: SlotMessage; handle: string }[], now: number, immediateDeletes: string[]): Promise<void> {
    let owner: OwnedVideo | number | 'lost' | 'nothing-new';
    try {
      owner = await this.ensureOwned(videoId, (released) => this.anyNews(videoId, released, items));
      if (owner === 'nothing-new') {
        // Redeliveries for a released video that change nothing: no need to take it back.
        for (const { handle } of items) immediateDeletes.push(handle);
        this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate, items.length);
        this.d.log.info('duplicates for a released video dropped', { videoId, messages: items.length });
        return;
      }
    } catch (e) {
      // Left in flight: they return after the visibility timeout, and nothing else waits on them.
      this.d.log.warn('could not settle the lease of a video; its messages will come back', { videoId, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'ensure-owned' });
      return;
    }
    if (owner === 'lost') return;
    if (typeof owner === 'number') {
      for (const { msg, handle } of items) if (await this.forward(msg, owner)) immediateDeletes.push(handle);
      return;
    }
    const v = owner;
    if (v.retryAtMs > now) {
      // The video is backing off after a failure: its messages come back when it retries.
      await this.holdBack(items.map((i) => i.handle), v.retryAtMs - now);
      return;
    }
    try {
      for (const { msg, handle } of items) {
        v.handles.push(handle);
        v.lastActivityMs = now;
        v.dirty = true;
        await this.accept(v, msg, now);
      }
    } catch (e) {
      await this.failRound(v, errorCode(e), errorText(e), [], now);
    }
  }

  private async accept(v: OwnedVideo, msg: SlotMessage, now: number): Promise<void> {
    if (msg.kind === 'end') {
      let endFrame: number | undefined;
      let problem = 'end marker body is not a frame number';
      try {
        endFrame = parseEndMarkerBody(await this.d.frames.getText(msg.bucket, msg.key));
      } catch (e) {
        if (!(e instanceof ObjectMissingError)) throw e;
        problem = 'end marker object is missing';
      }
      if (endFrame === undefined) {
        this.d.log.warn('bad end-of-stream marker ignored', { videoId: v.videoId, key: msg.key, problem });
        this.d.metrics.count(METRIC_NAMES.worker.eventsRejected, 1, { Reason: 'bad-end-marker' });
        if (!(await this.deadLetter(JSON.stringify(msg), `bad-end-marker: ${problem}`, v.videoId))) throw new Error('could not dead-letter a bad end marker');
        return;
      }
      v.sequencer.setEnd(endFrame);
      this.d.log.info('end of stream announced', { videoId: v.videoId, endFrame });
      return;
    }
    const ref: FrameRef = { frame: msg.frame, bucket: msg.bucket, key: msg.key, sizeBytes: msg.sizeBytes };
    v.padWidth ??= padWidthOf(msg.key);
    const offered = v.sequencer.offer(ref, now);
    if (offered === 'accepted') return;
    if (offered === 'duplicate') {
      this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate);
      return;
    }
    if (v.settled.has(msg.frame)) {
      this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate);
      return;
    }
    // Below the tracker, or outside the video: the frame's record is the source of truth.
    const record = await getFrameResult(this.d.results, v.videoId, msg.frame);
    if (record && record.status !== 'gap') {
      this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate);
      return;
    }
    if (offered === 'below') {
      v.sequencer.addLate(ref, record?.status === 'gap');
      this.d.log.info('late frame accepted', { videoId: v.videoId, frame: msg.frame, replacesGap: record?.status === 'gap' });
      return;
    }
    if (!v.rejects.some((r) => r.ref.frame === ref.frame)) {
      v.rejects.push({ type: 'reject', ref, reason: offered === 'after-end' ? 'after-end-of-stream' : 'before-first-frame' });
    }
  }

  /**
   * Finds or takes the lease of a video. Returns the owned state, the slot to forward
   * to when the video lives elsewhere, or `lost` when our slot is gone.
   */
  private async ensureOwned(videoId: string, takeReleased?: (released: VideoCheckpoint) => Promise<boolean>): Promise<OwnedVideo | number | 'lost' | 'nothing-new'> {
    const existing = this.owned.get(videoId);
    if (existing) return existing;
    const fence = this.fence;
    for (let attempt = 0; attempt < 4; attempt++) {
      const adopted = await this.d.leases.adoptVideo(videoId, fence, this.now());
      if (adopted === 'slot-lost') {
        this.keeper.lose('adoption fenced: the slot lease moved on');
        return 'lost';
      }
      if (adopted !== 'not-here') return this.own(videoId, adopted.token, adopted.checkpoint);
      const current = await this.d.leases.getVideo(videoId);
      if (current.pinnedSlot !== undefined && current.pinnedSlot !== fence.slot) return current.pinnedSlot;
      // Released (idle or finished) while the router still sent here: take it ourselves,
      // unless what came is only redeliveries of what it already has.
      if (current.pinnedSlot === undefined) {
        if (takeReleased && current.state === 'released' && !(await takeReleased(current.checkpoint))) return 'nothing-new';
        await this.d.leases.pinVideo(videoId, fence.slot, this.now());
      }
    }
    if (this.lost) return 'lost';
    throw new Error(`could not settle the lease of video ${videoId}`);
  }

  /**
   * Whether messages for a released video carry anything new: a frame without a final
   * record (new, or late for a gap), or an end marker a finished video has not seen.
   */
  private async anyNews(videoId: string, released: VideoCheckpoint, items: readonly { msg: SlotMessage }[]): Promise<boolean> {
    for (const { msg } of items) {
      if (msg.kind === 'end') {
        if (!released.complete) return true;
        continue;
      }
      const record = await getFrameResult(this.d.results, videoId, msg.frame);
      if (!record || record.status === 'gap') return true;
    }
    return false;
  }

  private own(videoId: string, token: number, ck: VideoCheckpoint): OwnedVideo {
    this.d.processor.openVideo(videoId, ck.processor);
    const known = ck.sequencer.buffered[0]?.key;
    const v: OwnedVideo = {
      videoId,
      token,
      committed: ck,
      sequencer: new VideoSequencer(this.d.tunables, ck.sequencer),
      lastActivityMs: this.now(),
      rejects: [],
      handles: [],
      dirty: false,
      ...(known && padWidthOf(known) !== undefined ? { padWidth: padWidthOf(known) } : {}),
      failures: 0,
      retryAtMs: 0,
      blamed: new Map(),
      settled: new Set(),
      recorded: new Set(),
    };
    this.owned.set(videoId, v);
    this.d.metrics.count(METRIC_NAMES.worker.videoLeasesAdopted);
    if (ck.owners.length > 1) this.d.metrics.count(METRIC_NAMES.worker.videoTakeovers);
    this.d.log.info('video adopted', {
      videoId,
      token,
      nextFrame: ck.sequencer.nextFrame,
      buffered: ck.sequencer.buffered.length,
      previousOwner: ck.owners.at(-2)?.worker,
    });
    return v;
  }

  /** Sends a frame of a video pinned elsewhere to its slot (same body, so the same dedup id and replay tag). */
  private async forward(msg: SlotMessage, slot: number): Promise<boolean> {
    try {
      const [outcome] = await this.d.queues.send(slot, [{ message: msg }]);
      if (!outcome?.ok) throw new Error(outcome?.ok === false ? outcome.error : 'no outcome');
    } catch (e) {
      this.d.log.warn('forward failed; the message will come back', { videoId: msg.videoId, toSlot: slot, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'forward' });
      return false;
    }
    this.d.metrics.count(METRIC_NAMES.worker.framesForwarded);
    this.d.log.info('forwarded frame of a video pinned elsewhere', { videoId: msg.videoId, toSlot: slot });
    return true;
  }

  private async deadLetter(body: string, reason: string, groupId: string): Promise<boolean> {
    try {
      await this.d.queues.deadLetter(this.fence.slot, body, reason, groupId);
      this.d.log.warn('slot message dead-lettered', { reason });
      return true;
    } catch (e) {
      this.d.log.warn('dead-lettering failed; the message will come back', { reason, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'dead-letter' });
      return false;
    }
  }

  private async deleteMessages(handles: readonly string[]): Promise<void> {
    try {
      const failed = await this.d.queues.delete(this.fence.slot, handles);
      if (failed > 0) this.d.log.warn('some deletes failed; redeliveries will be recognised as duplicates', { failed });
    } catch (e) {
      this.d.log.warn('delete failed; redeliveries will be recognised as duplicates', { error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'delete' });
    }
  }

  private async holdBack(handles: readonly string[], forMs: number): Promise<void> {
    try {
      await this.d.queues.extendVisibility(this.fence.slot, handles, Math.min(43_200, Math.max(1, Math.ceil(forMs / 1000))));
    } catch (e) {
      this.d.log.warn('could not hold messages back; they return after the visibility timeout', { error: errorText(e) });
    }
  }

  /** Lists the videos whose sequencer needs S3's word before deciding (start, or a frame overdue). */
  private async listWhereNeeded(now: number): Promise<void> {
    for (const v of this.owned.values()) {
      if (v.retryAtMs > now || this.committing.has(v.videoId)) continue;
      const want = v.sequencer.listingNeeded(now);
      if (!want) continue;
      try {
        const pages = v.padWidth !== undefined ? 1 : MAX_UNPADDED_LISTING_PAGES;
        const listing = await this.d.frames.listFrames(this.d.bucket, v.videoId, want.fromFrame, v.padWidth, pages);
        v.sequencer.learnListing(want.fromFrame, listing.frames, listing.complete, now);
        this.d.metrics.count(METRIC_NAMES.worker.framesListed, listing.requests, { Why: want.why });
        this.d.log.debug('listed frames', { videoId: v.videoId, fromFrame: want.fromFrame, why: want.why, found: listing.frames.length, complete: listing.complete });
      } catch (e) {
        this.d.log.warn('listing failed; will retry', { videoId: v.videoId, error: errorText(e) });
        this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'list' });
        v.retryAtMs = now + 1000;
      }
    }
  }

  /**
   * Runs the due steps of every video not in the commit in flight, and builds their
   * commit units; undefined when there is nothing to commit.
   */
  private async processRound(now: number): Promise<RoundUnit[] | undefined> {
    const plans: { v: OwnedVideo; steps: SequencedStep[] }[] = [];
    for (const v of this.owned.values()) {
      if (v.retryAtMs > now || this.committing.has(v.videoId)) continue;
      const rejects = v.rejects.splice(0, MAX_RESULT_ITEMS_PER_COMMIT);
      const room = MAX_RESULT_ITEMS_PER_COMMIT - rejects.length;
      const taken: SequencedStep[] = [...rejects, ...(room > 0 ? v.sequencer.take(now, room) : [])];
      const steps = v.recorded.size === 0 ? taken : taken.filter((st) => !v.recorded.has(st.type === 'gap' ? st.frame : st.ref.frame));
      if (steps.length > 0 || v.dirty) plans.push({ v, steps });
    }
    if (plans.length === 0) return undefined;
    const runs = await this.runner.run(
      plans.map(({ v, steps }) => ({ videoId: v.videoId, steps, parked: v.failures >= MAX_VIDEO_FAILURES ? v.blamed : new Map<number, string>() })),
    );
    const built: RoundUnit[] = [];
    for (const { v, steps } of plans) {
      const run = runs.get(v.videoId)!;
      if (!run.ok) {
        await this.failRound(v, run.reason, run.detail, run.blamed, now);
        continue;
      }
      const { unit, failures } = buildCommit({
        videoId: v.videoId,
        token: v.token,
        workerId: this.fence.workerId,
        slot: this.fence.slot,
        committed: v.committed,
        steps,
        outcomes: run.outcomes,
        sequencer: v.sequencer.snapshot(),
        complete: v.sequencer.isComplete(),
        processor: this.processorSnapshot(v),
        nowMs: now,
      });
      for (const f of failures) this.d.log.warn('frame failed', { videoId: v.videoId, ...f });
      const parked = v.failures >= MAX_VIDEO_FAILURES ? steps.filter((s) => (s.type === 'frame' || s.type === 'late') && v.blamed.has(s.ref.frame)).length : 0;
      built.push({ v, unit, parked, handles: [...v.handles] });
    }
    return built.length > 0 ? built : undefined;
  }

  /**
   * Commits a round's units and applies each video's outcome; true when anything was
   * committed. The store decides "landed" by commit id and never throws once anything may
   * have landed (issue 19); per video:
   * - `landed`: the checkpoint is durable: delete the handles it covers, count, release at
   *   end of stream;
   * - `{ conflict }`: a result met an existing record: roll back, leave that frame out;
   * - `fenced` / `stale`: the lease or the stored checkpoint moved: drop the video (a later
   *   message re-adopts it from the stored checkpoint);
   * - `not-landed`: nothing written, the lease still ours: roll back and retry (failRound);
   * - `unknown`: it may have landed, so it is never rolled back blind: its handles stay
   *   undeleted (the round's extender keeps them invisible) and the video is re-read until
   *   the store answers, then applied as landed or rolled back.
   * Self-contained on purpose: the worker split ports it as one piece.
   */
  private async commitRound(built: readonly RoundUnit[], now: number): Promise<boolean> {
    let outcome: CommitOutcome;
    try {
      outcome = await this.d.leases.commit(this.fence, built.map((b) => b.unit), now);
    } catch (e) {
      // commit() throws only before sending anything; read a throw as "unknown" all the same
      // (re-read below), so that no path rolls back a unit that may have landed.
      this.d.log.warn('commit threw; re-reading its videos before deciding', { error: errorText(e) });
      outcome = { kind: 'settled', outcomes: new Map(built.map((b) => [b.v.videoId, 'unknown'] as const)), ambiguousRetries: 0 };
    }
    if (outcome.kind === 'slot-lost') {
      this.d.metrics.count(METRIC_NAMES.worker.commitsFenced);
      this.d.log.error('commit rejected: slot lease no longer ours (fenced)', { slot: this.fence.slot, epoch: this.fence.epoch });
      this.keeper.lose('commit fenced by the store');
      return false;
    }
    // Resolve every `unknown` first, by re-reading the video (resolveUnit) with a backoff
    // until the store answers. While it is down nothing else of these videos can commit
    // anyway, and a lost slot ends the wait (the successor decides from the stored state).
    const decided = new Map<string, UnitOutcome>();
    for (const { v, unit } of built) {
      let o: UnitOutcome = outcome.outcomes.get(v.videoId) ?? 'unknown';
      for (let attempt = 0; o === 'unknown' && !this.lost; attempt++) {
        try {
          const stored = await this.d.leases.resolveUnit(this.fence, unit);
          o = stored === 'at-expected' ? 'not-landed' : stored;
        } catch (e) {
          this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'commit-unknown' });
          this.d.log.warn('commit outcome unknown and the re-read failed; keeping its messages and reading again', { videoId: v.videoId, attempt, error: errorText(e) });
          await new Promise((r) => setTimeout(r, Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** attempt)));
        }
      }
      decided.set(v.videoId, o);
    }
    const toDelete: string[] = [];
    const landed = new Set<string>();
    for (const { v, unit, parked, handles } of built) {
      const o = decided.get(v.videoId)!;
      // Still unknown only when the slot was lost meanwhile: nothing rolled back, nothing
      // deleted; the successor restores the video from the stored state.
      if (o === 'unknown') continue;
      if (typeof o === 'object') {
        // A record this commit would create already exists, so the frame is settled: the
        // retry leaves it out (the existing record stands) and the rest goes through.
        v.recorded.add(o.conflict);
        await this.failRound(v, 'record-exists', `frame ${o.conflict} already has a record`, [o.conflict], now);
        continue;
      }
      if (o === 'fenced' || o === 'stale') {
        this.d.metrics.count(METRIC_NAMES.worker.commitsFenced);
        this.d.log.warn('commit rejected for video: lease moved (fenced)', { videoId: v.videoId, token: v.token, outcome: o });
        await this.drop(v);
        continue;
      }
      if (o !== 'landed') {
        // Known not written, lease still ours: restore from the last committed checkpoint.
        await this.failRound(v, 'commit-error', `commit ${o}`, [], now);
        continue;
      }
      landed.add(v.videoId);
      v.committed = unit.checkpoint;
      // Only the handles the checkpoint covers; the video took no messages since (handle()).
      const covered = new Set(handles);
      v.handles = v.handles.filter((h) => !covered.has(h));
      v.dirty = v.handles.length > 0;
      toDelete.push(...handles);
      if (parked > 0) this.d.metrics.count(METRIC_NAMES.worker.framesParked, parked);
      if (v.failures >= MAX_VIDEO_FAILURES) v.blamed.clear();
      v.failures = 0;
      this.d.metrics.count(METRIC_NAMES.worker.checkpointBytes, estimatedBytes(unit.checkpoint));
      this.countCommitted(unit.results);
      remember(v.settled, unit.results.filter((r) => r.status !== 'gap').map((r) => r.frame));
    }
    if (toDelete.length > 0) await this.deleteMessages(toDelete);
    for (const { v, unit } of built) {
      if (unit.checkpoint.complete && landed.has(v.videoId) && this.owned.has(v.videoId)) await this.release(v, 'end-of-stream');
    }
    return true;
  }

  /**
   * The processor's snapshot for the checkpoint, compacted when the checkpoint would
   * outgrow {@link MAX_CHECKPOINT_BYTES} (the tracker evicts its oldest lost tracks).
   */
  private processorSnapshot(v: OwnedVideo): string {
    const full = this.d.processor.snapshot(v.videoId);
    const rest = estimatedBytes({ ...v.committed, processor: undefined, sequencer: v.sequencer.snapshot() });
    // The snapshot is stored as a string: JSON escaping of its quotes and its key add a
    // few percent to the estimate, so the processor gets a little less than the gap.
    const room = Math.floor((MAX_CHECKPOINT_BYTES - rest) * 0.97) - 64;
    if (Buffer.byteLength(full) <= room) return full;
    const compact = this.d.processor.snapshot(v.videoId, Math.max(0, room));
    this.d.log.warn('checkpoint over its cap: processor state compacted', { videoId: v.videoId, fullBytes: Buffer.byteLength(full), compactBytes: Buffer.byteLength(compact), room });
    return compact;
  }

  /**
   * A video's round failed: restore it alone from its last checkpoint, give its messages
   * back after a backoff, and remember the frames to blame. Nothing else is rolled back.
   */
  private async failRound(v: OwnedVideo, reason: string, detail: string, blamed: readonly number[], now: number): Promise<void> {
    v.failures++;
    for (const f of blamed) v.blamed.set(f, reason);
    const backoffMs = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (v.failures - 1));
    this.d.metrics.count(METRIC_NAMES.worker.videoRollbacks, 1, { Reason: reason });
    this.d.log.warn('video round failed; restored from its checkpoint, retrying after a backoff', {
      videoId: v.videoId,
      reason,
      detail: detail.slice(0, 300),
      blamed,
      failures: v.failures,
      parksAfter: MAX_VIDEO_FAILURES,
      backoffMs,
    });
    this.d.processor.closeVideo(v.videoId);
    this.d.processor.openVideo(v.videoId, v.committed.processor);
    v.sequencer = new VideoSequencer(this.d.tunables, v.committed.sequencer);
    v.rejects = [];
    v.dirty = false;
    v.retryAtMs = now + backoffMs;
    const handles = v.handles;
    v.handles = [];
    if (handles.length > 0) await this.holdBack(handles, backoffMs);
  }

  /** Metrics for results once they are durable. */
  private countCommitted(results: readonly FrameResultItem[]): void {
    let processed = 0;
    let late = 0;
    let gaps = 0;
    for (const r of results) {
      if (r.status === 'ok') processed++;
      else if (r.status === 'late') late++;
      else if (r.status === 'gap') gaps++;
      else this.d.metrics.count(METRIC_NAMES.worker.framesFailed, 1, { Reason: r.reason ?? 'unknown' });
    }
    if (processed > 0) this.d.metrics.count(METRIC_NAMES.worker.framesProcessed, processed);
    if (late > 0) this.d.metrics.count(METRIC_NAMES.worker.framesLate, late);
    if (gaps > 0) this.d.metrics.count(METRIC_NAMES.worker.framesGap, gaps);
  }

  /** Forgets a video whose lease moved, and makes its messages visible again at once. */
  private async drop(v: OwnedVideo): Promise<void> {
    this.d.processor.closeVideo(v.videoId);
    this.owned.delete(v.videoId);
    if (v.handles.length > 0) await this.holdBack(v.handles, 0).catch(() => undefined);
  }

  // ------------------------------------------------------------------ housekeeping

  private async housekeeping(): Promise<void> {
    const now = this.now();
    const idleMs = this.d.tunables.videoIdleReleaseSeconds * 1000;
    for (const v of [...this.owned.values()]) {
      if (this.committing.has(v.videoId)) continue;
      // A video backing off after a failure is not idle: releasing it would forget its failures.
      const failing = v.failures > 0 || v.retryAtMs > now;
      if (!failing && !v.dirty && v.handles.length === 0 && v.rejects.length === 0 && !v.sequencer.hasPending() && now - v.lastActivityMs >= idleMs) {
        await this.release(v, 'idle');
      }
    }
  }

  private async release(v: OwnedVideo, why: 'idle' | 'end-of-stream'): Promise<void> {
    let ok: boolean;
    try {
      ok = await this.d.leases.releaseVideo(v.videoId, this.fence, v.token, v.committed.seq, this.now(), this.d.tunables.releasedVideoRetentionDays);
    } catch (e) {
      // Still ours and committed: the next housekeeping round tries again once it is idle.
      this.d.log.warn('video release failed; will retry when idle', { videoId: v.videoId, why, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'release' });
      return;
    }
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
      void this.d.queues.extendVisibility(this.fence.slot, handles, seconds).catch((e) => {
        this.d.log.debug('visibility extension failed (messages may already be deleted)', { error: errorText(e) });
      });
    }, (seconds * 1000) / 2);
    return { stop: () => clearInterval(timer) };
  }
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

function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
