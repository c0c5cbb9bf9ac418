/**
 * The lease port: what the router, the janitor and the worker runtime need from the lease
 * table, as interfaces and types with no SDK in them. Two levels of lease (BRIEF §4):
 *
 *  - a *slot lease* ({@link SlotLeases}): a worker task holds one of a fixed pool of slots by
 *    heartbeat; its `epoch` grows on every claim, and with owner and expiry it is the
 *    {@link SlotFence} every fenced write re-checks;
 *  - a *video lease* ({@link VideoLeases}): pins a video to a slot (not to a task) and carries
 *    the video's fencing `token`, which grows on every change of owner;
 *  - the *fenced commit* ({@link FencedCommit}): results, checkpoint and summary of many
 *    videos in transactions that each re-check the slot fence and every video's token and
 *    checkpoint, with each unit's fate decided by commit id (never by a counter).
 *
 * Launch grants ({@link LaunchGrants}) live on the slot items too: one launch per slot per
 * grace window, withdrawn when the launch did not happen.
 *
 * Implementations: the DynamoDB adapter (core/leases/dynamodb/lease-store.ts, run by composition roots
 * only) and the same adapter over the in-memory table twin (core/leases/memory/). Consumers
 * take the narrowest of these interfaces they need, as type imports.
 */
import type { VideoCheckpoint } from '../commit/checkpoint.ts';
import type { StoredDecision, UnitOutcome } from '../commit/commit-outcome.ts';
import type { CommitUnit } from '../commit/commit-packing.ts';
import type { LivenessOptions, SlotRecord } from './lease-logic.ts';

export type { SlotRecord, LivenessOptions } from './lease-logic.ts';
export type { CommitUnit } from '../commit/commit-packing.ts';
export type { StoredDecision, UnitOutcome } from '../commit/commit-outcome.ts';

// ---------------------------------------------------------------------------- types

/** Identifies the slot lease a worker writes under; every commit re-checks it. */
export interface SlotFence {
  readonly slot: number;
  readonly workerId: string;
  /** The slot's claim counter at the caller's claim: grows on every claim, so a stale holder is told apart. */
  readonly epoch: number;
}

/**
 * Thrown by {@link SlotLeases.renewSlot} when the outcome could not be confirmed either way
 * (the write errored and the re-read failed too): the caller decides, usually by stopping
 * before its lease could have run out.
 */
export class UnconfirmedError extends Error {
  override name = 'UnconfirmedError';
}

/** A video's lease as stored: pin, fencing token, owner and checkpoint. */
export interface VideoRecord {
  readonly videoId: string;
  readonly pinnedSlot?: number;
  /** The video's fencing token: grows on every change of owner, never shrinks. */
  readonly token: number;
  readonly owner?: string;
  /** The slot epoch of the owner's claim when it adopted the video. */
  readonly ownerEpoch?: number;
  readonly state: 'pinned' | 'released' | 'new';
  readonly checkpoint: VideoCheckpoint;
}

/** A video record as {@link VideoLeases.adoptVideo} left it, with the owner it was taken from. */
export interface AdoptedVideo extends VideoRecord {
  /** The worker that owned the lease before this adoption; absent when nobody did (or it was already ours). */
  readonly adoptedFrom?: string;
}

/** The part of a video lease the router reads for many videos at once. */
export interface VideoPin {
  readonly pinnedSlot?: number;
  readonly token: number;
}

/**
 * What a commit did, per unit: every unit of the call has an entry in `outcomes` (see
 * {@link UnitOutcome}). `commit()` never throws once anything may have been written: units
 * of groups that landed stay `landed` when a later group fails, and a unit whose answer was
 * lost and whose re-read failed too is `unknown` (re-read it with
 * {@link FencedCommit.resolveUnit} before rolling anything back).
 * - `settled`: the slot lease held (as far as this commit saw).
 * - `slot-lost`: a transaction's slot condition failed (or a re-read found the slot taken):
 *   the worker must stop at once. Units not landed or unknown are `fenced`.
 * `ambiguousRetries` counts attempts whose outcome was unknown (decided by re-reading).
 */
export type CommitOutcome = {
  readonly kind: 'settled' | 'slot-lost';
  readonly outcomes: ReadonlyMap<string, UnitOutcome>;
  readonly ambiguousRetries: number;
};

/** What {@link SlotLeases.claimSlot} won: the new epoch, the lease's expiry, and whether it was taken from an owner that never released it. */
export interface SlotClaim {
  readonly epoch: number;
  readonly expiresAtMs: number;
  readonly takenOver: boolean;
}

// ---------------------------------------------------------------------------- interfaces

/** Slot leases: read, claim, renew by heartbeat, release, and the janitor's repairs. */
export interface SlotLeases {
  /** Slots 0..count-1; a slot never written reads as never claimed. */
  getSlots(count: number): Promise<SlotRecord[]>;
  /** The given slots only, in the order asked. */
  getSlotsNumbered(slots: readonly number[]): Promise<SlotRecord[]>;
  /** One slot, read consistently. */
  getSlot(slot: number): Promise<SlotRecord>;
  /**
   * Claims a slot that is free (never claimed, released, lapsed more than
   * `skewToleranceMs` ago, or ended by a task-stopped report). Undefined while another
   * worker's lease is valid. The epoch grows on every claim.
   */
  claimSlot(slot: number, workerId: string, nowMs: number, ttlMs: number, skewToleranceMs?: number): Promise<SlotClaim | undefined>;
  /**
   * Renews the caller's slot lease to `nowMs + ttlMs`. `lost` when it is no longer the
   * caller's (or has expired); throws {@link UnconfirmedError} when neither can be confirmed.
   */
  renewSlot(fence: SlotFence, nowMs: number, ttlMs: number): Promise<'renewed' | 'lost'>;
  /** Gives the slot up at once; false when it was no longer the caller's. */
  releaseSlot(fence: SlotFence, nowMs: number): Promise<boolean>;
  /**
   * Ends the lease of a slot whose task is known to have stopped at `stoppedAtMs`, unless
   * its owner claimed after the stop (a successor), or is not `stoppedWorkerId` when given.
   */
  expireStoppedOwner(slot: number, stoppedAtMs: number, nowMs: number, stoppedWorkerId?: string): Promise<boolean>;
  /** Janitor repair: sets a slot's video count from `expected` to `actual` (no-op when it moved meanwhile). */
  setVideoCount(slot: number, expected: number, actual: number): Promise<void>;
}

/**
 * What a hot spare's supervisor needs (decision 75): ends the lease of a worker process it
 * saw die, fenced by that worker's own claim. Kept apart from {@link SlotLeases} so the
 * janitor's and router's fakes need not grow.
 */
export interface DeadOwnerRelease {
  /**
   * Ends the slot lease of `fence`'s worker, known dead at `stoppedAtMs` (its supervisor
   * reaped it): only while the slot is still that worker's claim (owner and epoch), so a
   * successor's lease is never touched. The owner stays, so the next claim reads as a
   * takeover from a dead owner (the crash-loop breaker still isolates its videos), and the
   * slot is claimable at once (`ownerStoppedAtMs`, no skew allowance: the same host's
   * clock saw the death). `not-held` when the slot is no longer that claim.
   */
  endDeadOwner(fence: SlotFence, stoppedAtMs: number, nowMs: number): Promise<'ended' | 'not-held'>;
}

/** Launch grants on slot items: at most one launch per slot per grace window. */
export interface LaunchGrants {
  /** Grants one launch; the launch sequence number, or undefined when refused. */
  requestLaunch(slot: number, nowMs: number, o: LivenessOptions, mode: 'if-dead' | 'force'): Promise<number | undefined>;
  /** Withdraws grant `launchSeq` of a launch that did not happen, retryable from `retryAtMs`. */
  withdrawLaunch(slot: number, launchSeq: number, retryAtMs: number): Promise<boolean>;
  /** Records the task grant `launchSeq` started. */
  recordLaunchedTask(slot: number, launchSeq: number, taskId: string): Promise<boolean>;
}

/** Video leases: pins, adoption by a slot's owner (the token grows), release. */
export interface VideoLeases {
  /** The pins of many videos (eventually consistent: the router caches them anyway). */
  getPins(videoIds: readonly string[]): Promise<Map<string, VideoPin>>;
  /** One video's lease, read consistently; a video never seen reads as `new` with token 0. */
  getVideo(videoId: string): Promise<VideoRecord>;
  /**
   * Pins an unpinned video to a slot and counts it there. `taken` when it is pinned
   * already; `slot-full` when the slot holds `maxVideosOnSlot` videos.
   */
  pinVideo(videoId: string, slot: number, nowMs: number, maxVideosOnSlot?: number): Promise<'pinned' | 'taken' | 'slot-full'>;
  /**
   * Takes ownership of a video pinned to the caller's slot: the token grows by one. `not-here`
   * when it is pinned elsewhere or nowhere; `slot-lost` when the caller's slot lease is gone.
   */
  adoptVideo(videoId: string, fence: SlotFence, nowMs: number, options?: { readonly slotTakenOver?: boolean }): Promise<AdoptedVideo | 'not-here' | 'slot-lost'>;
  /** Unpins a video the caller owns under `token` and checkpoint `ckSeq`; false when any of that moved. */
  releaseVideo(videoId: string, fence: SlotFence, token: number, ckSeq: number, nowMs: number, retentionDays: number): Promise<boolean>;
  /** Video ids pinned to a slot (from an eventually consistent index). */
  listPinned(slot: number): Promise<string[]>;
  /** Every pinned video, by slot (from an eventually consistent index). */
  listPinnedBySlot(): Promise<Map<number, string[]>>;
}

/** The fenced commit of results, checkpoints and summaries. */
export interface FencedCommit {
  /**
   * Commits units under the slot fence and each video's token and checkpoint. Never
   * throws once anything may have been written: see {@link CommitOutcome}.
   */
  commit(fence: SlotFence, units: readonly CommitUnit[], nowMs: number): Promise<CommitOutcome>;
  /** A consistent read of what a commit decision needs (token, owner, pin, checkpoint and its commit id). Throws when the read fails. */
  readCommitState(videoId: string): Promise<VideoRecord>;
  /** Decides an `unknown` unit by re-reading its video: by commit id, never by a counter. Throws when the read fails. */
  resolveUnit(fence: SlotFence, unit: CommitUnit): Promise<StoredDecision>;
}

/** The counts of the records a replay keeps (those below its first redone frame): the rewound checkpoint starts from them. */
export interface ReplayKept {
  readonly framesOk: number;
  /** Present when any kept frame was processed late. */
  readonly framesLate?: number;
  readonly framesFailed: number;
  readonly framesGap: number;
  readonly firstFrame?: number;
  readonly lastFrame?: number;
}

/**
 * The operator's overrides of a video lease (core/commit/operations/): each conditional on
 * the token read a moment before, and each bumps it, so a worker still holding the video
 * is fenced from then on.
 */
export interface VideoOverrides {
  /** One video's lease, read consistently; a video never seen reads as `new` with token 0. */
  getVideo(videoId: string): Promise<VideoRecord>;
  /**
   * Rewinds the video to its first frame with fresh processor and rule state, frames below
   * `fromFrame` re-run silently (decision 46), token + 1, unpinned. `token-moved` when the
   * token is no longer `expectedToken` (nothing changed).
   */
  resetForReplay(videoId: string, fromFrame: number, expectedToken: number, kept: ReplayKept, nowMs: number): Promise<{ token: number } | 'token-moved'>;
  /** Unpins the video, token + 1; false when the token is no longer `expectedToken` (nothing changed). */
  forceReleaseVideo(videoId: string, expectedToken: number, nowMs: number, retentionDays: number): Promise<boolean>;
}

/** The whole lease table as the router, the janitor and the worker see it. */
export interface LeaseTable extends SlotLeases, LaunchGrants, VideoLeases, FencedCommit {}
