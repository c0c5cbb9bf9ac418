import { describe, expect, it } from 'vitest';
import {
  AHEAD_SKIP_ROUNDS_AFTER_EMPTY,
  aheadSkipsAfter,
  decideRound,
  gatherWaitMs,
  idleExitCandidate,
  MAX_POLL_WAIT_SECONDS,
  pollWaitSeconds,
  STORE_RETRY_MAX_MS,
  storeOutageWait,
  type GatherFacts,
  type RoundFacts,
  type RoundDecision,
} from '../../../gpu-worker/runtime/round-policy.ts';

const facts = (over: Partial<RoundFacts>): RoundFacts => ({ received: 0, aheadInFlight: false, aheadSkips: 0, ending: false, storeDown: false, ...over });

describe('decideRound', () => {
  const rows: [string, Partial<RoundFacts>, RoundDecision][] = [
    ['a live rate (receive not full): await the commit, no receive ahead', { received: 3 }, { backlog: false, receiveAhead: false, aheadSkips: 0, commit: 'await' }],
    ['an empty receive: await', { received: 0 }, { backlog: false, receiveAhead: false, aheadSkips: 0, commit: 'await' }],
    ['a full receive is a backlog: overlap and receive ahead', { received: 10 }, { backlog: true, receiveAhead: true, aheadSkips: 0, commit: 'overlap' }],
    ['a backlog with a receive ahead already in flight: no second one', { received: 10, aheadInFlight: true }, { backlog: true, receiveAhead: false, aheadSkips: 0, commit: 'overlap' }],
    ['a backlog after an empty receive ahead: skip one round', { received: 10, aheadSkips: 3 }, { backlog: true, receiveAhead: false, aheadSkips: 2, commit: 'overlap' }],
    ['skips count down only behind a backlog', { received: 2, aheadSkips: 3 }, { backlog: false, receiveAhead: false, aheadSkips: 3, commit: 'await' }],
    ['draining or lease lost: nothing received ahead', { received: 10, ending: true }, { backlog: true, receiveAhead: false, aheadSkips: 0, commit: 'overlap' }],
    ['store unreachable: nothing received ahead, commits awaited', { received: 10, storeDown: true }, { backlog: true, receiveAhead: false, aheadSkips: 0, commit: 'await' }],
    ['segments at a live rate: the commit overlaps the next round; no receive ahead', { received: 3, segments: true }, { backlog: false, receiveAhead: false, aheadSkips: 0, commit: 'overlap' }],
    ['segments with the store unreachable: awaited', { received: 3, segments: true, storeDown: true }, { backlog: false, receiveAhead: false, aheadSkips: 0, commit: 'await' }],
    ['segments behind a backlog: as a backlog', { received: 10, segments: true }, { backlog: true, receiveAhead: true, aheadSkips: 0, commit: 'overlap' }],
  ];
  it.each(rows)('%s', (_name, over, expected) => {
    expect(decideRound(facts(over))).toEqual(expected);
  });
});

describe('aheadSkipsAfter', () => {
  it.each([
    [0, AHEAD_SKIP_ROUNDS_AFTER_EMPTY],
    [1, 0],
    [10, 0],
  ])('a receive ahead of %i messages skips %i rounds', (received, skips) => {
    expect(aheadSkipsAfter(received)).toBe(skips);
  });
});

describe('pollWaitSeconds', () => {
  const now = 100_000;
  it.each([
    ['nothing due: the longest poll', [], false, MAX_POLL_WAIT_SECONDS],
    ['no video with a wake-up', [undefined, undefined], false, MAX_POLL_WAIT_SECONDS],
    ['work due now: do not wait', [now], false, 0],
    ['work overdue: do not wait', [now - 5_000], false, 0],
    ['a deadline in 2.1 s: 3 s', [now + 2_100, undefined], false, 3],
    ['the soonest of several', [now + 4_000, now + 1_500], false, 2],
    ['far away: capped', [now + 60_000], false, MAX_POLL_WAIT_SECONDS],
    ['idle: never spin, at least 1 s', [now], true, 1],
  ] as const)('%s', (_name, wakes, idle, seconds) => {
    expect(pollWaitSeconds(wakes, now, idle)).toBe(seconds);
  });
});

describe('gatherWaitMs', () => {
  const now = 100_000;
  const GATHER_MS = 250;
  /** A live rate: the last receive, 40 ms ago, brought 2 fresh frames. */
  const live = (over: Partial<GatherFacts>): GatherFacts => ({
    receiveGatherMs: GATHER_MS,
    last: { atMs: now - 40, count: 2, oldestAgeMs: 15 },
    wakeTimesMs: [],
    nowMs: now,
    ending: false,
    storeDown: false,
    ...over,
  });
  it.each([
    ['a live rate: wait until receiveGatherMs after the last receive', {}, 210],
    ['the round took longer than the gather: receive at once', { last: { atMs: now - 400, count: 2, oldestAgeMs: 15 } }, 0],
    ['a receive just returned: the whole gather', { last: { atMs: now, count: 1, oldestAgeMs: 0 } }, GATHER_MS],
    ['no send time known: still gathers', { last: { atMs: now - 40, count: 2, oldestAgeMs: undefined } }, 210],
    ['off', { receiveGatherMs: 0 }, 0],
    ['nothing received yet (first receive)', { last: undefined }, 0],
    ['the last receive was empty (idle): the long poll takes the next frame at once', { last: { atMs: now - 40, count: 0, oldestAgeMs: undefined } }, 0],
    ['the last receive was full (a backlog)', { last: { atMs: now - 40, count: 10, oldestAgeMs: 15 } }, 0],
    ['behind: its oldest frame had already waited a gather in the queue', { last: { atMs: now - 40, count: 3, oldestAgeMs: GATHER_MS } }, 0],
    ['draining or the slot lease lost: never delayed', { ending: true }, 0],
    ['the store is down: the outage pause decides', { storeDown: true }, 0],
    ['a video wakes up sooner: until then', { wakeTimesMs: [undefined, now + 60] }, 60],
    ['a video wake-up already due: at once', { wakeTimesMs: [now - 5] }, 0],
    ['a video wake-up later than the gather: the gather', { wakeTimesMs: [now + 5_000] }, 210],
  ] as [string, Partial<GatherFacts>, number][])('%s', (_name, over, waitMs) => {
    expect(gatherWaitMs(live(over))).toBe(waitMs);
  });
});

describe('storeOutageWait', () => {
  it('receives nothing and backs off, doubling, capped', () => {
    expect(storeOutageWait(1)).toEqual({ receive: false, retryInMs: 500 });
    expect(storeOutageWait(2).retryInMs).toBe(1000);
    expect(storeOutageWait(4).retryInMs).toBe(4000);
    expect(storeOutageWait(50).retryInMs).toBe(STORE_RETRY_MAX_MS);
  });
});

describe('idleExitCandidate', () => {
  const base = { idleExitSeconds: 60, ownedVideos: 0, heldMessages: 0, lastMessageAtMs: 0, nowMs: 60_000 };
  it.each([
    ['quiet long enough, nothing owned or held', {}, true],
    ['the feature is off', { idleExitSeconds: 0 }, false],
    ['a video is owned', { ownedVideos: 1 }, false],
    ['a message is held (e.g. waiting for the store)', { heldMessages: 1 }, false],
    ['not quiet long enough', { nowMs: 59_999 }, false],
  ] as const)('%s', (_name, over, expected) => {
    expect(idleExitCandidate({ ...base, ...over })).toBe(expected);
  });
});
