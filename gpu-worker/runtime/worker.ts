/**
 * The worker runtime: sequences the I/O of one slot and nothing else. The decisions live
 * in small units:
 * - slot-keeper.ts holds the slot lease (claim, heartbeat, lost);
 * - slot-inbox.ts holds every receipt handle (receive, receive ahead, visibility,
 *   delete, hand back, dead-letter, forward);
 * - video-registry.ts holds the video leases (adopt, forward elsewhere, release, drop);
 * - video-session.ts is one video between commits (offer, plan, applyCommitted, rollback);
 * - round-policy.ts decides backlog, receive ahead, overlap, poll wait, idle exit;
 * - round-builder.ts runs a round (frame-runner.ts) and builds its commit units;
 * - commit-pipeline.ts says what a commit's answer means for each video.
 *
 * Message life cycle: a message is deleted only after the commit whose checkpoint covers
 * it (as a processed frame, a record, or a reference in the reorder buffer) has landed.
 * Until then it stays in this process, kept invisible; a failed round or an unreachable
 * store never hands it back to the queue (a receive is what SQS's redrive counts).
 *
 * Behind a backlog a round's commit runs while the next round is processed (decision 19),
 * and the round after is received and its frames fetched and decoded meanwhile (decision
 * 21); a video's rounds never overlap, and commits stay one at a time in round order.
 */
import type { Tunables } from '../../core/config.ts';
import { parseEndMarkerBody } from '../../core/keys.ts';
import type { SlotMessage } from '../../core/messages.ts';
import type { FrameProcessor, LogSink, MetricSink } from '../../core/ports.ts';
import type { VideoCheckpoint } from '../../core/checkpoint.ts';
import type { CommitOutcome, LeaseStore, SlotFence } from '../../core/lease-store.ts';
import { estimatedBytes } from '../../core/commit-packing.ts';
import type { FrameResultItem } from '../../core/results.ts';
import { getFrameResult, type ResultsSource } from '../../core/results-reader.ts';
import type { SlotQueues } from '../../core/slot-queues.ts';
import { ObjectMissingError, type FrameStore } from '../../core/frame-store.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import { SlotKeeper, sleep } from './slot-keeper.ts';
import { FrameRunner, errorCode } from './frame-runner.ts';
import { FramePrefetch } from './frame-prefetch.ts';
import { SlotInbox, type InboxMessage } from './slot-inbox.ts';
import { VideoRegistry } from './video-registry.ts';
import type { VideoSession } from './video-session.ts';
import { buildRound, type RoundFailure, type RoundUnit } from './round-builder.ts';
import { commitActions, settleInDoubt } from './commit-pipeline.ts';
import { aheadSkipsAfter, decideRound, idleExitCandidate, pollWaitSeconds, storeOutageWait } from './round-policy.ts';

export { MAX_POLL_WAIT_SECONDS } from './round-policy.ts';
export { MAX_VIDEO_FAILURES } from './video-session.ts';

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

/** Unpadded keys are listed whole, at most this many pages of 1,000. */
const MAX_UNPADDED_LISTING_PAGES = 100;

type ReadyMessage = InboxMessage & { readonly msg: SlotMessage };

export class Worker {
  private readonly d: WorkerDeps;
  private readonly now: () => number;
  private readonly keeper: SlotKeeper;
  private readonly runner: FrameRunner;
  private readonly prefetch: FramePrefetch;
  private inbox: SlotInbox | undefined;
  private registry: VideoRegistry | undefined;
  private stopRequested = false;
  /** When the last receive brought messages (or the slot was claimed): the idle-exit clock. */
  private lastMessageAtMs = 0;
  /** The previous round's commit, running while the next round is processed; never rejects. */
  private pendingCommit: Promise<boolean> | undefined;
  /** Videos of {@link pendingCommit}: left out of rounds until it is applied. */
  private readonly committing = new Set<string>();
  /** Units whose commit answer was lost: their videos wait, held, until a read settles them. */
  private readonly inDoubt = new Map<string, RoundUnit>();
  /** Messages held until the store can place them (it could not be reached). */
  private waiting: InboxMessage[] = [];
  private storeAttempts = 0;
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
    return this.registry?.ids() ?? [];
  }

  /** Frames fetched ahead of their round, and how many of them a round used. */
  get prefetchedFrames(): { readonly started: number; readonly used: number } {
    return { started: this.prefetch.started, used: this.prefetch.used };
  }

  /** Asks the loop to drain: finish the current batch, commit, release the slot. */
  requestStop(): void {
    // The receive in progress is not aborted: SQS may already have handed its messages
    // out, and abandoning them would hide them for a whole visibility timeout. The drain
    // hands them back instead; a poll lasts at most MAX_POLL_WAIT_SECONDS.
    this.stopRequested = true;
  }

  private get lost(): boolean {
    return this.keeper.lost !== undefined;
  }

  private get ending(): boolean {
    return this.stopRequested || this.lost;
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
    const inbox = new SlotInbox({ slot: fence.slot, queues: this.d.queues, tunables: this.d.tunables, prefetch: this.prefetch, metrics: this.d.metrics, log: this.d.log, now: this.now });
    const registry = new VideoRegistry({
      tunables: this.d.tunables,
      leases: this.d.leases,
      processor: this.d.processor,
      metrics: this.d.metrics,
      log: this.d.log,
      now: this.now,
      fence: () => this.fence,
      loseSlot: (reason) => this.keeper.lose(reason),
      slotLost: () => this.lost,
    });
    this.inbox = inbox;
    this.registry = registry;
    this.keeper.startHeartbeat();
    inbox.startKeeper();
    let exit: 'drained' | 'idle' = 'drained';
    try {
      // Take over every video already pinned to this slot (a predecessor's), so their
      // checkpoints (buffered frames included) resume even if no new message comes.
      await this.survive('adopt-pinned', () => registry.adoptPinned());
      let idle = false;
      this.lastMessageAtMs = this.now();
      while (!this.ending) {
        if (!(await this.retryStoreWork())) continue;
        const messages = await this.nextMessages(idle);
        if (this.lost) break;
        if (messages.length > 0) this.lastMessageAtMs = this.now();
        const worked = await this.survive('batch', () => this.handle(messages));
        await this.survive('housekeeping', () => this.housekeeping());
        idle = messages.length === 0 && worked !== true;
        if (idle && (await this.survive('idle-exit', () => this.idleExitDue())) === true) {
          exit = 'idle';
          break;
        }
      }
    } finally {
      // Messages received ahead of a round that will not run go back to the queue.
      await inbox.takeAhead();
      // Whatever ends the loop, the last round's commit finishes (or is fenced) under the lease.
      await this.settleCommit();
      // Stop extending before handing back, so no extension lands after a hand-back.
      await inbox.stopKeeper();
      await inbox.giveBackAll();
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
   * Whether the worker may exit for idleness: it owns no video and holds no message,
   * has received nothing for `workerIdleExitSeconds`, and no video is pinned to its slot.
   * The router pins a video before it sends the video's first frame, so a pin this worker
   * has not seen means frames are on their way (or a predecessor's video was never
   * adopted): such videos are adopted, as at start, and released by the idle rule if
   * nothing comes. Released videos the index still lists are not taken back.
   */
  private async idleExitDue(): Promise<boolean> {
    const registry = this.registry!;
    const candidate = idleExitCandidate({
      idleExitSeconds: this.d.tunables.workerIdleExitSeconds,
      ownedVideos: registry.size,
      heldMessages: this.inbox!.heldCount,
      lastMessageAtMs: this.lastMessageAtMs,
      nowMs: this.now(),
    });
    if (!candidate) return false;
    await registry.adoptPinned(async () => false);
    return registry.size === 0 && !this.ending;
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

  // ------------------------------------------------------------------ the store unreachable

  /**
   * Retries what waits on the store: messages it could not place, commits whose answer
   * was lost. True when nothing waits any more (the loop may receive); otherwise the
   * loop has paused for a backoff and receives nothing new.
   */
  private async retryStoreWork(): Promise<boolean> {
    if (this.waiting.length === 0 && this.inDoubt.size === 0) {
      this.storeAttempts = 0;
      return true;
    }
    this.storeAttempts++;
    await this.survive('settle-in-doubt', () => this.settleInDoubtUnits());
    const waiting = this.waiting;
    this.waiting = [];
    if (waiting.length > 0) await this.survive('retry-placement', () => this.accept(waiting, this.now()));
    if (this.waiting.length === 0 && this.inDoubt.size === 0) {
      this.d.log.info('store reachable again; resuming', { attempts: this.storeAttempts });
      this.storeAttempts = 0;
      return true;
    }
    const { retryInMs } = storeOutageWait(this.storeAttempts);
    this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'store-pause' });
    this.d.log.warn('store unreachable: holding messages and receiving nothing new', { waiting: this.waiting.length, inDoubt: [...this.inDoubt.keys()], retryInMs });
    await sleep(retryInMs);
    // Rounds of videos that do not wait on the store still run meanwhile.
    await this.survive('batch', () => this.handle([]));
    return false;
  }

  /** Reads the lease of each video whose commit answer was lost, and applies what it says. */
  private async settleInDoubtUnits(): Promise<void> {
    for (const [videoId, unit] of [...this.inDoubt]) {
      const stored = await this.d.leases.getVideo(videoId);
      this.inDoubt.delete(videoId);
      const verdict = settleInDoubt(stored, unit, this.fence);
      this.d.log.info('commit in doubt settled', { videoId, verdict });
      if (verdict === 'landed' || verdict === 'landed-moved') {
        await this.inbox!.delete(this.applyLanded(unit));
        if (verdict === 'landed-moved') await this.dropVideo(unit.session);
        else if (unit.unit.checkpoint.complete) await this.registry!.release(unit.session, 'end-of-stream');
      } else if (verdict === 'not-landed') {
        this.rollback({ session: unit.session, reason: 'commit-unknown', detail: 'the commit did not land', blamed: [], transient: true }, this.now());
      } else {
        await this.dropVideo(unit.session);
      }
    }
  }

  // ------------------------------------------------------------------ receive

  /** The messages received ahead during the last round if it brought any, else a receive now. */
  private async nextMessages(idle: boolean): Promise<InboxMessage[]> {
    const ahead = this.inbox!.takeAhead();
    if (ahead) {
      const messages = await ahead;
      this.aheadSkips = aheadSkipsAfter(messages.length);
      if (messages.length > 0) return messages;
    }
    const now = this.now();
    const wake = this.registry!.all().map((s) => (this.committing.has(s.videoId) ? undefined : s.nextWakeMs(now)));
    return this.inbox!.receive(pollWaitSeconds(wake, now, idle), () => this.ending);
  }

  // ------------------------------------------------------------------ one round

  /**
   * Accepts one receive, runs what is due, then starts its commit (after the previous
   * round's has been applied); true when anything was or is being committed.
   */
  private async handle(messages: readonly InboxMessage[]): Promise<boolean> {
    const now = this.now();
    const decision = decideRound({
      received: messages.length,
      aheadInFlight: this.inbox!.aheadInFlight,
      aheadSkips: this.aheadSkips,
      ending: this.ending,
      storeDown: this.waiting.length > 0 || this.inDoubt.size > 0,
    });
    this.aheadSkips = decision.aheadSkips;
    let committed = false;
    // A video of the commit in flight takes new messages only once that commit is applied
    // (its outcome may restore the video, or delete exactly the handles it covers).
    if (messages.some((m) => m.msg && this.committing.has(m.msg.videoId))) committed = await this.settleCommit();
    await this.accept(messages, now);
    if (this.lost) return committed;
    await this.listWhereNeeded(now);
    if (decision.receiveAhead) {
      this.inbox!.receiveAhead(this.pendingCommit ?? Promise.resolve(), () => this.ending, (msg) => this.registry!.get(msg.videoId)?.wouldRun(msg.frame, now) === true);
    }
    const eligible = this.registry!.all().filter((s) => !s.backingOff(now) && !this.committing.has(s.videoId) && !this.inDoubt.has(s.videoId));
    const round = await buildRound({ runner: this.runner, processor: this.d.processor, log: this.d.log }, eligible, this.fence, now);
    // An outage fails every video that fetched; a frame's own fault leaves the others working.
    const someFetched = round.units.some((u) => u.plan.steps.some((s) => s.type === 'frame' || s.type === 'late'));
    for (const f of round.failures) this.rollback(f, now, !f.transient || someFetched);
    committed = (await this.settleCommit()) || committed;
    if (round.units.length === 0 || this.lost) return committed;
    for (const { session } of round.units) this.committing.add(session.videoId);
    this.pendingCommit = this.commitRound(round.units, now)
      .catch((e: unknown) => {
        this.d.log.error('worker error survived', { where: 'commit', error: errorText(e) });
        this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'commit' });
        return false;
      })
      .finally(() => this.committing.clear());
    if (decision.commit === 'await') await this.settleCommit();
    return true;
  }

  /** Waits for the commit in flight, if any, to be applied; whether it committed anything. */
  private async settleCommit(): Promise<boolean> {
    const pending = this.pendingCommit;
    if (!pending) return false;
    const committed = await pending;
    if (this.pendingCommit === pending) this.pendingCommit = undefined;
    return committed;
  }

  /** Places each message: dead-letter, drop as old news, forward, or offer to its video's session. */
  private async accept(messages: readonly InboxMessage[], now: number): Promise<void> {
    const byVideo = new Map<string, ReadyMessage[]>();
    for (const m of messages) {
      if (!m.msg) {
        if (!(await this.inbox!.deadLetter(m, 'malformed-message', 'malformed'))) this.waiting.push(m);
        continue;
      }
      const list = byVideo.get(m.msg.videoId);
      if (list) list.push(m as ReadyMessage);
      else byVideo.set(m.msg.videoId, [m as ReadyMessage]);
    }
    for (const [videoId, items] of byVideo) {
      if (this.lost) return;
      await this.acceptVideo(videoId, items, now);
    }
  }

  /** One video's messages of a receive; those the store cannot take now wait, held, for the next try. */
  private async acceptVideo(videoId: string, items: readonly ReadyMessage[], now: number): Promise<void> {
    const inbox = this.inbox!;
    let placed;
    try {
      placed = await this.registry!.place(videoId, (released) => this.anyNews(videoId, released, items));
    } catch (e) {
      this.d.log.warn('could not settle the lease of a video; holding its messages', { videoId, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'ensure-owned' });
      this.waiting.push(...items);
      return;
    }
    if (placed === 'lost') return;
    if (placed === 'nothing-new') {
      // Redeliveries for a released video that change nothing: no need to take it back.
      await inbox.delete(items.map((i) => i.handle));
      this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate, items.length);
      this.d.log.info('duplicates for a released video dropped', { videoId, messages: items.length });
      return;
    }
    if (typeof placed === 'number') {
      for (const m of items) if (!(await inbox.forward(m, placed))) this.waiting.push(m);
      return;
    }
    for (let i = 0; i < items.length; i++) {
      try {
        await this.offer(placed, items[i]!.msg, now);
      } catch (e) {
        // Its record or end marker could not be read: this message and the rest wait.
        this.d.log.warn('could not take a message; holding it for the next try', { videoId, error: errorText(e), code: errorCode(e) });
        this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'accept' });
        this.waiting.push(...items.slice(i));
        return;
      }
      placed.takeHandle(items[i]!.handle, now);
    }
  }

  /** Offers one message to its video's session; throws only when a read it needs failed. */
  private async offer(s: VideoSession, msg: SlotMessage, now: number): Promise<void> {
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
        this.d.log.warn('bad end-of-stream marker ignored', { videoId: s.videoId, key: msg.key, problem });
        this.d.metrics.count(METRIC_NAMES.worker.eventsRejected, 1, { Reason: 'bad-end-marker' });
        // Parked with its reason; the original is deleted with the video's next commit.
        if (!(await this.inbox!.park(JSON.stringify(msg), `bad-end-marker: ${problem}`, s.videoId))) throw new Error('could not dead-letter a bad end marker');
        return;
      }
      s.setEnd(endFrame);
      this.d.log.info('end of stream announced', { videoId: s.videoId, endFrame });
      return;
    }
    const ref = { frame: msg.frame, bucket: msg.bucket, key: msg.key, sizeBytes: msg.sizeBytes };
    const offered = s.offerFrame(ref, now);
    if (offered.kind === 'accepted') return;
    if (offered.kind === 'duplicate') {
      this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate);
      return;
    }
    // Below the tracker, or outside the video: the frame's record is the source of truth.
    const record = await getFrameResult(this.d.results, s.videoId, msg.frame);
    const decided = s.resolveWithRecord(ref, offered, record?.status);
    if (decided === 'duplicate') this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate);
    else if (decided === 'late') this.d.log.info('late frame accepted', { videoId: s.videoId, frame: msg.frame, replacesGap: record?.status === 'gap' });
  }

  /**
   * Whether messages for a released video carry anything new: a frame without a final
   * record (new, or late for a gap), or an end marker a finished video has not seen.
   */
  private async anyNews(videoId: string, released: VideoCheckpoint, items: readonly ReadyMessage[]): Promise<boolean> {
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

  /** Lists the videos whose sequencer needs S3's word before deciding (start, or a frame overdue). */
  private async listWhereNeeded(now: number): Promise<void> {
    for (const s of this.registry!.all()) {
      if (s.backingOff(now) || this.committing.has(s.videoId) || this.inDoubt.has(s.videoId)) continue;
      const want = s.sequencer.listingNeeded(now);
      if (!want) continue;
      try {
        const pages = s.padWidth !== undefined ? 1 : MAX_UNPADDED_LISTING_PAGES;
        const listing = await this.d.frames.listFrames(this.d.bucket, s.videoId, want.fromFrame, s.padWidth, pages);
        s.learnListing(want.fromFrame, listing.frames, listing.complete, now);
        this.d.metrics.count(METRIC_NAMES.worker.framesListed, listing.requests, { Why: want.why });
        this.d.log.debug('listed frames', { videoId: s.videoId, fromFrame: want.fromFrame, why: want.why, found: listing.frames.length, complete: listing.complete });
      } catch (e) {
        this.d.log.warn('listing failed; will retry', { videoId: s.videoId, error: errorText(e) });
        this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'list' });
        s.retryAtMs = now + 1000;
      }
    }
  }

  // ------------------------------------------------------------------ commit

  /** Commits a round's units and carries out what the answer means; true when anything landed. */
  private async commitRound(units: readonly RoundUnit[], now: number): Promise<boolean> {
    let outcome: CommitOutcome | 'threw';
    try {
      outcome = await this.d.leases.commit(this.fence, units.map((u) => u.unit), now);
    } catch (e) {
      this.d.log.warn('commit outcome unknown; will re-read before deciding', { videos: units.map((u) => u.session.videoId), error: errorText(e) });
      outcome = 'threw';
    }
    const actions = commitActions(outcome, units);
    if (actions.slotLost) {
      this.d.metrics.count(METRIC_NAMES.worker.commitsFenced);
      this.d.log.error('commit rejected: slot lease no longer ours (fenced)', { slot: this.fence.slot, epoch: this.fence.epoch });
      this.keeper.lose('commit fenced by the store');
      return false;
    }
    const toDelete: string[] = [];
    const complete: VideoSession[] = [];
    let landed = false;
    for (const { unit, fate } of actions.fates) {
      const s = unit.session;
      if (fate.kind === 'landed') {
        toDelete.push(...this.applyLanded(unit));
        if (unit.unit.checkpoint.complete) complete.push(s);
        landed = true;
      } else if (fate.kind === 'conflict') {
        // A record this commit would create already exists, so the frame is settled: the
        // retry leaves it out (the existing record stands) and the rest goes through.
        s.recorded.add(fate.frame);
        this.rollback({ session: s, reason: 'record-exists', detail: `frame ${fate.frame} already has a record`, blamed: [fate.frame], transient: false }, now);
      } else if (fate.kind === 'fenced') {
        this.d.metrics.count(METRIC_NAMES.worker.commitsFenced);
        this.d.log.warn('commit rejected for video: lease moved (fenced)', { videoId: s.videoId, token: s.token });
        await this.dropVideo(s);
      } else {
        this.inDoubt.set(s.videoId, unit);
      }
    }
    await this.inbox!.delete(toDelete);
    for (const s of complete) if (this.registry!.get(s.videoId) === s) await this.registry!.release(s, 'end-of-stream');
    return landed;
  }

  /** A unit landed: its session moves on; returns the handles to delete. */
  private applyLanded(ru: RoundUnit): readonly string[] {
    const { deleteHandles } = ru.session.applyCommitted(ru.unit, ru.plan);
    if (ru.parked > 0) this.d.metrics.count(METRIC_NAMES.worker.framesParked, ru.parked);
    this.d.metrics.count(METRIC_NAMES.worker.checkpointBytes, estimatedBytes(ru.unit.checkpoint));
    this.countCommitted(ru.unit.results);
    return deleteHandles;
  }

  /** A video's round failed: restore it alone from its last checkpoint, keep its messages, back off. */
  private rollback(f: RoundFailure, now: number, counted = !f.transient): void {
    const s = f.session;
    const r = s.rollback(f.blamed, f.reason, counted, now);
    this.registry!.restoreProcessor(s, r.restoreProcessor);
    this.d.metrics.count(METRIC_NAMES.worker.videoRollbacks, 1, { Reason: f.reason });
    this.d.log.warn('video round failed; restored from its checkpoint, retrying after a backoff', {
      videoId: s.videoId,
      reason: f.reason,
      detail: f.detail.slice(0, 300),
      blamed: f.blamed,
      counted,
      failures: s.failures,
      backoffMs: r.backoffMs,
    });
  }

  /** Forgets a video whose lease moved, and makes its messages visible again at once for the new owner. */
  private async dropVideo(s: VideoSession): Promise<void> {
    this.inDoubt.delete(s.videoId);
    await this.inbox!.giveBack(this.registry!.drop(s));
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

  // ------------------------------------------------------------------ housekeeping

  private async housekeeping(): Promise<void> {
    const now = this.now();
    const idleMs = this.d.tunables.videoIdleReleaseSeconds * 1000;
    for (const s of this.registry!.all()) {
      if (this.committing.has(s.videoId) || this.inDoubt.has(s.videoId)) continue;
      if (s.idleReleaseDue(now, idleMs)) await this.registry!.release(s, 'idle');
    }
  }
}

function errorText(e: unknown): string {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}
