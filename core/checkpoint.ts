/**
 * A video's durable state: everything a new owner needs to continue exactly where
 * the last commit left off. Stored inside the video's lease item and written in the
 * same transaction as the results it covers.
 */
import { emptySequencerState, upgradeSequencerState, type SequencerState } from './sequencer.ts';
import type { VideoSummaryItem } from './results.ts';

export interface OwnerRecord {
  readonly worker: string;
  readonly token: number;
  readonly sinceMs: number;
  readonly fromFrame?: number;
}

export interface VideoCheckpoint {
  /** Grows by one on every commit; commits are conditional on it (optimistic concurrency). */
  readonly seq: number;
  readonly sequencer: SequencerState;
  /** Opaque FrameProcessor snapshot (tracker state). */
  readonly processor?: string;
  readonly framesOk: number;
  readonly framesLate: number;
  readonly framesFailed: number;
  readonly framesGap: number;
  readonly firstFrame?: number;
  readonly lastFrame?: number;
  readonly complete: boolean;
  /** Most recent owners, oldest first (bounded). */
  readonly owners: readonly OwnerRecord[];
  readonly ownerChanges: number;
}

export const MAX_OWNER_HISTORY = 50;

export function emptyCheckpoint(firstFrameNumber = -1): VideoCheckpoint {
  return {
    seq: 0,
    sequencer: emptySequencerState(firstFrameNumber),
    framesOk: 0,
    framesLate: 0,
    framesFailed: 0,
    framesGap: 0,
    complete: false,
    owners: [],
    ownerChanges: 0,
  };
}

/** Fills fields a checkpoint written by an older version lacks. */
export function upgradeCheckpoint(ck: VideoCheckpoint): VideoCheckpoint {
  return { ...ck, framesLate: ck.framesLate ?? 0, sequencer: upgradeSequencerState(ck.sequencer) };
}

/** The checkpoint after a change of owner. */
export function withNewOwner(ck: VideoCheckpoint, owner: OwnerRecord): VideoCheckpoint {
  const owners = [...ck.owners, owner].slice(-MAX_OWNER_HISTORY);
  return { ...ck, owners, ownerChanges: ck.ownerChanges + 1 };
}

/** Derives the summary item the results table exposes from a checkpoint. */
export function summaryOf(
  videoId: string,
  ck: VideoCheckpoint,
  lease: { readonly token: number; readonly worker: string; readonly slot: number },
  nowMs: number,
): VideoSummaryItem {
  return {
    videoId,
    frame: -1,
    kind: 'summary',
    status: ck.complete ? 'complete' : 'active',
    framesOk: ck.framesOk,
    framesLate: ck.framesLate,
    framesFailed: ck.framesFailed,
    framesGap: ck.framesGap,
    ...(ck.firstFrame !== undefined ? { firstFrame: ck.firstFrame } : {}),
    ...(ck.lastFrame !== undefined ? { lastFrame: ck.lastFrame } : {}),
    ...(ck.sequencer.endFrame !== null ? { endFrame: ck.sequencer.endFrame } : {}),
    ownerChanges: ck.ownerChanges,
    token: lease.token,
    worker: lease.worker,
    slot: lease.slot,
    updatedAtMs: nowMs,
    owners: ck.owners,
  };
}
