/** FramePrefetch's read ahead by predicted key (decision 39): used only under its message's ETag. */
import { describe, expect, it } from 'vitest';
import { ObjectMissingError, type FrameStore } from '../../../../core/ingest/s3/frame-store.ts';
import { FramePrefetch, PREFETCH_MAX_AGE_MS } from '../../../../gpu-worker/sources/ahead/frame-prefetch.ts';

/** Objects by key with their ETags; records every GET (`v:` unconditional reads, `g:` GETs with the ETag asked). */
function store(objects: Record<string, { bytes: number[]; eTag: string }>): { frames: FrameStore; calls: string[] } {
  const calls: string[] = [];
  const find = (key: string) => {
    const o = objects[key];
    if (!o) throw new ObjectMissingError(`${key} does not exist`);
    return o;
  };
  const frames = {
    get: async (_bucket: string, key: string, ifMatch?: string) => {
      calls.push(`g:${key}@${ifMatch ?? '*'}`);
      const o = find(key);
      if (ifMatch !== undefined && ifMatch !== o.eTag) throw Object.assign(new Error('PreconditionFailed'), { name: 'PreconditionFailed' });
      return new Uint8Array(o.bytes);
    },
    getVersion: async (_bucket: string, key: string) => {
      calls.push(`v:${key}`);
      const o = find(key);
      return { bytes: new Uint8Array(o.bytes), eTag: o.eTag };
    },
  } as unknown as FrameStore;
  return { frames, calls };
}

const settle = () => new Promise((r) => setTimeout(r, 0));
const msg = (key: string, eTag?: string) => ({ bucket: 'b', key, sizeBytes: 2, ...(eTag ? { eTag } : {}) });

describe('FramePrefetch.readAhead', () => {
  it('reads the last predicted key alone, then the rest; a confirmed entry with the same ETag is used without another GET', async () => {
    // Prepare
    const { frames, calls } = store({ k1: { bytes: [1], eTag: 'e1' }, k2: { bytes: [2], eTag: 'e2' }, k3: { bytes: [3], eTag: 'e3' } });
    const prefetch = new FramePrefetch(frames);

    // Act
    prefetch.readAhead('b', ['k1', 'k2', 'k3'], 2);
    await settle();
    prefetch.confirm([msg('k1', 'e1'), msg('k2', 'e2')]);
    const [b1, b2, b3] = [await prefetch.take('b', 'k1'), await prefetch.take('b', 'k2'), await prefetch.take('b', 'k3')];

    // Assess
    expect(calls).toEqual(['v:k3', 'v:k1', 'v:k2']);
    expect([b1, b2]).toEqual([new Uint8Array([1]), new Uint8Array([2])]);
    expect(b3).toBeUndefined(); // no message has confirmed k3: not this message's version yet
    expect([prefetch.readAheadStarted, prefetch.readAheadUsed, prefetch.readAheadMissed]).toEqual([3, 2, 0]);
  });

  it('an unconfirmed entry is not used up by a take: its message may still come', async () => {
    // Prepare
    const { frames } = store({ k1: { bytes: [1], eTag: 'e1' } });
    const prefetch = new FramePrefetch(frames);
    prefetch.readAhead('b', ['k1'], 2);
    await settle();

    // Act
    const early = await prefetch.take('b', 'k1');
    prefetch.confirm([msg('k1', 'e1')]);

    // Assess
    expect(early).toBeUndefined();
    expect(await prefetch.take('b', 'k1')).toEqual(new Uint8Array([1]));
  });

  it('stops after the last predicted key when it does not exist (past the end, or not uploaded yet): one wasted GET, not ten', async () => {
    // Prepare
    const { frames, calls } = store({ k1: { bytes: [1], eTag: 'e1' }, k2: { bytes: [2], eTag: 'e2' } });
    const prefetch = new FramePrefetch(frames);

    // Act
    prefetch.readAhead('b', ['k1', 'k2', 'k3'], 2);
    await settle();
    await settle();

    // Assess
    expect(calls).toEqual(['v:k3']);
    expect([prefetch.readAheadStarted, prefetch.readAheadMissed]).toEqual([1, 1]);
    expect(prefetch.size).toBe(0); // forgotten at once: counted once, never again on expiry
    prefetch.confirm([msg('k3', 'e3')]);
    expect(await prefetch.take('b', 'k3')).toBeUndefined(); // the runner fetches it (and reports it missing) itself
  });

  it("bytes of another version are never used: the message's ETag is fetched instead", async () => {
    // Prepare: read ahead finds version e1; the message announces e2 (the object was overwritten since).
    const objects = { k1: { bytes: [1], eTag: 'e1' } };
    const { frames, calls } = store(objects);
    const prefetch = new FramePrefetch(frames);
    prefetch.readAhead('b', ['k1'], 2);
    await settle();
    objects.k1 = { bytes: [9], eTag: 'e2' };

    // Act
    prefetch.confirm([msg('k1', 'e2')]);
    const bytes = await prefetch.take('b', 'k1');

    // Assess
    expect(bytes).toEqual(new Uint8Array([9]));
    expect(calls).toEqual(['v:k1', 'g:k1@e2']);
    expect(prefetch.readAheadMissed).toBe(1);
  });

  it('a message without an ETag cannot vouch for a read ahead: the frame is fetched again', async () => {
    // Prepare
    const { frames, calls } = store({ k1: { bytes: [1], eTag: 'e1' } });
    const prefetch = new FramePrefetch(frames);
    prefetch.readAhead('b', ['k1'], 2);
    await settle();

    // Act
    prefetch.confirm([msg('k1')]);
    await prefetch.take('b', 'k1');

    // Assess
    expect(calls).toEqual(['v:k1', 'g:k1@*']);
    expect(prefetch.readAheadUsed).toBe(0);
  });

  it('decodes ahead only once a message confirms the entry and the worker says it will run the frame', async () => {
    // Prepare
    const fetched: number[] = [];
    const { frames } = store({ k1: { bytes: [1], eTag: 'e1' }, k2: { bytes: [2], eTag: 'e2' } });
    const prefetch = new FramePrefetch(frames, { onFetched: (b) => fetched.push(b[0]!) });

    // Act
    prefetch.readAhead('b', ['k1', 'k2'], 2);
    await settle();
    await settle();
    const beforeMessages = [...fetched];
    prefetch.confirm([msg('k2', 'e2')]); // a receive: confirmed, not announced
    prefetch.prefetch([msg('k1', 'e1')]); // a receive ahead whose frame will run
    await settle();
    await settle();

    // Assess
    expect(beforeMessages).toEqual([]);
    expect(fetched).toEqual([1]);
  });

  it('skips keys already held, and predictions too large for half the budget', async () => {
    // Prepare
    const { frames, calls } = store({ k1: { bytes: [1], eTag: 'e1' }, k2: { bytes: [2], eTag: 'e2' } });
    const prefetch = new FramePrefetch(frames);
    prefetch.prefetch([msg('k1', 'e1')]);

    // Act
    prefetch.readAhead('b', ['k1', 'k2'], 2);
    prefetch.readAhead('b', ['k9'], 64 * 1024 * 1024);
    await settle();
    await settle();

    // Assess
    expect(calls).toEqual(['g:k1@e1', 'v:k2']);
  });

  it('hands each object read ahead to onReadAhead as it arrives, the very array a confirmed take returns (decision 42)', async () => {
    // Prepare: k2 has no object (past the uploads); k3 vouches for k1 and k2
    const { frames } = store({ k1: { bytes: [1], eTag: 'e1' }, k3: { bytes: [3], eTag: 'e3' } });
    const seen: [string, Uint8Array][] = [];
    const prefetch = new FramePrefetch(frames, {
      onReadAhead: (bytes, key) => {
        seen.push([key, bytes]);
        if (key === 'k3') throw new Error('a hint must not fail the prefetch');
      },
    });

    // Act
    prefetch.readAhead('b', ['k1', 'k2', 'k3'], 2);
    await settle();
    await settle();
    prefetch.confirm([msg('k1', 'e1')]);
    const taken = await prefetch.take('b', 'k1');

    // Assess: absent keys are not hinted; the hinted array is the one the round gets
    expect(seen.map(([k]) => k)).toEqual(['k3', 'k1']);
    expect(taken).toBe(seen[1]![1]);
  });
});

describe('FramePrefetch: expiry (issue 32)', () => {
  it('drops a confirmed read ahead once it expires, though fresher entries were added before it: its bytes stop counting', async () => {
    // Prepare: k1 read ahead at t=0; k2 prefetched at t=5 s; k1 confirmed at t=6 s (re-added behind k2, with its start of t=0)
    let now = 0;
    const { frames } = store({ k1: { bytes: [1], eTag: 'e1' }, k2: { bytes: [2], eTag: 'e2' } });
    const prefetch = new FramePrefetch(frames, { now: () => now });
    prefetch.readAhead('b', ['k1'], 2);
    await settle();
    now = 5_000;
    prefetch.prefetch([msg('k2', 'e2')]);
    now = 6_000;
    prefetch.confirm([msg('k1', 'e1')]);
    expect(prefetch.size).toBe(2);
    // Act: past k1's age (PREFETCH_MAX_AGE_MS), not k2's
    now = PREFETCH_MAX_AGE_MS + 500;
    prefetch.prefetch([]);
    // Assess
    expect(prefetch.size).toBe(1);
    expect(await prefetch.take('b', 'k1')).toBeUndefined();
    expect(await prefetch.take('b', 'k2')).toEqual(new Uint8Array([2]));
  });
});
