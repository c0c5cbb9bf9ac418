/**
 * Pure lease decisions: slot liveness, admission, launch eligibility. No AWS here;
 * the DynamoDB adapter (lease-store.ts) turns these into conditional writes.
 */
import type { VideoCheckpoint } from '../commit/checkpoint.ts';
import type { ReplayKept } from './port.ts';

/** What the leases table says about a worker slot. */
export interface SlotRecord {
  readonly slot: number;
  /** Worker id holding the slot; absent when never claimed or released. */
  readonly owner?: string;
  /** Grows on every claim: the slot-level fencing epoch. */
  readonly epoch: number;
  /** Lease expiry (epoch ms). The lease is valid only while now < expiresAtMs. */
  readonly expiresAtMs: number;
  readonly heartbeatAtMs: number;
  /** Videos currently pinned to this slot. */
  readonly videoCount: number;
  /** Launch requests granted so far; launchers derive idempotency tokens from it. */
  readonly launchSeq: number;
  readonly launchRequestedAtMs: number;
  /** Task id (ECS task ARN, local pid) the current launch grant started, once its launcher answered. */
  readonly launchTaskId?: string;
  /** A withdrawn launch may be granted again only from this time (epoch ms; 0 = at once): jittered backoff. */
  readonly launchRetryAtMs: number;
  /** Launches in a row that did not happen (withdrawn grants); 0 after one that did. Sizes the backoff. */
  readonly launchFailures: number;
  /** When the current owner claimed (epoch ms). */
  readonly claimedAtMs?: number;
  /** Set when a task-stopped report ended the owner's lease (epoch ms of the stop). */
  readonly ownerStoppedAtMs?: number;
}

export function emptySlotRecord(slot: number): SlotRecord {
  return { slot, epoch: 0, expiresAtMs: 0, heartbeatAtMs: 0, videoCount: 0, launchSeq: 0, launchRequestedAtMs: 0, launchRetryAtMs: 0, launchFailures: 0 };
}

export interface LivenessOptions {
  readonly heartbeatIntervalSeconds: number;
  readonly taskStartGraceSeconds: number;
  /**
   * How far apart two machines' clocks may be without costing liveness (tunable
   * `clockSkewToleranceMs`; 0 when absent). Expiry and heartbeat ages written by one
   * machine are judged by another's clock: take-over and suspicion wait this much longer.
   */
  readonly clockSkewToleranceMs?: number;
}

const skewOf = (o: Pick<LivenessOptions, 'clockSkewToleranceMs'>) => Math.max(0, o.clockSkewToleranceMs ?? 0);

/** A slot is live while its lease has not expired. Expiry is compared here, never left to DynamoDB TTL. */
export function isSlotLive(s: SlotRecord, nowMs: number): boolean {
  return s.owner !== undefined && s.expiresAtMs > nowMs;
}

/**
 * The slot's lease has run out even for an owner whose clock runs up to
 * `clockSkewToleranceMs` behind ours (it wrote `expiresAtMs` from its own clock), or it
 * has no owner. What take-over and launch decisions test, rather than {@link isSlotLive}.
 */
export function isSlotLapsed(s: SlotRecord, nowMs: number, o: Pick<LivenessOptions, 'clockSkewToleranceMs'>): boolean {
  return s.owner === undefined || s.expiresAtMs <= nowMs - skewOf(o);
}

/**
 * A live slot whose owner has missed two heartbeats (plus the skew tolerance, since the
 * heartbeat time is the owner's clock): probably dead, its lease not yet run out.
 */
export function isSlotSuspect(s: SlotRecord, nowMs: number, o: LivenessOptions): boolean {
  return !isSlotLapsed(s, nowMs, o) && nowMs - s.heartbeatAtMs > 2 * o.heartbeatIntervalSeconds * 1000 + skewOf(o);
}

/**
 * Whether a worker may claim the slot at `nowMs` (its own clock): the slot has no owner
 * (released), or its lease ran out more than the skew tolerance ago, or a task-stopped
 * report ended the current owner's lease (`ownerStoppedAtMs` after its claim: the owner
 * is known dead, so no skew allowance is owed). SlotLeaseStore.claimSlot's condition.
 */
export function canClaimSlot(s: SlotRecord, nowMs: number, o: Pick<LivenessOptions, 'clockSkewToleranceMs'>): boolean {
  if (s.owner === undefined || s.expiresAtMs <= nowMs - skewOf(o)) return true;
  const stoppedByReport = s.ownerStoppedAtMs !== undefined && s.ownerStoppedAtMs > (s.claimedAtMs ?? 0);
  return stoppedByReport && s.expiresAtMs <= nowMs;
}

/** A launch for this slot failed recently and its jittered backoff has not run out. */
export function isLaunchBackingOff(s: SlotRecord, nowMs: number): boolean {
  return s.launchRetryAtMs > nowMs;
}

/** Shortest backoff after a launch that did not happen. */
export const LAUNCH_RETRY_BASE_MS = 1_000;

/**
 * Delay before a slot whose launch did not happen may be granted again: 1 s doubling per
 * failure in a row, capped at half a janitor period so the next scheduled run always
 * retries (never a `taskStartGraceSeconds` block), with "equal jitter" (half fixed, half
 * random) so many slots throttled together do not retry in step.
 */
export function launchRetryDelayMs(failuresInRow: number, o: { readonly janitorIntervalSeconds: number }, random: () => number = Math.random): number {
  const capMs = Math.max(LAUNCH_RETRY_BASE_MS, (o.janitorIntervalSeconds * 1000) / 2);
  const exp = Math.min(capMs, LAUNCH_RETRY_BASE_MS * 2 ** Math.max(0, Math.min(30, failuresInRow - 1)));
  return Math.round(exp / 2 + (exp / 2) * random());
}

/** A launch was granted recently enough that its task may still be starting. */
export function isSlotLaunching(s: SlotRecord, nowMs: number, o: LivenessOptions): boolean {
  return s.launchRequestedAtMs > 0 && nowMs - s.launchRequestedAtMs < o.taskStartGraceSeconds * 1000 && s.launchRequestedAtMs > s.heartbeatAtMs;
}

export interface AdmissionDecision {
  readonly slot: number;
  /** Every slot was at `videosPerSlot`: the video is admitted anyway, visibly (a metric). */
  readonly overCapacity: boolean;
}

/**
 * Chooses the slot for a newly seen video.
 *
 * First come, first served: every new video is admitted at once, in arrival order,
 * so none can starve. Preference order:
 *  1. the least-loaded live (or launching) slot with room;
 *  2. otherwise the least-loaded slot without a task (the caller launches one) — scale out;
 *  3. otherwise, every slot is full: the least-loaded slot, flagged `overCapacity`.
 * Ties go to the lowest slot number, which keeps packing deterministic.
 */
export function chooseSlot(
  slots: readonly SlotRecord[],
  nowMs: number,
  o: LivenessOptions & { readonly videosPerSlot: number },
): AdmissionDecision {
  if (slots.length === 0) throw new Error('chooseSlot needs at least one slot');
  const byLoad = (a: SlotRecord, b: SlotRecord) => a.videoCount - b.videoCount || a.slot - b.slot;
  const active = slots.filter((s) => isSlotLive(s, nowMs) || isSlotLaunching(s, nowMs, o));
  const withRoom = active.filter((s) => s.videoCount < o.videosPerSlot).sort(byLoad);
  if (withRoom.length > 0) return { slot: withRoom[0]!.slot, overCapacity: false };
  const idle = slots.filter((s) => !active.includes(s) && s.videoCount < o.videosPerSlot).sort(byLoad);
  if (idle.length > 0) return { slot: idle[0]!.slot, overCapacity: false };
  const all = [...slots].sort(byLoad);
  return { slot: all[0]!.slot, overCapacity: true };
}

/**
 * Whether a slot that has work needs a task launched now. A slot needs one when its
 * lease has run out (beyond the skew tolerance), or when its owner looks dead (missed
 * heartbeats) — the replacement then waits for the lease to expire, which takes seconds,
 * rather than being launched only after it. Never while a previous launch is in grace
 * (a failed launch withdraws its grant, so that is a launch that may still come), nor
 * while a failed launch's backoff runs.
 */
export function needsLaunch(s: SlotRecord, nowMs: number, o: LivenessOptions): boolean {
  if (isSlotLaunching(s, nowMs, o) || isLaunchBackingOff(s, nowMs)) return false;
  return isSlotLapsed(s, nowMs, o) || isSlotSuspect(s, nowMs, o);
}

/** A checkpoint's counts (and first and last frame) as the kept records of a replay give them. */
export function keptCounts(kept: ReplayKept): Pick<VideoCheckpoint, 'framesOk' | 'framesLate' | 'framesFailed' | 'framesGap' | 'firstFrame' | 'lastFrame'> {
  return {
    framesOk: kept.framesOk,
    framesLate: kept.framesLate ?? 0,
    framesFailed: kept.framesFailed,
    framesGap: kept.framesGap,
    ...(kept.firstFrame !== undefined ? { firstFrame: kept.firstFrame } : {}),
    ...(kept.lastFrame !== undefined ? { lastFrame: kept.lastFrame } : {}),
  };
}
