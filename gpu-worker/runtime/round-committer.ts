/**
 * Carries out what a round's commit means for each of its videos (commit-pipeline.ts
 * decides): landed units delete the messages their checkpoints cover and finished videos
 * are released; a conflict rolls its video back; a fenced video is forgotten and its
 * messages handed back; a unit whose answer was lost waits, with its messages held,
 * until a read of its lease settles it. Nothing here rolls back a unit that may have landed.
 */
import type { SlotContext } from './slot-context.ts';
import { errorText } from '../../core/errors.ts';
import { estimatedBytes } from '../../core/commit/commit-packing.ts';
import type { CommitOutcome, FencedCommit, VideoLeases } from '../../core/leases/port.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import type { LogSink, MetricSink } from '../../core/ports.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { commitActions, settleInDoubt } from './commit-pipeline.ts';
import type { RoundFailure, RoundUnit } from './round-builder.ts';
import type { SlotInbox } from './slot-inbox.ts';
import type { VideoRegistry } from './video-registry.ts';
import type { VideoSession } from './video-session.ts';

export interface RoundCommitterDeps {
  readonly leases: Pick<FencedCommit, 'commit'> & Pick<VideoLeases, 'getVideo'>;
  readonly inbox: Pick<SlotInbox, 'delete' | 'giveBack'>;
  readonly registry: Pick<VideoRegistry, 'get' | 'release' | 'drop' | 'restoreProcessor'>;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  /** The slot: its fence (every commit is conditional on it), its loss, its clock. */
  readonly slot: SlotContext;
}

export class RoundCommitter {
  private readonly d: RoundCommitterDeps;
  /** Units whose commit answer was lost: their videos wait, held, until a read settles them. */
  private readonly inDoubtUnits = new Map<string, RoundUnit>();

  constructor(deps: RoundCommitterDeps) {
    this.d = deps;
  }

  /** Whether a video waits for a read to settle its last commit. */
  inDoubt(videoId: string): boolean {
    return this.inDoubtUnits.has(videoId);
  }

  get inDoubtCount(): number {
    return this.inDoubtUnits.size;
  }

  get inDoubtVideos(): string[] {
    return [...this.inDoubtUnits.keys()];
  }

  /** Reads the lease of each video whose commit answer was lost, and applies what it says. */
  async settleInDoubt(): Promise<void> {
    for (const [videoId, unit] of [...this.inDoubtUnits]) {
      const stored = await this.d.leases.getVideo(videoId);
      this.inDoubtUnits.delete(videoId);
      const { outcome, leaseMoved } = settleInDoubt(stored, unit, this.d.slot.fence);
      this.d.log.info('commit in doubt settled', { videoId, outcome, leaseMoved });
      if (outcome === 'landed') {
        const { deleteHandles, complete } = this.applyLanded(unit);
        await this.d.inbox.delete(deleteHandles);
        if (leaseMoved) await this.dropVideo(unit.session);
        else if (complete) await this.d.registry.release(unit.session, 'end-of-stream');
      } else if (outcome === 'not-landed') {
        this.rollback({ session: unit.session, reason: 'commit-unknown', detail: 'the commit did not land', blamed: [], transient: true }, this.d.slot.now());
      } else {
        await this.dropVideo(unit.session);
      }
    }
  }

  /** Commits a round's units and carries out what the answer means; true when anything landed. */
  async commit(units: readonly RoundUnit[], now: number): Promise<boolean> {
    let answer: CommitOutcome | 'threw';
    try {
      answer = await this.d.leases.commit(this.d.slot.fence, units.map((u) => u.unit), now);
    } catch (e) {
      this.d.log.warn('commit outcome unknown; will re-read before deciding', { videos: units.map((u) => u.session.videoId), error: errorText(e) });
      answer = 'threw';
    }
    const actions = commitActions(answer, units);
    if (actions.slotLost) {
      this.d.metrics.count(METRIC_NAMES.worker.commitsFenced);
      this.d.log.error('commit rejected: slot lease no longer ours (fenced)', { slot: this.d.slot.fence.slot, epoch: this.d.slot.fence.epoch, landed: actions.outcomes.length });
      this.d.slot.lose('commit fenced by the store');
      // What landed before the slot was lost is durable: its messages are deleted all the same.
      await this.d.inbox.delete(actions.outcomes.flatMap(({ unit }) => this.applyLanded(unit).deleteHandles));
      return false;
    }
    const toDelete: string[] = [];
    const complete: VideoSession[] = [];
    let landed = false;
    for (const { unit, outcome } of actions.outcomes) {
      const s = unit.session;
      if (outcome === 'landed') {
        // Whether the video finished is the session's word, not the checkpoint's flag: a
        // crash-loop marker re-commits the last checkpoint, whose `complete` may be stale
        // (an end marker corrected to a later frame since), and must never release the video.
        const landedUnit = this.applyLanded(unit);
        toDelete.push(...landedUnit.deleteHandles);
        if (landedUnit.complete) complete.push(s);
        landed = true;
      } else if (typeof outcome === 'object' && 'conflict' in outcome) {
        // A record this commit would create already exists, so the frame is settled: the
        // retry leaves it out (the existing record stands) and the rest goes through, at
        // once: a backoff per such frame made a corrected end marker over N frames already
        // recorded after-end-of-stream take N growing backoffs (up to 30 s each).
        let r = s.settleExisting(outcome.conflict);
        for (const frame of outcome.alsoRecorded ?? []) r = s.settleExisting(frame);
        this.d.registry.restoreProcessor(s, r.restoreProcessor);
        this.d.metrics.count(METRIC_NAMES.worker.videoRollbacks, 1, { Reason: 'record-exists' });
        this.d.log.info('a frame of this round already has a record; it stands, and the round is retried without it', { videoId: s.videoId, frame: outcome.conflict, ...(outcome.alsoRecorded ? { alsoRecorded: outcome.alsoRecorded } : {}) });
      } else if (typeof outcome === 'object') {
        // A bug, not an outage: counted (and alarmed), and the video is rolled back as a
        // counted failure blaming the unit's frames, so after MAX_VIDEO_FAILURES rounds
        // they are parked as `failed` records and the video goes on; nothing else waits.
        // No dimension: the alarm reads the metric itself; the reason is in the log line.
        this.d.metrics.count(METRIC_NAMES.worker.commitsInvalid, 1);
        this.d.log.error('commit unit refused as malformed: rolled back, its frames blamed', { videoId: s.videoId, reason: outcome.invalid });
        this.rollback({ session: s, reason: 'invalid-commit', detail: outcome.invalid, blamed: unit.unit.results.map((r) => r.frame), transient: false }, now);
      } else if (outcome === 'not-landed') {
        this.rollback({ session: s, reason: 'commit-not-landed', detail: 'the store did not take the commit (retries ran out)', blamed: [], transient: true }, now);
      } else if (outcome === 'fenced' || outcome === 'stale') {
        // Stale: still our token, but the checkpoint moved under us: dropped and re-adopted, as fenced.
        this.d.metrics.count(METRIC_NAMES.worker.commitsFenced);
        this.d.log.warn('commit rejected for video: lease moved (fenced)', { videoId: s.videoId, token: s.token });
        await this.dropVideo(s);
      } else {
        this.d.log.warn('commit outcome unknown: holding its messages until a read settles it', { videoId: s.videoId, commitId: unit.unit.checkpoint.commitId });
        this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'commit-unknown' });
        this.inDoubtUnits.set(s.videoId, unit);
      }
    }
    await this.d.inbox.delete(toDelete);
    for (const s of complete) if (this.d.registry.get(s.videoId) === s) await this.d.registry.release(s, 'end-of-stream');
    return landed;
  }

  /** A unit landed: its session moves on; returns the handles to delete and whether the video finished. */
  private applyLanded(ru: RoundUnit): { deleteHandles: readonly string[]; complete: boolean } {
    const landed = ru.session.applyCommitted(ru.unit, ru.plan);
    if (ru.parked > 0) this.d.metrics.count(METRIC_NAMES.worker.framesParked, ru.parked);
    this.d.metrics.count(METRIC_NAMES.worker.checkpointBytes, estimatedBytes(ru.unit.checkpoint));
    if (ru.unit.events?.length) this.d.metrics.count(METRIC_NAMES.worker.eventsCommitted, ru.unit.events.length);
    this.countCommitted(ru.unit.results);
    for (const ms of ru.session.uploads.landed(ru.unit.results, this.d.slot.now())) this.d.metrics.milliseconds(METRIC_NAMES.worker.uploadToRecordMs, ms);
    return landed;
  }

  /** A video's round failed: restore it alone from its last checkpoint, keep its messages, back off. */
  rollback(f: RoundFailure, now: number, counted = !f.transient): void {
    const s = f.session;
    const r = s.rollback(f.blamed, f.reason, counted, now);
    this.d.registry.restoreProcessor(s, r.restoreProcessor);
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
    this.inDoubtUnits.delete(s.videoId);
    await this.d.inbox.giveBack(this.d.registry.drop(s));
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
}
