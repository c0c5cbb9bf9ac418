/**
 * How a unit's frame records are stored (decision 56): consecutive frames of one segment
 * become one packed item; everything else stays one item per frame. Table-driven.
 */
import { inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { expandStored, isPacked, storedItems, type StoredResultItem } from '../../../core/commit/record-packing.ts';
import type { FrameResultItem } from '../../../core/commit/results.ts';

const base = { videoId: 'v', token: 3, worker: 'w', committedAtMs: 1_000 };
const seg = (first: number) => `frames/v/${String(first).padStart(6, '0')}.mp4`;
const ok = (frame: number, key: string | undefined, extra: Partial<FrameResultItem> = {}): FrameResultItem => ({ ...base, frame, status: 'ok', detections: [], ...(key ? { key } : {}), ...extra });
const gap = (frame: number): FrameResultItem => ({ ...base, frame, status: 'gap', detections: [], reason: 'missing' });

/** The stored shape in short: `p0+3` a packed item at 0 of 3 frames, `5` a plain record. */
const shape = (items: readonly StoredResultItem[]) => items.map((i) => (isPacked(i) ? `p${i.frame}+${i.packedCount}` : String(i.frame)));

describe('storedItems', () => {
  it.each([
    { name: 'a segment run packs', results: [ok(0, seg(0)), ok(1, seg(0)), ok(2, seg(0))], expected: ['p0+3'] },
    { name: 'JPEG frames stay one item each', results: [ok(0, 'frames/v/000000.jpg'), ok(1, 'frames/v/000001.jpg')], expected: ['0', '1'] },
    { name: 'a run of one stays plain', results: [ok(4, seg(0))], expected: ['4'] },
    { name: 'two segments are two items', results: [ok(0, seg(0)), ok(1, seg(0)), ok(2, seg(2)), ok(3, seg(2))], expected: ['p0+2', 'p2+2'] },
    { name: 'a gap splits the run and stays single', results: [ok(0, seg(0)), gap(1), ok(2, seg(0)), ok(3, seg(0))], expected: ['0', '1', 'p2+2'] },
    { name: 'a missing frame number splits the run', results: [ok(0, seg(0)), ok(1, seg(0)), ok(3, seg(0)), ok(4, seg(0))], expected: ['p0+2', 'p3+2'] },
    { name: 'failed frames of the segment pack with it', results: [ok(0, seg(0)), ok(1, seg(0), { status: 'failed', reason: 'decode-error', detail: 'truncated' })], expected: ['p0+2'] },
    { name: 'a frame that may replace a gap stays single', results: [ok(0, seg(0)), ok(1, seg(0), { status: 'late' }), ok(2, seg(0))], replaces: [1], expected: ['0', '1', '2'] },
  ])('$name', ({ results, replaces, expected }) => {
    expect(shape(storedItems(results, replaces))).toEqual(expected);
  });

  it('splits a run whose records pass the byte cap, and every frame is stored once', () => {
    const detections = [{ box: [1, 2, 3, 4] as [number, number, number, number], score: 0.9, label: 'car', trackId: 7 }];
    const results = Array.from({ length: 60 }, (_, f) => ok(f, seg(0), { detections }));
    const items = storedItems(results, [], 1_000);
    expect(items.length).toBeGreaterThan(2);
    for (const i of items) if (isPacked(i)) expect(inflateRawSync(i.packedRecords).byteLength).toBeLessThanOrEqual(1_000);
    expect(items.flatMap((i) => expandStored(i)).map((r) => r.frame)).toEqual(results.map((r) => r.frame));
  });
});

describe('expandStored', () => {
  const results = [ok(10, seg(10), { ptsMs: 0 }), ok(11, seg(10), { status: 'failed', reason: 'decode-error', detail: 'x', ptsMs: 33 }), ok(12, seg(10), { ptsMs: 67 })];

  it('gives back every field of every record, with the packed item it came from', () => {
    const [item] = storedItems(results.map((r) => ({ ...r, ttlEpochSeconds: 99 })));
    expect(isPacked(item!)).toBe(true);
    const back = expandStored(item!);
    expect(back).toEqual(results.map((r) => ({ ...r, ttlEpochSeconds: 99, packed: { first: 10, count: 3 } })));
  });

  it.each([
    { from: 11, to: 11, frames: [11] },
    { from: 0, to: 10, frames: [10] },
    { from: 12, to: 99, frames: [12] },
    { from: 13, to: 99, frames: [] },
  ])('clips to $from..$to', ({ from, to, frames }) => {
    const [item] = storedItems(results);
    expect(expandStored(item!, from, to).map((r) => r.frame)).toEqual(frames);
  });

  it('keeps boxes to 0.01 px, scores to 1e-4 and pts to 0.01 ms, compressed', () => {
    const detections = [{ box: [10.123456, 20.987654, 110.004999, 220.5] as [number, number, number, number], score: 0.876543219, label: 'car', trackId: 3 }];
    const run = Array.from({ length: 30 }, (_, i) => ok(i, seg(0), { detections, ptsMs: i * 33.3333333 }));
    const [item] = storedItems(run);
    const back = expandStored(item!);
    expect(back[1]!.detections).toEqual([{ box: [10.12, 20.99, 110, 220.5], score: 0.8765, label: 'car', trackId: 3 }]);
    expect(back[1]!.ptsMs).toBe(33.33);
    // 30 frames of one detection: the compressed records are a fraction of their JSON.
    expect(isPacked(item!) && item.packedRecords.byteLength).toBeLessThan(JSON.stringify(back.map((r) => r.detections)).length / 3);
  });

  it('refuses a packed item whose records disagree with its count', () => {
    const [item] = storedItems(results);
    expect(() => expandStored({ ...(item as Extract<StoredResultItem, { packedCount: number }>), packedCount: 4 })).toThrow(/3 records for a count of 4/);
  });
});
