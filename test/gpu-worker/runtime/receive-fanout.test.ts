/** The receive fan-out decision (gpu-worker/runtime/receive-fanout.ts, decision 30), table-driven. */
import { describe, expect, it } from 'vitest';
import { extraReceives, type FanoutInput } from '../../../gpu-worker/runtime/receive-fanout.ts';

const base: FanoutInput = { received: 10, maxMessages: 10, receiveConcurrency: 8, idleVideos: 15 };

describe('extraReceives', () => {
  it.each<[string, Partial<FanoutInput>, number]>([
    ['a full receive behind a backlog of many videos: up to the concurrency less the first', {}, 7],
    ['a full receive, 3 other idle videos: one receive each', { idleVideos: 3 }, 3],
    ['a full receive, every other video committing or received: none (their groups are blocked)', { idleVideos: 0 }, 0],
    ['a full receive before any video is owned: all the room', { idleVideos: undefined }, 7],
    ['a receive that was not full drained the visible messages: none', { received: 9 }, 0],
    ['an empty receive: none', { received: 0 }, 0],
    ['concurrency 1 (the old worker): never', { receiveConcurrency: 1 }, 0],
    ['concurrency 2: one at most', { receiveConcurrency: 2 }, 1],
    ['fauxqs-like smaller pages: full is relative to maxMessages', { received: 5, maxMessages: 5, idleVideos: 2 }, 2],
    ['16 videos owned, 15 idle: half of them in all (the first receive and 7 more)', { receiveConcurrency: 16, ownedVideos: 16 }, 7],
    ['32 videos owned, concurrency 16: 15 more, the concurrency binds before the half', { receiveConcurrency: 16, ownedVideos: 32, idleVideos: 31 }, 15],
    ['9 videos owned: 5 in all (half, rounded up)', { receiveConcurrency: 16, ownedVideos: 9 }, 4],
    ['2 videos owned: one per round, the other commits meanwhile', { ownedVideos: 2, idleVideos: 1 }, 0],
    ['none owned yet: the cohort cap does not apply', { receiveConcurrency: 16, ownedVideos: 0, idleVideos: undefined }, 15],
  ])('%s', (_name, patch, expected) => {
    expect(extraReceives({ ...base, ...patch })).toBe(expected);
  });
});
