/**
 * The janitor's duties that are units of their own, as pure rules (table-driven): which
 * standby seats get a launch (standby-seats.ts), whether a stopped task held its slot
 * (stopped-task.ts), and which slot DLQs a run reads for the fleet gauge
 * (slot-dlq-gauge.ts). The janitor's runs over them are janitor-*.test.ts and the simulation.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TUNABLES, type Tunables } from '../../../core/config.ts';
import { emptySlotRecord, type SlotRecord } from '../../../core/leases/lease-logic.ts';
import { isStandbySeat, standbyLaunchesDue, standbySeats } from '../../../core/fleet/standby-seats.ts';
import { stoppedTaskHeldSlot, type StoppedLeaseExpiry } from '../../../core/fleet/stopped-task.ts';
import { slotDlqsToRead } from '../../../core/fleet/slot-dlq-gauge.ts';

const NOW = 10_000_000;
const t: Tunables = { ...DEFAULT_TUNABLES, slotCount: 4, standbyWorkers: 2 };
const held = (slot: number, extra: Partial<SlotRecord> = {}): SlotRecord => ({ ...emptySlotRecord(slot), owner: 'w', epoch: 1, claimedAtMs: NOW - 60_000, heartbeatAtMs: NOW - 1_000, expiresAtMs: NOW + 14_000, ...extra });
const skewMs = t.clockSkewToleranceMs;

describe('standby seats (decision 75)', () => {
  it('numbers the seats past the slots, and tells a seat from a slot', () => {
    expect(standbySeats(t)).toEqual([4, 5]);
    expect(standbySeats({ slotCount: 4, standbyWorkers: 0 })).toEqual([]);
    expect([0, 3, 4, 5].map((s) => isStandbySeat(s, t))).toEqual([false, false, true, true]);
  });

  const cases: { name: string; seat: SlotRecord; stopped: boolean; want: { mode: 'force' | 'if-dead'; reason: string } | undefined }[] = [
    { name: 'a seat never held', seat: emptySlotRecord(4), stopped: false, want: { mode: 'if-dead', reason: 'standby seat empty' } },
    { name: 'a seat whose standby heartbeats', seat: held(4), stopped: false, want: undefined },
    { name: 'a seat whose lease lapsed within the skew tolerance', seat: held(4, { expiresAtMs: NOW - skewMs + 1 }), stopped: false, want: undefined },
    { name: 'a seat whose lease lapsed beyond the skew tolerance', seat: held(4, { expiresAtMs: NOW - skewMs }), stopped: false, want: { mode: 'if-dead', reason: 'standby seat empty' } },
    { name: 'a seat whose launch is in grace', seat: { ...emptySlotRecord(4), launchSeq: 1, launchRequestedAtMs: NOW - 1_000 }, stopped: false, want: undefined },
    { name: 'a seat whose standby was reported stopped (lease ended by the report)', seat: held(4, { expiresAtMs: NOW, ownerStoppedAtMs: NOW - 500 }), stopped: true, want: { mode: 'force', reason: 'standby task stopped' } },
  ];
  it.each(cases)('$name', ({ seat, stopped, want }) => {
    const due = standbyLaunchesDue([seat], NOW, t, stopped);
    expect(due.map(({ mode, reason }) => ({ mode, reason }))).toEqual(want ? [want] : []);
    if (want) expect(due[0]!.seat).toBe(seat);
  });
});

describe('whether a stopped task held its slot', () => {
  const STOP = NOW - 2_000;
  const cases: { name: string; s: SlotRecord; expiry: StoppedLeaseExpiry; want: boolean }[] = [
    { name: 'lease expired by the report', s: held(0, { expiresAtMs: NOW }), expiry: 'expired', want: true },
    { name: 'slot never owned', s: emptySlotRecord(0), expiry: 'not-held', want: true },
    { name: 'another owner, live', s: held(0), expiry: 'not-held', want: false },
    { name: 'expiry failed, owner silent since the stop', s: held(0, { heartbeatAtMs: STOP - 1 }), expiry: 'failed', want: true },
    { name: 'expiry failed, owner heartbeated after the stop', s: held(0, { heartbeatAtMs: STOP + 1 }), expiry: 'failed', want: false },
  ];
  it.each(cases)('$name', ({ s, expiry, want }) => {
    expect(stoppedTaskHeldSlot(s, NOW, expiry, STOP)).toBe(want);
  });
});

describe('which slot DLQs a run reads', () => {
  const lookbackMs = (2 * t.janitorIntervalSeconds + t.slotLeaseTtlSeconds) * 1000;
  it('reads every DLQ up to the sweep size', () => {
    const slots = [emptySlotRecord(0), held(1), held(2, { heartbeatAtMs: NOW - lookbackMs - 1 })];
    expect(slotDlqsToRead(slots, NOW, t).map((s) => s.slot)).toEqual([0, 1, 2]);
  });
  it('beyond it, the recently owned slots and this run\'s sweep group only', () => {
    const big = { ...t, slotCount: 300 }; // 3 sweep groups
    const period = big.janitorIntervalSeconds * 1000;
    const now = 7 * period; // group 7 % 3 = 1
    const slots = [
      emptySlotRecord(0), // group 0, never owned: not read
      emptySlotRecord(1), // group 1: read
      held(3, { heartbeatAtMs: now - lookbackMs }), // group 0, owned within the lookback: read
      held(6, { heartbeatAtMs: now - lookbackMs - 1 }), // group 0, owned before it: not read
    ];
    expect(slotDlqsToRead(slots, now, big).map((s) => s.slot)).toEqual([1, 3]);
  });
});
