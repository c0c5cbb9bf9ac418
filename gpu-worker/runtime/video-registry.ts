/**
 * The videos this worker owns, and their leases: finds or takes a video's lease (adopting
 * it with token + 1 and restoring its checkpoint), learns where a video pinned elsewhere
 * lives, releases idle or finished videos, and forgets a video whose lease moved. Opens
 * and closes the processor's per-video state with the lease, so the tracker a session
 * sees is always the one its checkpoint describes.
 */
import { keptCounts } from '../../core/leases/lease-logic.ts';
import type { SlotContext } from './slot-context.ts';
import { errorText } from '../../core/errors.ts';
import type { Tunables } from '../../core/config.ts';
import type { VideoCheckpoint } from '../../core/commit/checkpoint.ts';
import type { VideoLeases } from '../../core/leases/port.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import type { FrameProcessor, LogSink, MetricSink } from '../../core/ports.ts';
import { VideoSession } from './video-session.ts';
import { handoverOf, type Handover } from './crash/crash-breaker.ts';
import { finishReplayDeletes, type ReplayDeletes } from '../../core/commit/operations/replay.ts';

export interface VideoRegistryDeps {
  readonly tunables: Tunables;
  readonly leases: Pick<VideoLeases, 'adoptVideo' | 'getVideo' | 'pinVideo' | 'releaseVideo' | 'listPinned'>;
  readonly processor: Pick<FrameProcessor, 'openVideo' | 'closeVideo'>;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  /**
   * The slot: its fence (every lease write is fenced by it), whether it is lost (an
   * adoption fenced by the slot's epoch loses it), and whether it was taken from an owner
   * that never released it (videos taken from an owner then run isolated, decision 29).
   */
  readonly slot: SlotContext;
  /** Finishes the deletes of a replay in progress on adoption (see {@link VideoRegistry.place}). */
  readonly replayDeletes: ReplayDeletes;
  /** Told when a video is let go (released, or its lease moved): what was fetched ahead for it is dropped. */
  readonly onClose?: (videoId: string) => void;
}

/** Where a video's messages go: its session here, another slot, nowhere (slot lost), or dropped as old news. */
export type Placement = VideoSession | number | 'lost' | 'nothing-new';

export class VideoRegistry {
  private readonly d: VideoRegistryDeps;
  private readonly sessions = new Map<string, VideoSession>();

  constructor(deps: VideoRegistryDeps) {
    this.d = deps;
  }

  get(videoId: string): VideoSession | undefined {
    return this.sessions.get(videoId);
  }

  get size(): number {
    return this.sessions.size;
  }

  all(): VideoSession[] {
    return [...this.sessions.values()];
  }

  ids(): string[] {
    return [...this.sessions.keys()];
  }

  /**
   * Finds or takes the lease of a video. Returns its session, the slot to forward to
   * when it lives elsewhere, `lost` when our slot is gone, or `nothing-new` when the
   * video was released and `takeReleased` says the messages bring nothing new. Throws
   * when the store cannot be reached (the caller holds the messages and retries).
   */
  async place(videoId: string, takeReleased?: (released: VideoCheckpoint) => Promise<boolean>): Promise<Placement> {
    const existing = this.sessions.get(videoId);
    if (existing) return existing;
    const fence = this.d.slot.fence;
    for (let attempt = 0; attempt < 4; attempt++) {
      const adopted = await this.d.leases.adoptVideo(videoId, fence, this.d.slot.now(), { slotTakenOver: this.d.slot.takenOver });
      if (adopted === 'slot-lost') {
        this.d.slot.lose('adoption fenced: the slot lease moved on');
        return 'lost';
      }
      if (adopted !== 'not-here') {
        const handover = handoverOf({ slotTakenOver: this.d.slot.takenOver, adoptedFrom: adopted.adoptedFrom, self: fence.workerId });
        return this.open(videoId, adopted.token, await this.finishReplay(videoId, adopted.checkpoint), handover);
      }
      const current = await this.d.leases.getVideo(videoId);
      if (current.pinnedSlot !== undefined && current.pinnedSlot !== fence.slot) return current.pinnedSlot;
      // Released (idle or finished) while the router still sent here: take it ourselves,
      // unless what came is only redeliveries of what it already has.
      if (current.pinnedSlot === undefined) {
        if (takeReleased && current.state === 'released' && !(await takeReleased(current.checkpoint))) return 'nothing-new';
        await this.d.leases.pinVideo(videoId, fence.slot, this.d.slot.now());
      }
    }
    if (this.d.slot.lost) return 'lost';
    throw new Error(`could not settle the lease of video ${videoId}`);
  }

  /**
   * A video adopted while an operator's replay is in progress: its records from
   * `silentBelow` on under the fenced token are doomed, and a frame that met one before the
   * replay deleted it would end with no record (issue 40: the replay re-sends only what its
   * listing saw). So the replay's deletes are finished first, here, and the checkpoint the
   * session starts from forgets the fenced token (its next commit stores that: nothing is
   * left to delete) and counts the records below `silentBelow` as they stand now. Throws when the table cannot be reached: the messages are held and
   * the adoption is retried.
   */
  private async finishReplay(videoId: string, ck: VideoCheckpoint): Promise<VideoCheckpoint> {
    const pending = ck.replay;
    if (pending?.fencedToken === undefined) return ck;
    const { kept, ...r } = await finishReplayDeletes(this.d.replayDeletes, videoId, { silentBelow: pending.silentBelow, fencedToken: pending.fencedToken });
    this.d.log.info("a replay's deletes finished before the video's frames are decided", { videoId, fromFrame: pending.silentBelow, fencedToken: pending.fencedToken, ...r });
    // The counts start from the records that stay, as they stand now (see finishReplayDeletes).
    const { firstFrame: _first, lastFrame: _last, ...rest } = ck;
    return {
      ...rest,
      ...keptCounts(kept),
      replay: { silentBelow: pending.silentBelow },
    };
  }

  /** Takes over every video pinned to this slot (a predecessor's, or one never adopted); `takeReleased` as in {@link place}. */
  async adoptPinned(takeReleased?: (released: VideoCheckpoint) => Promise<boolean>): Promise<void> {
    for (const videoId of await this.d.leases.listPinned(this.d.slot.fence.slot)) {
      if (this.d.slot.lost) return;
      await this.place(videoId, takeReleased);
    }
  }

  /** Releases a video (idle or finished): the lease keeps its token and checkpoint for the next owner. */
  async release(s: VideoSession, why: 'idle' | 'end-of-stream'): Promise<void> {
    const fence = this.d.slot.fence;
    let ok: boolean;
    try {
      ok = await this.d.leases.releaseVideo(s.videoId, fence, s.token, s.committed.seq, this.d.slot.now(), this.d.tunables.releasedVideoRetentionDays);
    } catch (e) {
      // Still ours and committed: the next housekeeping round tries again once it is idle.
      this.d.log.warn('video release failed; will retry when idle', { videoId: s.videoId, why, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'release' });
      return;
    }
    this.close(s);
    this.d.metrics.count(METRIC_NAMES.worker.videosReleased, 1, { Why: why });
    this.d.log.info('video released', { videoId: s.videoId, why, ok, token: s.token, framesOk: s.committed.framesOk });
  }

  /** Forgets a video whose lease moved; returns the handles it held, for the caller to hand back. */
  drop(s: VideoSession): readonly string[] {
    this.close(s);
    return s.handles;
  }

  /** Restores the processor's state of a rolled-back video. */
  restoreProcessor(s: VideoSession, snapshot: string | undefined): void {
    this.d.processor.closeVideo(s.videoId);
    this.d.processor.openVideo(s.videoId, snapshot);
  }

  private close(s: VideoSession): void {
    this.d.processor.closeVideo(s.videoId);
    this.sessions.delete(s.videoId);
    this.d.onClose?.(s.videoId);
  }

  private open(videoId: string, token: number, ck: VideoCheckpoint, handover: Handover): VideoSession {
    this.d.processor.openVideo(videoId, ck.processor);
    const s = new VideoSession(videoId, token, ck, this.d.tunables, this.d.slot.now(), handover);
    this.sessions.set(videoId, s);
    this.d.metrics.count(METRIC_NAMES.worker.videoLeasesAdopted);
    if (ck.owners.length > 1) this.d.metrics.count(METRIC_NAMES.worker.videoTakeovers);
    this.d.log.info('video adopted', {
      videoId,
      token,
      nextFrame: ck.sequencer.nextFrame,
      buffered: ck.sequencer.buffered.length,
      previousOwner: ck.owners.at(-2)?.worker,
      handover,
    });
    return s;
  }
}
