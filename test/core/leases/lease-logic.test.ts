import { describe, expect, it } from 'vitest';
import { chooseSlot, emptySlotRecord, isSlotLive, isSlotSuspect, needsLaunch, type SlotRecord } from '../../../core/leases/lease-logic.ts';

const o = { heartbeatIntervalSeconds: 5, taskStartGraceSeconds: 60, videosPerSlot: 2 };
const NOW = 1_000_000;
const live = (slot: number, videoCount: number): SlotRecord => ({ ...emptySlotRecord(slot), owner: `w${slot}`, epoch: 1, expiresAtMs: NOW + 10_000, heartbeatAtMs: NOW - 1000, videoCount });
const dead = (slot: number, videoCount = 0): SlotRecord => ({ ...emptySlotRecord(slot), videoCount });

describe('slot liveness', () => {
  it('compares expiry itself: an expired lease is not live even if the item still exists', () => {
    expect(isSlotLive(live(0, 0), NOW)).toBe(true);
    expect(isSlotLive({ ...live(0, 0), expiresAtMs: NOW }, NOW)).toBe(false);
    expect(isSlotLive(dead(0), NOW)).toBe(false);
  });

  it('suspects a live slot whose owner missed two heartbeats', () => {
    expect(isSlotSuspect({ ...live(0, 0), heartbeatAtMs: NOW - 10_001 }, NOW, o)).toBe(true);
    expect(isSlotSuspect({ ...live(0, 0), heartbeatAtMs: NOW - 9_000 }, NOW, o)).toBe(false);
  });

  it('needs a launch when dead or suspect, but not while a launch is in grace', () => {
    expect(needsLaunch(dead(0), NOW, o)).toBe(true);
    expect(needsLaunch(live(0, 0), NOW, o)).toBe(false);
    expect(needsLaunch({ ...dead(0), launchRequestedAtMs: NOW - 1000 }, NOW, o)).toBe(false);
    expect(needsLaunch({ ...dead(0), launchRequestedAtMs: NOW - 61_000 }, NOW, o)).toBe(true);
  });
});

describe('chooseSlot (fair admission)', () => {
  it('picks the least-loaded live slot with room, lowest number on ties', () => {
    expect(chooseSlot([live(0, 1), live(1, 0), live(2, 0)], NOW, o)).toEqual({ slot: 1, overCapacity: false });
  });

  it('packs live slots before waking an idle one', () => {
    expect(chooseSlot([live(0, 1), dead(1), dead(2)], NOW, o)).toEqual({ slot: 0, overCapacity: false });
  });

  it('scales out to an idle slot when every live slot is full', () => {
    expect(chooseSlot([live(0, 2), dead(1), dead(2)], NOW, o)).toEqual({ slot: 1, overCapacity: false });
  });

  it('counts a launching slot as active so a burst does not wake every slot', () => {
    const launching = { ...dead(1), launchRequestedAtMs: NOW - 100, videoCount: 1 };
    expect(chooseSlot([live(0, 2), launching, dead(2)], NOW, o)).toEqual({ slot: 1, overCapacity: false });
  });

  it('admits over capacity, visibly, when every slot is full: nobody waits forever', () => {
    expect(chooseSlot([live(0, 3), live(1, 2)], NOW, o)).toEqual({ slot: 1, overCapacity: true });
  });
});
