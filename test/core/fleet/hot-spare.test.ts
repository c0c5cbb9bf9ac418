import { describe, expect, it } from 'vitest';
import { deathsWithin, DEATH_WINDOW_MS, EXIT_SUPERVISOR_GAVE_UP, exitVerdict, frozenPrimary, MAX_PRIMARY_DEATHS, MAX_SPARE_DEATHS, standbyTarget, type ChildExit } from '../../../core/fleet/hot-spare.ts';
import { emptySlotRecord, type SlotRecord } from '../../../core/leases/lease-logic.ts';
import { PARK_AFTER_TRIES } from '../../../gpu-worker/runtime/crash/crash-breaker.ts';

const primary = (code: number | null, signal: string | null = null): ChildExit => ({ role: 'primary', code, signal });

describe('the supervisor\'s verdict on a worker process\'s exit (decision 75)', () => {
  it.each([
    { what: 'kill -9 of the primary', exit: primary(null, 'SIGKILL'), deaths: 1, spare: true, want: { kind: 'failover' } },
    { what: 'a native crash (SIGSEGV)', exit: primary(null, 'SIGSEGV'), deaths: 1, spare: true, want: { kind: 'failover' } },
    { what: 'an uncaught error (exit 1)', exit: primary(1), deaths: 1, spare: true, want: { kind: 'failover' } },
    { what: 'a broken processor (exit 4): the spare has its own', exit: primary(4), deaths: 1, spare: true, want: { kind: 'failover' } },
    { what: 'drained, idle or no slot (exit 0): the task ends', exit: primary(0), deaths: 0, spare: true, want: { kind: 'exit', code: 0 } },
    { what: 'lease taken by another task (exit 3): nothing for a spare', exit: primary(3), deaths: 0, spare: true, want: { kind: 'exit', code: 3 } },
    { what: 'a poison frame\'s third death still fails over', exit: primary(null, 'SIGKILL'), deaths: MAX_PRIMARY_DEATHS - 1, spare: true, want: { kind: 'failover' } },
    { what: 'too many deaths: the task ends as crashed', exit: primary(null, 'SIGKILL'), deaths: MAX_PRIMARY_DEATHS, spare: true, want: { kind: 'give-up', code: EXIT_SUPERVISOR_GAVE_UP } },
    { what: 'too many broken processors: exit 4 kept', exit: primary(4), deaths: MAX_PRIMARY_DEATHS, spare: true, want: { kind: 'give-up', code: 4 } },
    { what: 'no spare to promote: ends with the code', exit: primary(1), deaths: 1, spare: false, want: { kind: 'give-up', code: 1 } },
    { what: 'no spare, killed: a crash', exit: primary(null, 'SIGKILL'), deaths: 1, spare: false, want: { kind: 'give-up', code: EXIT_SUPERVISOR_GAVE_UP } },
    { what: 'the spare died: another is started', exit: { role: 'spare', code: 1, signal: null } as ChildExit, deaths: 1, spare: false, want: { kind: 'replace-spare' } },
    { what: 'the spare keeps dying: the primary runs alone', exit: { role: 'spare', code: 1, signal: null } as ChildExit, deaths: MAX_SPARE_DEATHS, spare: false, want: { kind: 'run-without-spare' } },
  ])('$what', ({ exit, deaths, spare, want }) => {
    expect(exitVerdict(exit, deaths, spare)).toEqual(want);
  });

  it('lets a poison frame kill the owner and both isolated successors before it gives up (the breaker parks it first)', () => {
    // The owner (mixed round) and PARK_AFTER_TRIES successors running the frame alone.
    expect(MAX_PRIMARY_DEATHS).toBeGreaterThan(1 + PARK_AFTER_TRIES);
  });

  it.each([
    { at: [], now: 0, want: 0 },
    { at: [0, 1_000], now: 2_000, want: 2 },
    { at: [0, 1_000], now: DEATH_WINDOW_MS + 500, want: 1 },
    { at: [0], now: DEATH_WINDOW_MS, want: 0 },
  ])('deaths at $at count $want at $now', ({ at, now, want }) => {
    expect(deathsWithin(at, now)).toBe(want);
  });

  it.each([
    { expiry: undefined, now: 10_000, want: false },
    { expiry: 15_000, now: 14_999, want: false },
    { expiry: 15_000, now: 15_000, want: true },
    { expiry: 15_000, now: 40_000, want: true },
  ])('a primary whose confirmed lease runs to $expiry is frozen at $now: $want', ({ expiry, now, want }) => {
    expect(frozenPrimary(expiry, now)).toBe(want);
  });
});

describe('which slot a standby takes (decision 75)', () => {
  const slot = (n: number, over: Partial<SlotRecord>): SlotRecord => ({ ...emptySlotRecord(n), ...over });
  const skew = { clockSkewToleranceMs: 1_000 };
  it.each([
    { what: 'a live lease: none', slots: [slot(0, { owner: 'a', expiresAtMs: 10_000, videoCount: 2 })], now: 9_000, want: undefined },
    { what: 'lapsed within the skew tolerance: none yet', slots: [slot(0, { owner: 'a', expiresAtMs: 10_000, videoCount: 2 })], now: 10_500, want: undefined },
    { what: 'lapsed past the tolerance, with videos: taken', slots: [slot(0, { owner: 'a', expiresAtMs: 10_000, videoCount: 2 })], now: 11_000, want: 0 },
    { what: 'ended by a stop report: taken at once', slots: [slot(0, { owner: 'a', expiresAtMs: 10_000, claimedAtMs: 1, ownerStoppedAtMs: 10_000, videoCount: 1 })], now: 10_001, want: 0 },
    { what: 'lapsed but no videos: left to a launch when work comes', slots: [slot(0, { owner: 'a', expiresAtMs: 10_000, videoCount: 0 })], now: 20_000, want: undefined },
    { what: 'released (no owner): left to the router and janitor', slots: [slot(0, { expiresAtMs: 10_000, videoCount: 3 })], now: 20_000, want: undefined },
    {
      what: 'two lapsed: the one that lapsed first',
      slots: [slot(0, { owner: 'a', expiresAtMs: 12_000, videoCount: 1 }), slot(1, { owner: 'b', expiresAtMs: 11_000, videoCount: 1 })],
      now: 20_000,
      want: 1,
    },
  ])('$what', ({ slots, now, want }) => {
    expect(standbyTarget(slots, now, skew)).toBe(want);
  });
});
