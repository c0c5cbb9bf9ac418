/**
 * Rounds of isolated videos (crash-breaker.ts, decisions 28 and 29): a video taken over
 * from an owner that died (or adopted twice without progress) runs alone, one frame per
 * round, after the other videos' round has committed, so that a frame that kills the
 * process takes no other video's progress with it. Isolated videos run one after the
 * other, least suspect first. Before the frame runs, a marker commit records which frame
 * it is (`stall.trying`); a successor that finds the marker with two deaths counted parks
 * that frame as `crashed-worker`.
 *
 * Only videos in that state come here: the normal path makes no extra write.
 */
import type { SlotContext } from '../slot-context.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import type { LogSink, MetricSink } from '../../../core/ports.ts';
import { CRASHED_WORKER_REASON, frameToTry, isolationOrder } from './crash-breaker.ts';
import { buildMarker, buildPlannedRound, type RoundBuilderDeps } from '../round-builder.ts';
import type { RoundCommitter } from '../round-committer.ts';
import type { VideoRegistry } from '../video-registry.ts';
import type { VideoSession } from '../video-session.ts';

export interface IsolatedRoundsDeps {
  readonly round: RoundBuilderDeps;
  readonly committer: Pick<RoundCommitter, 'commit' | 'rollback' | 'inDoubt'>;
  readonly registry: Pick<VideoRegistry, 'get'>;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  /** The slot whose fence markers and rounds are committed under. */
  readonly slot: Pick<SlotContext, 'fence'>;
  /** How long after a death its frames may take to reappear in the queue (the slot queue's visibility timeout). */
  readonly redeliveryMs: number;
  /** Whether the processor is broken for good (its failures are not the frame's fault). */
  readonly broken: () => boolean;
}

export class IsolatedRounds {
  private readonly d: IsolatedRoundsDeps;
  private readonly announced = new WeakSet<VideoSession>();

  constructor(deps: IsolatedRoundsDeps) {
    this.d = deps;
  }

  /**
   * Splits eligible videos: those that run in the normal (shared) round, and the isolated
   * ones. Isolated videos whose isolation may end go back to the normal round.
   */
  split(eligible: readonly VideoSession[], nowMs: number): { shared: VideoSession[]; isolated: VideoSession[] } {
    const shared: VideoSession[] = [];
    const isolated: VideoSession[] = [];
    for (const s of eligible) {
      if (s.isolated && s.leaveIsolationIfDue(nowMs, this.d.redeliveryMs)) {
        this.d.log.info('crash-loop breaker: video back to normal rounds', { videoId: s.videoId });
      }
      (s.isolated ? isolated : shared).push(s);
    }
    return { shared, isolated };
  }

  /**
   * Runs one isolated round for each video, one after the other, least suspect first (a
   * video a process already died on alone goes last); true when anything landed.
   */
  async run(sessions: readonly VideoSession[], nowMs: number): Promise<boolean> {
    let landed = false;
    for (const s of isolationOrder(sessions)) {
      if (this.d.registry.get(s.videoId) !== s || this.d.committer.inDoubt(s.videoId)) continue;
      landed = (await this.runOne(s, nowMs)) || landed;
    }
    return landed;
  }

  private async runOne(s: VideoSession, nowMs: number): Promise<boolean> {
    if (!this.announced.has(s)) {
      this.announced.add(s);
      this.d.log.warn('crash-loop breaker: video taken over from a dead owner or adopted without progress; running it isolated', {
        videoId: s.videoId,
        stall: s.committed.stall,
        parked: [...s.crashParked.keys()],
      });
    }
    const plan = s.plan(nowMs);
    if (!plan) return false;
    const frame = frameToTry(plan.steps, plan.parked);
    let landed = false;
    if (frame !== undefined) {
      const marker = buildMarker(s, this.d.slot.fence, frame, nowMs);
      landed = await this.d.committer.commit([marker], nowMs);
      if (s.committed.commitId !== marker.unit.checkpoint.commitId) {
        // Not landed (or not known to have): the frame does not run without its marker.
        if (this.d.registry.get(s.videoId) === s) s.undoPlan();
        return landed;
      }
    }
    const round = await buildPlannedRound(this.d.round, [{ session: s, plan }], this.d.slot.fence, nowMs);
    for (const f of round.failures) this.d.committer.rollback(f, nowMs, !this.d.broken() && !f.transient);
    if (round.units.length === 0) return landed;
    const unit = round.units[0]!;
    landed = (await this.d.committer.commit(round.units, nowMs)) || landed;
    if (s.committed.commitId === unit.unit.checkpoint.commitId) this.reportParked(s, unit.unit.results);
    return landed;
  }

  /** A poison frame's record landed: the metric the alarm reads, and a line naming it. */
  private reportParked(s: VideoSession, results: readonly { frame: number; status: string; reason?: string; key?: string }[]): void {
    const crashed = results.filter((r) => r.status === 'failed' && r.reason === CRASHED_WORKER_REASON);
    if (crashed.length === 0) return;
    this.d.metrics.count(METRIC_NAMES.worker.framesCrashedWorker, crashed.length);
    for (const r of crashed) {
      this.d.log.error('crash-loop breaker: frame parked, it killed the worker', { videoId: s.videoId, frame: r.frame, key: r.key, reason: CRASHED_WORKER_REASON });
    }
  }
}
