import { describe, expect, it } from 'vitest';
import type { FrameStore } from '../../../core/aws/frame-store.ts';
import { FramePrefetch, PREFETCH_MAX_AGE_MS, PREFETCH_MAX_BYTES } from '../../../gpu-worker/runtime/frame-prefetch.ts';

/** A FrameStore stand-in: records GETs, answers from a map, fails for keys not in it. */
function store(objects: Record<string, Uint8Array>): { frames: FrameStore; gets: string[] } {
  const gets: string[] = [];
  const frames = {
    get: async (_bucket: string, key: string) => {
      gets.push(key);
      const body = objects[key];
      if (!body) throw Object.assign(new Error(`${key} does not exist`), { name: 'ObjectMissingError' });
      return body;
    },
  } as unknown as FrameStore;
  return { frames, gets };
}

const ref = (key: string, sizeBytes = 3) => ({ bucket: 'b', key, sizeBytes });

describe('FramePrefetch', () => {
  it('hands a prefetched object to the first take only', async () => {
    // Prepare
    const { frames, gets } = store({ a: new Uint8Array([1, 2, 3]) });
    const prefetch = new FramePrefetch(frames);

    // Act
    prefetch.prefetch([ref('a'), ref('a')]);
    const first = await prefetch.take('b', 'a');
    const second = await prefetch.take('b', 'a');

    // Assess
    expect(first).toEqual(new Uint8Array([1, 2, 3]));
    expect(second).toBeUndefined();
    expect(gets).toEqual(['a']);
    expect([prefetch.started, prefetch.used, prefetch.size]).toEqual([1, 1, 0]);
  });

  it('forgets a failed GET (the runner fetches again and reports it) without an unhandled rejection', async () => {
    // Prepare
    const { frames } = store({});
    const prefetch = new FramePrefetch(frames);

    // Act
    prefetch.prefetch([ref('missing')]);
    await new Promise((r) => setTimeout(r, 0));

    // Assess
    expect(await prefetch.take('b', 'missing')).toBeUndefined();
    expect(prefetch.used).toBe(0);
  });

  it('does not use an entry older than PREFETCH_MAX_AGE_MS, and drops such entries on the next prefetch', async () => {
    // Prepare
    let nowMs = 0;
    const { frames, gets } = store({ a: new Uint8Array([1]), b: new Uint8Array([2]), c: new Uint8Array([3]) });
    const prefetch = new FramePrefetch(frames, { now: () => nowMs });
    prefetch.prefetch([ref('a'), ref('b')]);

    // Act
    nowMs = PREFETCH_MAX_AGE_MS + 1;
    const stale = await prefetch.take('b', 'a');
    prefetch.prefetch([ref('c')]);

    // Assess: 'a' was not served, 'b' (never taken) is gone, 'c' is held.
    expect(stale).toBeUndefined();
    expect(prefetch.size).toBe(1);
    expect(await prefetch.take('b', 'c')).toEqual(new Uint8Array([3]));
    expect(gets).toEqual(['a', 'b', 'c']);
  });

  it('holds at most PREFETCH_MAX_BYTES, evicting the oldest first, and leaves empty or larger objects to the runner', async () => {
    // Prepare
    const half = PREFETCH_MAX_BYTES / 2;
    const { frames, gets } = store({ a: new Uint8Array(1), b: new Uint8Array(1), c: new Uint8Array(1), big: new Uint8Array(1), empty: new Uint8Array(0) });
    const prefetch = new FramePrefetch(frames);

    // Act
    prefetch.prefetch([ref('a', half), ref('b', half), ref('c', half), ref('big', PREFETCH_MAX_BYTES + 1), ref('empty', 0)]);

    // Assess: 'a' made room for 'c'.
    expect(gets).toEqual(['a', 'b', 'c']);
    expect(await prefetch.take('b', 'a')).toBeUndefined();
    expect(await prefetch.take('b', 'b')).toBeDefined();
    expect(await prefetch.take('b', 'c')).toBeDefined();
  });

  it('passes fetched bytes on to be decoded ahead, before a take in flight gets them, but not those of a dropped entry', async () => {
    // Prepare
    const half = PREFETCH_MAX_BYTES / 2;
    const objects = { a: new Uint8Array([1]), b: new Uint8Array([2]), c: new Uint8Array([3]), missing: undefined as never };
    const { frames } = store(objects);
    const events: string[] = [];
    const prefetch = new FramePrefetch(frames, { onFetched: (bytes) => events.push(`fetched ${bytes[0]}`) });

    // Act: 'a' is taken while its GET is in flight; 'b' is evicted by 'c' before its bytes arrive.
    prefetch.prefetch([ref('a'), ref('missing')]);
    const taking = prefetch.take('b', 'a').then((bytes) => events.push(`taken ${bytes?.[0]}`));
    prefetch.prefetch([ref('b', half), ref('c', half + 1)]);
    await taking;
    await new Promise((r) => setTimeout(r, 0));

    // Assess
    expect(events.indexOf('fetched 1')).toBeLessThan(events.indexOf('taken 1'));
    expect(events.filter((e) => e.startsWith('fetched')).sort()).toEqual(['fetched 1', 'fetched 3']);
  });

  it('survives a decode-ahead callback that throws', async () => {
    // Prepare: an unhandled rejection would fail the test run.
    const { frames } = store({ a: new Uint8Array([1]) });
    const prefetch = new FramePrefetch(frames, {
      onFetched: () => {
        throw new Error('boom');
      },
    });

    // Act
    prefetch.prefetch([ref('a')]);
    const bytes = await prefetch.take('b', 'a');
    await new Promise((r) => setTimeout(r, 0));

    // Assess
    expect(bytes).toEqual(new Uint8Array([1]));
  });
});

describe('FramePrefetch and object versions', () => {
  it('fetches ahead only the version the notification announced (a conditional GET on its ETag)', async () => {
    const calls: [string, string | undefined][] = [];
    const frames = {
      get: async (_bucket: string, key: string, ifMatch?: string) => {
        calls.push([key, ifMatch]);
        if (ifMatch === 'old') throw Object.assign(new Error('At least one of the pre-conditions you specified did not hold'), { name: 'PreconditionFailed' });
        return new Uint8Array([7]);
      },
    } as unknown as FrameStore;
    const prefetch = new FramePrefetch(frames);
    prefetch.prefetch([
      { bucket: 'b', key: 'a', sizeBytes: 1, eTag: 'old' },
      { bucket: 'b', key: 'c', sizeBytes: 1, eTag: 'v2' },
      { bucket: 'b', key: 'd', sizeBytes: 1 },
    ]);
    // The overwritten object is not handed out (the runner fetches it itself); the others are.
    expect(await prefetch.take('b', 'a')).toBeUndefined();
    expect(await prefetch.take('b', 'c')).toEqual(new Uint8Array([7]));
    expect(await prefetch.take('b', 'd')).toEqual(new Uint8Array([7]));
    expect(calls).toEqual([
      ['a', 'old'],
      ['c', 'v2'],
      ['d', undefined],
    ]);
  });
});
