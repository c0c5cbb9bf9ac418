import { describe, expect, it } from 'vitest';
import { emptyCheckpoint, type VideoCheckpoint } from '../../../core/commit/checkpoint.ts';
import { takeOverEvent, type TakeOverHandover } from '../../../core/analytics/life-events.ts';

const owned = (): VideoCheckpoint => ({ ...emptyCheckpoint(0), owners: [{ worker: 'w-old', token: 4, sinceMs: 1, fromFrame: 0 }] });

describe('takeOverEvent', () => {
  it('raises none for a first adoption (the start is video.started)', () => {
    expect(takeOverEvent('v', emptyCheckpoint(0), { worker: 'w-new', token: 1 }, 10)).toBeUndefined();
  });

  it.each<[TakeOverHandover]>([['from-dead-owner'], ['clean'], ['released']])('names the handover kind %s, with old and new owner and token', (handover) => {
    const e = takeOverEvent('v', owned(), { worker: 'w-new', token: 5 }, 10, handover)!;
    expect(e.kind).toBe('video.taken-over');
    expect(e.detail).toEqual({ oldOwner: 'w-old', oldToken: 4, newOwner: 'w-new', newToken: 5, handover });
  });

  it('gives each change of owner its own id (the new token discriminates)', () => {
    const a = takeOverEvent('v', owned(), { worker: 'w-new', token: 5 }, 10)!;
    const b = takeOverEvent('v', owned(), { worker: 'w-new', token: 6 }, 10)!;
    expect(a.eventId).not.toBe(b.eventId);
    expect(takeOverEvent('v', owned(), { worker: 'w-other', token: 5 }, 99)!.eventId).toBe(a.eventId);
  });
});
