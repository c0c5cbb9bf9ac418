/**
 * Segments read ahead in the worker's prefetch (decision 51): a byte budget of their own,
 * GETs conditional on the described version, failures forgotten (the reader's own GET
 * reports them), and a video's entries dropped when the worker lets the video go.
 */
import { describe, expect, it } from 'vitest';
import type { FrameStore } from '../../../../core/ingest/s3/frame-store.ts';
import { FramePrefetch, PREFETCH_MAX_BYTES, SEGMENT_AHEAD_MAX_AGE_MS } from '../../../../gpu-worker/sources/ahead/frame-prefetch.ts';

/** A FrameStore stand-in: records GETs (with their If-Match), answers from a map, fails for keys not in it. */
function store(objects: Record<string, Uint8Array>): { frames: FrameStore; gets: { key: string; ifMatch: string | undefined }[] } {
  const gets: { key: string; ifMatch: string | undefined }[] = [];
  const frames = {
    get: async (_bucket: string, key: string, ifMatch?: string) => {
      gets.push({ key, ifMatch });
      const body = objects[key];
      if (!body) throw Object.assign(new Error(`${key} does not exist`), { name: 'ObjectMissingError' });
      return body;
    },
  } as unknown as FrameStore;
  return { frames, gets };
}

const segment = (key: string, sizeBytes: number, videoId = 'v') => ({ bucket: 'b', key, sizeBytes, eTag: `etag-${key}`, videoId });
const bytes = (n: number) => new Uint8Array(n).fill(7);

describe('FramePrefetch: segments read ahead', () => {
  it('starts GETs in order while they fit the budget, conditional on the described ETag, and frees the budget when one is taken', async () => {
    // Prepare
    const { frames, gets } = store({ s0: bytes(40), s1: bytes(40), s2: bytes(40) });
    const prefetch = new FramePrefetch(frames);

    // Act: three segments of 40 bytes against a budget of 100
    const first = prefetch.prefetchSegments([segment('s0', 40), segment('s1', 40), segment('s2', 40)], 100);
    const heldThen = prefetch.segmentBytesHeld;
    const taken = await prefetch.take('b', 's0');
    const second = prefetch.prefetchSegments([segment('s1', 40), segment('s2', 40)], 100);

    // Assess
    expect(first).toBe(2);
    expect(heldThen).toBe(80);
    expect(taken).toEqual(bytes(40));
    expect(second).toBe(1);
    expect(gets).toEqual([
      { key: 's0', ifMatch: 'etag-s0' },
      { key: 's1', ifMatch: 'etag-s1' },
      { key: 's2', ifMatch: 'etag-s2' },
    ]);
    expect(prefetch.segmentBytesHeld).toBe(80);
    expect([prefetch.segmentsStarted, prefetch.segmentsUsed]).toEqual([3, 1]);
  });

  it('keeps segments and frames in budgets of their own: neither evicts the other, and segments never reach onFetched', async () => {
    // Prepare
    const fetched: Uint8Array[] = [];
    const { frames } = store({ s0: bytes(5), a: bytes(3) });
    const prefetch = new FramePrefetch(frames, { onFetched: (b) => fetched.push(b) });

    // Act: a segment, then frames that fill the frame budget twice over
    prefetch.prefetchSegments([segment('s0', 5)], 10);
    prefetch.prefetch([{ bucket: 'b', key: 'a', sizeBytes: PREFETCH_MAX_BYTES }]);
    await new Promise((r) => setTimeout(r, 0));
    // Evicts 'a' (the frame budget is full), not the segment.
    prefetch.prefetch([{ bucket: 'b', key: 'missing', sizeBytes: PREFETCH_MAX_BYTES }]);
    await new Promise((r) => setTimeout(r, 0));

    // Assess: the segment is still held and taken whole; only the frame went to onFetched
    expect(await prefetch.take('b', 's0')).toEqual(bytes(5));
    expect(await prefetch.take('b', 'a')).toBeUndefined();
    expect(fetched).toEqual([bytes(3)]);
  });

  it('forgets a failed GET: the take finds nothing (the reader fetches and reports it itself)', async () => {
    // Prepare
    const { frames } = store({});
    const prefetch = new FramePrefetch(frames);

    // Act
    prefetch.prefetchSegments([segment('gone', 10)], 100);
    await new Promise((r) => setTimeout(r, 0));

    // Assess
    expect(await prefetch.take('b', 'gone')).toBeUndefined();
    expect([prefetch.segmentsFailed, prefetch.segmentsUsed]).toEqual([1, 0]);
  });

  it("drops a video's entries when the worker lets it go, and only that video's", async () => {
    // Prepare
    const { frames } = store({ a0: bytes(10), b0: bytes(10) });
    const prefetch = new FramePrefetch(frames);
    prefetch.prefetchSegments([segment('a0', 10, 'va'), segment('b0', 10, 'vb')], 100);

    // Act
    prefetch.dropVideo('va');

    // Assess
    expect(await prefetch.take('b', 'a0')).toBeUndefined();
    expect(await prefetch.take('b', 'b0')).toEqual(bytes(10));
    expect(prefetch.segmentsDropped).toBe(1);
    expect(prefetch.segmentBytesHeld).toBe(0);
  });

  it('does not hand out a segment held past SEGMENT_AHEAD_MAX_AGE_MS, and frees its budget', async () => {
    // Prepare
    let now = 0;
    const { frames } = store({ s0: bytes(10), s1: bytes(10) });
    const prefetch = new FramePrefetch(frames, { now: () => now });
    prefetch.prefetchSegments([segment('s0', 10)], 10);

    // Act
    now = SEGMENT_AHEAD_MAX_AGE_MS + 1;
    const started = prefetch.prefetchSegments([segment('s1', 10)], 10);

    // Assess
    expect(started).toBe(1);
    expect(await prefetch.take('b', 's0')).toBeUndefined();
    expect(prefetch.segmentsDropped).toBe(1);
  });
});
