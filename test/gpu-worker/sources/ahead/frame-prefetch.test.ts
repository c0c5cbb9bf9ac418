import { describe, expect, it } from 'vitest';
import type { FrameStore } from '../../../../core/ingest/s3/frame-store.ts';
import { FramePrefetch, PREFETCH_MAX_AGE_MS, PREFETCH_MAX_BYTES } from '../../../../gpu-worker/sources/ahead/frame-prefetch.ts';

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

describe('FramePrefetch hedging (decision 38: only GETs a round waits for)', () => {
  /** A store whose GETs answer when the test says: each call gets its own deferred answer. */
  function controlled() {
    const calls: { key: string; ifMatch: string | undefined; answer: (b: Uint8Array) => void; fail: (e: Error) => void }[] = [];
    const frames = {
      get: (_bucket: string, key: string, ifMatch?: string) =>
        new Promise<Uint8Array>((answer, fail) => {
          calls.push({ key, ifMatch, answer, fail });
        }),
    } as unknown as FrameStore;
    return { frames, calls };
  }
  const tick = () => new Promise((r) => setTimeout(r, 0));
  const HEDGE_MS = 20;

  it('a prefetch that answered before its round is never sent twice, however slow it was', async () => {
    const { frames, calls } = controlled();
    let nowMs = 0;
    const prefetch = new FramePrefetch(frames, { now: () => nowMs, hedgeAfterMs: HEDGE_MS });
    prefetch.prefetch([{ ...ref('a'), eTag: '"e1"' }]);
    nowMs = 500;
    calls[0]!.answer(new Uint8Array([1]));
    await tick();

    expect(await prefetch.take('b', 'a')).toEqual(new Uint8Array([1]));
    expect(calls).toHaveLength(1);
    expect(prefetch.hedges).toBe(0);
  });

  it('a round waiting on a prefetch past hedgeAfterMs sends one more conditional GET and takes the first answer', async () => {
    const { frames, calls } = controlled();
    const prefetch = new FramePrefetch(frames, { hedgeAfterMs: HEDGE_MS });
    prefetch.prefetch([{ ...ref('a'), eTag: '"e1"' }]);
    const taken = prefetch.take('b', 'a');
    await new Promise((r) => setTimeout(r, HEDGE_MS + 20));

    expect(calls.map((c) => [c.key, c.ifMatch])).toEqual([['a', '"e1"'], ['a', '"e1"']]);
    calls[1]!.answer(new Uint8Array([2]));
    calls[0]!.answer(new Uint8Array([1]));
    expect(await taken).toEqual(new Uint8Array([2]));
    expect(prefetch.hedges).toBe(1);
  });

  it('the first GET failing after the hedge went out leaves the hedge to answer; both failing gives undefined (the runner fetches)', async () => {
    const { frames, calls } = controlled();
    const prefetch = new FramePrefetch(frames, { hedgeAfterMs: HEDGE_MS });
    prefetch.prefetch([ref('a'), ref('c')]);
    const a = prefetch.take('b', 'a');
    const c = prefetch.take('b', 'c');
    await new Promise((r) => setTimeout(r, HEDGE_MS + 20));
    const [a1, c1, a2, c2] = [calls[0]!, calls[1]!, calls.find((x, i) => i > 1 && x.key === 'a')!, calls.find((x, i) => i > 1 && x.key === 'c')!];

    a1.fail(new Error('slow down'));
    await tick();
    a2.answer(new Uint8Array([7]));
    c1.fail(new Error('slow down'));
    c2.fail(new Error('slow down'));

    expect(await a).toEqual(new Uint8Array([7]));
    expect(await c).toBeUndefined();
  });

  it('a first GET failing before the hedge is due sends nothing more', async () => {
    const { frames, calls } = controlled();
    const prefetch = new FramePrefetch(frames, { hedgeAfterMs: HEDGE_MS });
    prefetch.prefetch([ref('a')]);
    const taken = prefetch.take('b', 'a');
    calls[0]!.fail(new Error('gone'));

    expect(await taken).toBeUndefined();
    await new Promise((r) => setTimeout(r, HEDGE_MS + 20));
    expect(calls).toHaveLength(1);
    expect(prefetch.hedges).toBe(0);
  });
});
