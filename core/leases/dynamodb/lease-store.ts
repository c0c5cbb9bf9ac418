/**
 * The DynamoDB adapter of the whole lease table (core/leases/port.ts's {@link LeaseTable}):
 * the slot half (slot-lease-store.ts) and the video half with the fenced commit
 * (video-lease-store.ts), composed over one {@link LeaseTableAccess}. It adds no behaviour
 * of its own; it exists so that composition roots build one object for the table, and so
 * that each half is a class of its own rather than a base class used as a file splitter.
 *
 * Only composition roots (gpu-worker/main.ts, functions/shared/, local/, cli/, bench/,
 * tests) construct it; the router, the janitor and the worker runtime take the port.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { Tunables, Wiring } from '../../config.ts';
import type { LivenessOptions, SlotRecord } from '../lease-logic.ts';
import type { StoredDecision } from '../../commit/commit-outcome.ts';
import type { CommitUnit } from '../../commit/commit-packing.ts';
import type { AdoptedVideo, CommitOutcome, DeadOwnerRelease, LeaseTable, SlotClaim, SlotFence, VideoOverrides, VideoPin, VideoRecord } from '../port.ts';
import { LeaseTableAccess } from './lease-table.ts';
import { SlotLeaseStore } from './slot-lease-store.ts';
import { VideoLeaseStore, type LeaseStoreOptions } from './video-lease-store.ts';

export { slotKey, videoKey, UnconfirmedError, type SlotFence } from './slot-lease-store.ts';
export { packUnits, type CommitUnit } from '../../commit/commit-packing.ts';
export { decideStoredOutcome, type StoredDecision, type UnitOutcome } from '../../commit/commit-outcome.ts';
export type { AdoptedVideo, CommitOutcome, VideoPin, VideoRecord } from '../port.ts';
export type { LeaseStoreOptions } from './video-lease-store.ts';

/** The lease table on DynamoDB: both halves of the protocol behind one object. */
export class LeaseStore implements LeaseTable, VideoOverrides, DeadOwnerRelease {
  /** Claims, heartbeats, launch grants. */
  readonly slots: SlotLeaseStore;
  /** Pins, adoption, release, the fenced commit. */
  readonly videos: VideoLeaseStore;

  constructor(ddb: DynamoDBDocumentClient, options: LeaseStoreOptions) {
    const table = new LeaseTableAccess(ddb, options);
    this.slots = new SlotLeaseStore(table);
    this.videos = new VideoLeaseStore(table, (slot) => this.slots.getSlot(slot));
  }

  /** The store for a deployment's wiring and tunables. */
  static forWiring(ddb: DynamoDBDocumentClient, wiring: Pick<Wiring, 'leasesTable' | 'resultsTable' | 'pinnedSlotIndex'> & Partial<Pick<Wiring, 'eventsTable'>>, tunables: Pick<Tunables, 'firstFrameNumber'>): LeaseStore {
    return new LeaseStore(ddb, {
      tableName: wiring.leasesTable,
      resultsTableName: wiring.resultsTable,
      pinnedSlotIndex: wiring.pinnedSlotIndex,
      firstFrameNumber: tunables.firstFrameNumber,
      ...(wiring.eventsTable ? { eventsTableName: wiring.eventsTable } : {}),
    });
  }

  // Plain delegation (documented on the port and on each half). Methods, not fields, so a
  // Proxy or spy around the store sees every call by name, as it did before the split.

  getSlots(count: number): Promise<SlotRecord[]> {
    return this.slots.getSlots(count);
  }
  getSlotsNumbered(slots: readonly number[]): Promise<SlotRecord[]> {
    return this.slots.getSlotsNumbered(slots);
  }
  getSlot(slot: number): Promise<SlotRecord> {
    return this.slots.getSlot(slot);
  }
  claimSlot(slot: number, workerId: string, nowMs: number, ttlMs: number, skewToleranceMs?: number): Promise<SlotClaim | undefined> {
    return this.slots.claimSlot(slot, workerId, nowMs, ttlMs, skewToleranceMs);
  }
  renewSlot(fence: SlotFence, nowMs: number, ttlMs: number): Promise<'renewed' | 'lost'> {
    return this.slots.renewSlot(fence, nowMs, ttlMs);
  }
  releaseSlot(fence: SlotFence, nowMs: number): Promise<boolean> {
    return this.slots.releaseSlot(fence, nowMs);
  }
  expireStoppedOwner(slot: number, stoppedAtMs: number, nowMs: number, stoppedWorkerId?: string): Promise<boolean> {
    return this.slots.expireStoppedOwner(slot, stoppedAtMs, nowMs, stoppedWorkerId);
  }

  endDeadOwner(fence: SlotFence, stoppedAtMs: number, nowMs: number): Promise<'ended' | 'not-held'> {
    return this.slots.endDeadOwner(fence, stoppedAtMs, nowMs);
  }
  setVideoCount(slot: number, expected: number, actual: number): Promise<void> {
    return this.slots.setVideoCount(slot, expected, actual);
  }
  requestLaunch(slot: number, nowMs: number, o: LivenessOptions, mode: 'if-dead' | 'force'): Promise<number | undefined> {
    return this.slots.requestLaunch(slot, nowMs, o, mode);
  }
  withdrawLaunch(slot: number, launchSeq: number, retryAtMs: number): Promise<boolean> {
    return this.slots.withdrawLaunch(slot, launchSeq, retryAtMs);
  }
  recordLaunchedTask(slot: number, launchSeq: number, taskId: string): Promise<boolean> {
    return this.slots.recordLaunchedTask(slot, launchSeq, taskId);
  }

  getPins(videoIds: readonly string[]): Promise<Map<string, VideoPin>> {
    return this.videos.getPins(videoIds);
  }
  getVideo(videoId: string): Promise<VideoRecord> {
    return this.videos.getVideo(videoId);
  }
  pinVideo(videoId: string, slot: number, nowMs: number, maxVideosOnSlot?: number): Promise<'pinned' | 'taken' | 'slot-full'> {
    return this.videos.pinVideo(videoId, slot, nowMs, maxVideosOnSlot);
  }
  adoptVideo(videoId: string, fence: SlotFence, nowMs: number, options?: { readonly slotTakenOver?: boolean }): Promise<AdoptedVideo | 'not-here' | 'slot-lost'> {
    return this.videos.adoptVideo(videoId, fence, nowMs, options);
  }
  releaseVideo(videoId: string, fence: SlotFence, token: number, ckSeq: number, nowMs: number, retentionDays: number): Promise<boolean> {
    return this.videos.releaseVideo(videoId, fence, token, ckSeq, nowMs, retentionDays);
  }
  listPinned(slot: number): Promise<string[]> {
    return this.videos.listPinned(slot);
  }
  listPinnedBySlot(): Promise<Map<number, string[]>> {
    return this.videos.listPinnedBySlot();
  }
  commit(fence: SlotFence, units: readonly CommitUnit[], nowMs: number): Promise<CommitOutcome> {
    return this.videos.commit(fence, units, nowMs);
  }
  readCommitState(videoId: string): Promise<VideoRecord> {
    return this.videos.readCommitState(videoId);
  }
  resolveUnit(fence: SlotFence, unit: CommitUnit): Promise<StoredDecision> {
    return this.videos.resolveUnit(fence, unit);
  }

  // Operator actions (cli/): not part of the port the pipeline uses.

  /** See {@link VideoLeaseStore.forceReleaseVideo}. */
  forceReleaseVideo(videoId: string, expectedToken: number, nowMs: number, retentionDays: number): Promise<boolean> {
    return this.videos.forceReleaseVideo(videoId, expectedToken, nowMs, retentionDays);
  }
  /** See {@link VideoLeaseStore.resetForReplay}. */
  resetForReplay(...args: Parameters<VideoLeaseStore['resetForReplay']>): ReturnType<VideoLeaseStore['resetForReplay']> {
    return this.videos.resetForReplay(...args);
  }
}
