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
 * - every frame is read through the frame sources (gpu-worker/sources/port.ts): images
 *   and encoded segments behind one interface, which no unit here asks the kind of;
 * - commit-pipeline.ts says what a commit's answer means for each video;
 * - isolated-rounds.ts runs videos the crash-loop breaker suspects alone (decision 28),
 *   their frames tried first in a child process (frame-probe.ts, probe-process.ts; decision 41).
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
import type { SlotContext } from './slot-context.ts';
import { errorText } from '../../core/errors.ts';
import type { FrameProcessor } from '../../core/ports.ts';
import type { SlotFence } from '../../core/leases/port.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import { sleep } from '../../core/async.ts';
import { SlotKeeper } from './slot-keeper.ts';
import { FrameRunner } from './frame-runner.ts';
import { SlotInbox, type InboxMessage } from './slot-inbox.ts';
import { VideoRegistry } from './video-registry.ts';
import { MessageIntake } from './message-intake.ts';
import { RoundCommitter } from './round-committer.ts';
import { buildRound, type RoundBuilderDeps } from './round-builder.ts';
import { IsolatedRounds } from './crash/isolated-rounds.ts';
import { aheadHooks } from './ahead/ahead-hints.ts';
import { probedProcessor } from './crash/frame-probe.ts';
import { createFrameSources } from '../sources/frame-sources.ts';
import type { DecoderPlacement, FetchedAhead, FrameSources } from '../sources/port.ts';
import { letterboxGeometry } from '../vision/preprocess.ts';
import { aheadSkipsAfter, decideRound, gatherWaitMs, idleExitCandidate, pollWaitSeconds, storeOutageWait } from './round-policy.ts';

export { MAX_POLL_WAIT_SECONDS } from './round-policy.ts';
export { MAX_VIDEO_FAILURES } from './video-session.ts';
export type { ExitReason, WorkerDeps, WorkerLog } from './worker-deps.ts';
import type { ExitReason, WorkerDeps } from './worker-deps.ts';

/** How often a gather wait looks whether the loop is ending, ms. */
const GATHER_TICK_MS = 50;

export class Worker {
  private readonly d: WorkerDeps;
  private readonly now: () => number;
  private readonly keeper: SlotKeeper;
  private readonly runner: FrameRunner;
  /** What each object holds, and its frames' pixels (gpu-worker/sources/): the runtime never asks what kind an object is. */
  private readonly sources: FrameSources;
  private readonly roundDeps: RoundBuilderDeps;
  /** Isolated rounds' (crash-breaker.ts): the same, with the crash probe in front of the processor when there is one. */
  private readonly isolatedRoundDeps: RoundBuilderDeps;
  private inbox: SlotInbox | undefined;
  private registry: VideoRegistry | undefined;
  private intake: MessageIntake | undefined;
  private committer: RoundCommitter | undefined;
  private isolated: IsolatedRounds | undefined;
  private stopRequested = false;
  /** When the last receive brought messages (or the slot was claimed): the idle-exit clock. */
  private lastMessageAtMs = 0;
  /** The previous round's commit, running while the next round is processed; never rejects. */
  private pendingCommit: Promise<boolean> | undefined;
  /** Videos of {@link pendingCommit}: left out of rounds until it is applied. */
  private readonly committing = new Set<string>();
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
    this.sources = createFrameSources({
      frames: deps.frames,
      tunables: deps.tunables,
      metrics: deps.metrics,
      log: deps.log,
      now: this.now,
      // Bytes fetched ahead are decoded ahead, and those read ahead by predicted key detected ahead (decisions 39, 42).
      aheadHooks: aheadHooks(deps.processor, deps.tunables.detectAheadFrames, (videoId) => this.registry?.get(videoId), this.now),
      ...(deps.decodeDevice ? { decodeDevice: deps.decodeDevice } : {}),
      ...(deps.segmentCodec ? { segmentCodec: deps.segmentCodec } : {}),
      // Straight to the letterbox's size: a 1080p frame never exists as full-size RGB.
      resizeFor: (w, h) => {
        const input = deps.processor.inputSize;
        if (!input) return undefined;
        const g = letterboxGeometry(w, h, input.width, input.height);
        return { width: g.resizedWidth, height: g.resizedHeight };
      },
    });
    const runnerFor = (processor: FrameProcessor) => new FrameRunner({
      sources: this.sources,
      processor,
      records: deps.records,
      tunables: deps.tunables,
      metrics: deps.metrics,
      log: deps.log,
      now: this.now,
    });
    this.runner = runnerFor(deps.processor);
    const beforeRun: RoundBuilderDeps['beforeRun'] = (session, plan) => this.sources.readAhead(session.videoId, session.upcoming(plan));
    this.roundDeps = { runner: this.runner, processor: deps.processor, log: deps.log, ...(deps.rules ? { rules: deps.rules } : {}), resultsRetentionDays: deps.tunables.resultsRetentionDays, beforeRun, records: deps.records };
    // Isolated videos' frames are tried in the crash probe's child first (decision 41).
    const deathsToPark = deps.tunables.crashProbeDeaths;
    const probe = deathsToPark > 0 ? deps.probe : undefined;
    this.isolatedRoundDeps = probe
      ? { ...this.roundDeps, runner: runnerFor(probedProcessor(deps.processor, { probe, deathsToPark, metrics: deps.metrics, log: deps.log })) }
      : this.roundDeps;
  }

  get slot(): number | undefined {
    return this.keeper.fence?.slot;
  }

  /** Where this worker's segments decode now (the frame sources' decodersInUse): empty before any segment decoded. */
  get segmentDecoders(): DecoderPlacement[] {
    return this.sources.decodersInUse;
  }

  get ownedVideos(): string[] {
    return this.registry?.ids() ?? [];
  }

  /** Frames fetched ahead of their round, and how many of them a round used. */
  get prefetchedFrames(): FetchedAhead {
    return this.sources.fetchedAhead;
  }

  /** Asks the loop to drain: finish the current batch, commit, release the slot. */
  requestStop(): void {
    // The receive in progress is not aborted: SQS may have handed its messages out, and
    // abandoning them would hide them for a visibility timeout. The drain hands them back.
    this.stopRequested = true;
  }

  private get lost(): boolean {
    return this.keeper.lost !== undefined;
  }

  /**
   * Drain requested, slot lease lost, or the processor broken for good (a dead inference
   * thread): a process that heartbeats while every round fails would keep its slot from
   * a successor, so it drains and exits instead.
   */
  private get ending(): boolean {
    return this.stopRequested || this.lost || this.d.processor.fatal !== undefined;
  }

  private get fence(): SlotFence {
    return this.keeper.fence!;
  }

  async run(): Promise<ExitReason> {
    // The start path a failover waits for (issue 42; docs/deploy.md "Failover on AWS's
    // timeline"): the processor's start (CUDA context, model load) and the first confirmed
    // lease write (the claim). The process's own uptime adds what came before run() (Node,
    // imports); the image pull and ENI attach are ECS's (its task event's pull*At/startedAt).
    const runAtMs = this.now();
    await this.d.processor.start();
    const processorStartMs = this.now() - runAtMs;
    this.d.log.info('processor ready', { processor: this.d.processor.description, provider: this.d.processor.provider, processorStartMs });
    // onnxruntime can fall back to CPU silently: report what really runs.
    if (this.d.processor.provider) this.d.metrics.count(METRIC_NAMES.worker.executionProvider, 1, { Provider: this.d.processor.provider });
    // A hot spare or standby waits here, model loaded, until it is needed (decision 75).
    const standingBy = this.d.standBy ? await this.d.standBy() : {};
    if (standingBy === 'stop' || this.stopRequested) return 'no-slot';
    const fence = await this.keeper.claim(() => this.stopRequested, standingBy.slot);
    if (!fence) return 'no-slot';
    this.d.onClaimed?.(fence, this.keeper.confirmedExpiryMs);
    this.d.log.info('slot claimed', {
      slot: fence.slot,
      epoch: fence.epoch,
      workerId: fence.workerId,
      takenOver: this.keeper.takenOver,
      startPath: { processorStartMs, firstHeartbeatMs: this.now() - runAtMs, processUptimeMs: Math.round(process.uptime() * 1000) },
    });
    this.d.metrics.count(METRIC_NAMES.worker.slotsClaimed);
    // Taken from an owner that never released the slot: its videos will run isolated, through the probe (decision 41).
    if (this.keeper.takenOver && this.isolatedRoundDeps !== this.roundDeps) this.d.probe?.warm();
    // Fan-out (decision 30): videos whose groups may hold messages besides those just received.
    const idleVideos = (received: ReadonlySet<string>) => (this.registry?.size ? this.registry.ids().filter((id) => !received.has(id) && !this.busy(id)).length : undefined);
    // What the units ask of the slot, read when asked (the fence, its loss, the takeover).
    const worker = this;
    const slot: SlotContext = {
      get fence() {
        return worker.fence;
      },
      get lost() {
        return worker.lost;
      },
      get takenOver() {
        return worker.keeper.takenOver;
      },
      lose: (reason) => this.keeper.lose(reason),
      now: this.now,
    };
    const inbox = new SlotInbox({ slot, queues: this.d.queues, tunables: this.d.tunables, sources: this.sources, metrics: this.d.metrics, log: this.d.log, idleVideos, ownedVideos: () => this.registry?.size ?? 0 });
    const registry = new VideoRegistry({
      tunables: this.d.tunables,
      leases: this.d.leases,
      processor: this.d.processor,
      metrics: this.d.metrics,
      log: this.d.log,
      slot,
      replayDeletes: this.d.replayDeletes,
      // What was fetched or decoded ahead for a video let go is dropped (decision 51).
      onClose: (videoId) => void this.sources.closeVideo(videoId).catch(() => undefined),
    });
    this.inbox = inbox;
    this.registry = registry;
    const { metrics, log, tunables, leases } = this.d;
    this.intake = new MessageIntake({ inbox, registry, frames: this.d.frames, bucket: this.d.bucket, records: this.d.records, metrics, log, slot, inDoubt: (videoId) => this.committer!.inDoubt(videoId), sources: this.sources });
    this.committer = new RoundCommitter({ leases, inbox, registry, metrics, log, slot });
    const broken = () => this.d.processor.fatal !== undefined;
    this.isolated = new IsolatedRounds({ round: this.isolatedRoundDeps, committer: this.committer, registry, metrics, log, slot, redeliveryMs: tunables.slotQueueVisibilitySeconds * 1000, broken });
    this.keeper.startHeartbeat();
    inbox.startKeeper();
    let exit: 'drained' | 'idle' = 'drained';
    try {
      // Take over every video already pinned to this slot (a predecessor's), so their
      // checkpoints (buffered frames included) resume even if no new message comes.
      const adoptPinned = async (): Promise<boolean> =>
        (await this.survive('adopt-pinned', async () => {
          await registry.adoptPinned();
          return true;
        })) === true;
      let pinnedAdopted = await adoptPinned();
      let idle = false;
      this.lastMessageAtMs = this.now();
      while (!this.ending) {
        if (!(await this.retryStoreWork())) continue;
        const messages = await this.nextMessages(idle);
        if (this.lost) break;
        if (messages.length > 0) this.lastMessageAtMs = this.now();
        const worked = await this.survive('batch', () => this.handle(messages));
        await this.survive('housekeeping', () => this.housekeeping());
        // An adoption at start that failed (throttled, or its answer lost) is retried every
        // turn until one pass succeeds: a predecessor's buffered frames must not wait for a
        // new message of their video or for the idle rule (seed 1402 waited 14 s).
        if (!pinnedAdopted && !this.lost) pinnedAdopted = await adoptPinned();
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
      await this.d.probe?.stop();
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
    await this.sources.closeAll();
    await this.d.processor.stop();
    return exit;
  }

  /**
   * Whether the worker may exit for idleness: no video owned, no message held, nothing
   * received for `workerIdleExitSeconds`, no video pinned to its slot. The router pins a
   * video before sending its first frame, so a pin this worker has not seen means frames
   * on their way (or a predecessor's video never adopted): it is adopted, as at start, and
   * released by the idle rule if nothing comes. Released videos still listed are not taken back.
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
    const committer = this.committer!;
    if (this.waiting.length === 0 && committer.inDoubtCount === 0) {
      this.storeAttempts = 0;
      return true;
    }
    this.storeAttempts++;
    await this.survive('settle-in-doubt', () => committer.settleInDoubt());
    const waiting = this.waiting;
    this.waiting = [];
    // As in handle(): a video of the commit in flight takes messages only once that commit
    // is applied. A fenced commit drops the session; a message offered to it meanwhile (its
    // record read still running) would be held by a session no one owns any more: never
    // committed, deleted or handed back, its FIFO group blocked for good.
    if (waiting.some((m) => m.msg && this.committing.has(m.msg.videoId))) await this.settleCommit();
    if (waiting.length > 0) this.waiting = (await this.survive('retry-placement', () => this.intake!.accept(waiting, this.now()))) ?? waiting;
    if (this.waiting.length === 0 && committer.inDoubtCount === 0) {
      this.d.log.info('store reachable again; resuming', { attempts: this.storeAttempts });
      this.storeAttempts = 0;
      return true;
    }
    const { retryInMs } = storeOutageWait(this.storeAttempts);
    this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'store-pause' });
    this.d.log.warn('store unreachable: holding messages and receiving nothing new', { waiting: this.waiting.length, inDoubt: committer.inDoubtVideos, retryInMs });
    await sleep(retryInMs);
    // Rounds of videos that do not wait on the store still run meanwhile.
    await this.survive('batch', () => this.handle([]));
    return false;
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
    // A video of the commit in flight that already holds its next frames (a segment's: its
    // message stays in flight, blocking its group, until the segment's last frame is
    // committed) can run as soon as that commit lands. Wait for the commit, not for a long
    // poll that nothing will answer while every video holding work is in it.
    if (this.pendingCommit && this.registry!.all().some((s) => this.committing.has(s.videoId) && (s.sequencer.nextDeadlineMs() ?? Infinity) <= this.now())) await this.settleCommit();
    const wake = this.registry!.all().map((s) => (this.committing.has(s.videoId) ? undefined : s.nextWakeMs(this.now())));
    await this.gather(wake);
    return this.inbox!.receive(pollWaitSeconds(wake, this.now(), idle), () => this.ending);
  }

  /** At a live rate, lets frames gather in the queue before the next receive (decision 31); a drain or a lost lease ends it at once. */
  private async gather(wakeTimesMs: readonly (number | undefined)[]): Promise<void> {
    const storeDown = this.waiting.length > 0 || this.committer!.inDoubtCount > 0;
    const waitMs = gatherWaitMs({ receiveGatherMs: this.d.tunables.receiveGatherMs, last: this.inbox!.lastReceive, wakeTimesMs, nowMs: this.now(), ending: this.ending, storeDown });
    for (let sleptMs = 0; sleptMs < waitMs && !this.ending; sleptMs += GATHER_TICK_MS) await sleep(Math.min(GATHER_TICK_MS, waitMs - sleptMs));
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
      storeDown: this.waiting.length > 0 || this.committer!.inDoubtCount > 0,
      segments: messages.some((m) => m.msg?.kind === 'frame' && this.sources.spans(m.msg.key)),
    });
    this.aheadSkips = decision.aheadSkips;
    let committed = false;
    // A video of the commit in flight takes new messages only once that commit is applied
    // (its outcome may restore the video, or delete exactly the handles it covers).
    if (messages.some((m) => m.msg && this.committing.has(m.msg.videoId))) committed = await this.settleCommit();
    this.waiting.push(...(await this.intake!.accept(messages, now)));
    if (this.lost) return committed;
    await this.intake!.listWhereNeeded(now, (videoId) => this.busy(videoId));
    if (decision.receiveAhead) {
      this.inbox!.receiveAhead(this.pendingCommit ?? Promise.resolve(), () => this.ending, (msg) => this.registry!.get(msg.videoId)?.wouldRun(msg.frame, now) === true);
    }
    // Videos adopted twice without progress run alone, after this round (decision 28).
    const { shared, isolated } = this.isolated!.split(this.registry!.all().filter((s) => !s.backingOff(now) && !this.busy(s.videoId)), now);
    const round = await buildRound(this.roundDeps, shared, this.fence, now);
    // An outage fails every video that fetched; a frame's own fault leaves the others working.
    const someFetched = round.units.some((u) => u.plan.steps.some((s) => s.type === 'frame' || s.type === 'late'));
    // A broken processor is not the frames' fault either.
    const broken = this.d.processor.fatal !== undefined;
    for (const f of round.failures) this.committer!.rollback(f, now, !broken && (!f.transient || someFetched));
    committed = (await this.settleCommit()) || committed;
    if (this.lost) return committed;
    if (round.units.length > 0) {
      for (const { session } of round.units) this.committing.add(session.videoId);
      this.pendingCommit = this.committer!.commit(round.units, now)
        .catch((e: unknown) => {
          this.d.log.error('worker error survived', { where: 'commit', error: errorText(e) });
          this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'commit' });
          return false;
        })
        .finally(() => this.committing.clear());
      if (decision.commit === 'await') await this.settleCommit();
      committed = true;
    }
    // Only once the others' round has committed, so a poison frame takes none of it along.
    if (isolated.length === 0 || this.lost) return committed;
    await this.settleCommit();
    return (await this.isolated!.run(isolated, this.now())) || committed;
  }

  /** Waits for the commit in flight, if any, to be applied; whether it committed anything. */
  private async settleCommit(): Promise<boolean> {
    const pending = this.pendingCommit;
    if (!pending) return false;
    const committed = await pending;
    if (this.pendingCommit === pending) this.pendingCommit = undefined;
    return committed;
  }

  /** A video whose commit is in flight or in doubt: it sits rounds out. */
  private busy(videoId: string): boolean {
    return this.committing.has(videoId) || this.committer!.inDoubt(videoId);
  }

  // ------------------------------------------------------------------ housekeeping

  private async housekeeping(): Promise<void> {
    const now = this.now();
    const idleMs = this.d.tunables.videoIdleReleaseSeconds * 1000;
    for (const s of this.registry!.all()) {
      if (this.busy(s.videoId)) continue;
      if (s.checkStall(now)) {
        this.d.metrics.count(METRIC_NAMES.worker.sourcesStalled, 1);
        this.d.log.warn('source stalled: no new segment for several of its intervals', { videoId: s.videoId, nextFrame: s.sequencer.nextFrame });
      }
      // One listing re-checks its gaps first: a frame that came after its gap is run, not left a gap.
      if (s.idleReleaseDue(now, idleMs) && (await this.intake!.recheckBeforeRelease(s, now))) await this.registry!.release(s, 'idle');
    }
  }
}
