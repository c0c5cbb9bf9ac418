/**
 * The pure take-over, suspicion and launch decisions of core/leases/lease-logic.ts, table-driven,
 * under clock skew and after failed launches. Every row places one worker's heartbeat
 * (written from the worker's clock) and one observer (a claimer, the router or the
 * janitor, reading its own clock) on a real timeline, at the default tunables.
 */
import { describe, expect, it } from 'vitest';
import {
  canClaimSlot,
  emptySlotRecord,
  isLaunchBackingOff,
  isSlotLapsed,
  isSlotSuspect,
  launchRetryDelayMs,
  needsLaunch,
  type SlotRecord,
} from '../../../core/leases/lease-logic.ts';
import { DEFAULT_TUNABLES } from '../../../core/config.ts';

const T = DEFAULT_TUNABLES;
const TTL_MS = T.slotLeaseTtlSeconds * 1000;
const HB_MS = T.heartbeatIntervalSeconds * 1000;
const REAL = 1_800_000_000_000;

/**
 * The slot as a worker whose clock reads `ownerSkewMs` ahead of real time left it by its
 * last heartbeat, `sinceHeartbeatMs` of real time ago.
 */
function heldSlot(ownerSkewMs: number, sinceHeartbeatMs: number, extra: Partial<SlotRecord> = {}): SlotRecord {
  const heartbeatAtMs = REAL - sinceHeartbeatMs + ownerSkewMs;
  return { ...emptySlotRecord(0), owner: 'w', epoch: 3, heartbeatAtMs, expiresAtMs: heartbeatAtMs + TTL_MS, claimedAtMs: heartbeatAtMs - 60_000, videoCount: 2, ...extra };
}

describe('clock skew: a live slot is never taken over, suspected or relaunched', () => {
  // The owner heartbeats every 5 s (a late heartbeat adds to the time since the last);
  // the observer's clock is off from the owner's by the skew given.
  const claimRows: { name: string; observerAheadMs: number; sinceHeartbeatMs: number }[] = [
    { name: 'a worker 10 s ahead, heartbeat 1 s late', observerAheadMs: 10_000, sinceHeartbeatMs: HB_MS + 1_000 },
    { name: 'a worker 10 s ahead, heartbeat 4 s late', observerAheadMs: 10_000, sinceHeartbeatMs: HB_MS + 4_000 },
    { name: 'a worker 14 s ahead, heartbeat on time', observerAheadMs: 14_000, sinceHeartbeatMs: HB_MS },
    { name: 'a worker 10 s behind', observerAheadMs: -10_000, sinceHeartbeatMs: HB_MS + 4_000 },
  ];
  it.each(claimRows)('claim: $name does not take the slot', ({ observerAheadMs, sinceHeartbeatMs }) => {
    // Prepare
    const s = heldSlot(0, sinceHeartbeatMs);
    // Act / Assess
    expect(canClaimSlot(s, REAL + observerAheadMs, T)).toBe(false);
  });

  const janitorRows: { name: string; observerAheadMs: number; sinceHeartbeatMs: number }[] = [
    { name: 'a janitor 10 s behind', observerAheadMs: -10_000, sinceHeartbeatMs: HB_MS },
    { name: 'a janitor 15 s behind, heartbeat 4 s late', observerAheadMs: -15_000, sinceHeartbeatMs: HB_MS + 4_000 },
    { name: 'a janitor 10 s ahead (an owner 10 s behind), heartbeat on time', observerAheadMs: 10_000, sinceHeartbeatMs: HB_MS },
    { name: 'a janitor 5 s ahead, heartbeat 4 s late', observerAheadMs: 5_000, sinceHeartbeatMs: HB_MS + 4_000 },
    { name: 'no skew, heartbeat 9 s late', observerAheadMs: 0, sinceHeartbeatMs: HB_MS + 9_000 },
  ];
  it.each(janitorRows)('router / janitor: $name neither suspects nor launches', ({ observerAheadMs, sinceHeartbeatMs }) => {
    // Prepare
    const s = heldSlot(0, sinceHeartbeatMs);
    const observerNow = REAL + observerAheadMs;
    // Act
    const decisions = { lapsed: isSlotLapsed(s, observerNow, T), suspect: isSlotSuspect(s, observerNow, T), launch: needsLaunch(s, observerNow, T) };
    // Assess
    expect(decisions).toEqual({ lapsed: false, suspect: false, launch: false });
  });

  it('without the tolerance, the same skews would have taken the live slot over and launched for it (the rows can fail)', () => {
    const noTolerance = { ...T, clockSkewToleranceMs: 0 };
    expect(canClaimSlot(heldSlot(0, HB_MS + 1_000), REAL + 10_000, noTolerance)).toBe(true);
    expect(needsLaunch(heldSlot(0, HB_MS), REAL + 10_000, noTolerance)).toBe(true);
  });
});

describe('clock skew: a dead owner is still replaced', () => {
  const rows: { name: string; sinceHeartbeatMs: number; observerSkewMs: number; expected: { claim: boolean; suspect: boolean; launch: boolean } }[] = [
    { name: 'lease ran out more than the tolerance ago: claim and launch', sinceHeartbeatMs: TTL_MS + T.clockSkewToleranceMs + 1, observerSkewMs: 0, expected: { claim: true, suspect: false, launch: true } },
    { name: 'lease ran out less than the tolerance ago: suspect, launch (the task waits to claim)', sinceHeartbeatMs: TTL_MS + 1_000, observerSkewMs: 0, expected: { claim: false, suspect: true, launch: true } },
    { name: 'missed heartbeats beyond two intervals plus the tolerance: suspect', sinceHeartbeatMs: 2 * HB_MS + T.clockSkewToleranceMs + 1, observerSkewMs: 0, expected: { claim: false, suspect: true, launch: true } },
    { name: 'a janitor 12 s behind still sees a long-dead owner as dead', sinceHeartbeatMs: 60_000, observerSkewMs: -12_000, expected: { claim: true, suspect: false, launch: true } },
  ];
  it.each(rows)('$name', ({ sinceHeartbeatMs, observerSkewMs, expected }) => {
    const s = heldSlot(0, sinceHeartbeatMs);
    const now = REAL + observerSkewMs;
    expect({ claim: canClaimSlot(s, now, T), suspect: isSlotSuspect(s, now, T), launch: needsLaunch(s, now, T) }).toEqual(expected);
  });

  it('claims at once, skew or not, a slot that was released or whose stopped owner the janitor expired', () => {
    const released: SlotRecord = { ...heldSlot(0, 1_000), owner: undefined, expiresAtMs: REAL - 1_000 };
    const stoppedAtMs = REAL - 500;
    const expiredByReport = heldSlot(0, 1_000, { expiresAtMs: stoppedAtMs, ownerStoppedAtMs: stoppedAtMs });
    const expiredByReportOfPreviousOwner = heldSlot(0, 1_000, { expiresAtMs: stoppedAtMs, ownerStoppedAtMs: REAL - 120_000 });
    expect(canClaimSlot(released, REAL, T)).toBe(true);
    expect(canClaimSlot(expiredByReport, REAL, T)).toBe(true);
    // The report was about an earlier owner (before this one claimed): the tolerance applies.
    expect(canClaimSlot(expiredByReportOfPreviousOwner, REAL, T)).toBe(false);
  });
});

describe('launch after a failed launch', () => {
  const noOwner = (extra: Partial<SlotRecord>): SlotRecord => ({ ...emptySlotRecord(0), videoCount: 1, ...extra });
  const rows: { name: string; slot: SlotRecord; launch: boolean }[] = [
    { name: 'withdrawn grant, backoff over: launch', slot: noOwner({ launchSeq: 2, launchRequestedAtMs: 0, launchRetryAtMs: REAL - 1 }), launch: true },
    { name: 'withdrawn grant, backoff running: wait', slot: noOwner({ launchSeq: 2, launchRequestedAtMs: 0, launchRetryAtMs: REAL + 500 }), launch: false },
    { name: 'grant in grace (a launch that may still come): wait', slot: noOwner({ launchSeq: 2, launchRequestedAtMs: REAL - 60_000 }), launch: false },
    { name: 'grant past the grace: launch', slot: noOwner({ launchSeq: 2, launchRequestedAtMs: REAL - T.taskStartGraceSeconds * 1000 - 1 }), launch: true },
  ];
  it.each(rows)('$name', ({ slot, launch }) => {
    expect(needsLaunch(slot, REAL, T)).toBe(launch);
    expect(isLaunchBackingOff(slot, REAL)).toBe(slot.launchRetryAtMs > REAL);
  });

  const delays: { failures: number; random: number; ms: number }[] = [
    { failures: 1, random: 0, ms: 500 },
    { failures: 1, random: 1, ms: 1_000 },
    { failures: 3, random: 0.5, ms: 3_000 },
    { failures: 6, random: 1, ms: 30_000 },
    { failures: 50, random: 0, ms: 15_000 },
    { failures: 50, random: 1, ms: 30_000 },
  ];
  it.each(delays)('backoff after $failures failure(s) in a row, jitter $random: $ms ms (never beyond half a janitor period)', ({ failures, random, ms }) => {
    expect(launchRetryDelayMs(failures, T, () => random)).toBe(ms);
    expect(launchRetryDelayMs(failures, T, () => random)).toBeLessThanOrEqual((T.janitorIntervalSeconds * 1000) / 2);
  });
});
