/**
 * Pure lease decisions: slot liveness, admission, launch eligibility. No AWS here;
 * the DynamoDB adapter (lease-store.ts) turns these into conditional writes.
 */

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
}

export function emptySlotRecord(slot: number): SlotRecord {
  return { slot, epoch: 0, expiresAtMs: 0, heartbeatAtMs: 0, videoCount: 0, launchSeq: 0, launchRequestedAtMs: 0 };
}

export interface LivenessOptions {
  readonly heartbeatIntervalSeconds: number;
  readonly taskStartGraceSeconds: number;
}

/** A slot is live while its lease has not expired. Expiry is compared here, never left to DynamoDB TTL. */
export function isSlotLive(s: SlotRecord, nowMs: number): boolean {
  return s.owner !== undefined && s.expiresAtMs > nowMs;
}

/** A live slot whose owner has missed two heartbeats: probably dead, its lease not yet run out. */
export function isSlotSuspect(s: SlotRecord, nowMs: number, o: LivenessOptions): boolean {
  return isSlotLive(s, nowMs) && nowMs - s.heartbeatAtMs > 2 * o.heartbeatIntervalSeconds * 1000;
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
 * lease has run out, or when its owner looks dead (missed heartbeats) — the
 * replacement then waits for the lease to expire, which takes seconds, rather
 * than being launched only after it. Never while a previous launch is in grace.
 */
export function needsLaunch(s: SlotRecord, nowMs: number, o: LivenessOptions): boolean {
  if (isSlotLaunching(s, nowMs, o)) return false;
  return !isSlotLive(s, nowMs) || isSlotSuspect(s, nowMs, o);
}
