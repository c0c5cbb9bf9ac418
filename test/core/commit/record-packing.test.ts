/**
 * How a unit's frame records are stored (decision 56): consecutive frames of one segment
 * become one packed item; everything else stays one item per frame. Table-driven.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeRecords, expandStored, isPacked, storedItems, type PackedRecordsItem, type StoredResultItem } from '../../../core/commit/record-packing.ts';
import type { Detection } from '../../../core/ports.ts';
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

describe('packed records, format 2 (issue 44): per-track box differences, same precision', () => {
  // Format 1's rounding (what a record read back always had): boxes and pts to 0.01, scores to 1e-4.
  const r2 = (x: number) => Number((Math.round(x / 0.01) * 0.01).toFixed(2));
  const r4 = (x: number) => Number((Math.round(x / 0.0001) * 0.0001).toFixed(4));
  /** 60 frames of 5 moving boxes with detector-like floats (seeded), tracks coming and going. */
  function movingRun(): FrameResultItem[] {
    let s = 44;
    const rnd = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    return Array.from({ length: 60 }, (_, f) => {
      const detections: Detection[] = Array.from({ length: 5 }, (_, i) => {
        const x = 100 + i * 300 + f * (1.7 + i) + rnd() * 3 - 1.5;
        const y = 50 + i * 150 + f * 0.9 + rnd() * 3;
        return { trackId: 40 + i + (f > 30 && i === 2 ? 100 : 0), label: i % 2 ? 'car' : 'person', score: 0.5 + rnd() * 0.49, box: [x, y, x + 60.123 + rnd(), y + 170.987 - rnd() * 2] };
      });
      return ok(f, seg(0), { detections, ptsMs: (f * 1000) / 30 });
    });
  }

  it('gives back every record exactly as format 1 rounds it, to the bit', () => {
    const run = movingRun();
    const [item] = storedItems(run);
    const back = expandStored(item!);
    expect(back.map((r) => ({ detections: r.detections, ptsMs: r.ptsMs }))).toEqual(
      run.map((r) => ({ detections: r.detections.map((d) => ({ trackId: d.trackId, label: d.label, score: r4(d.score), box: d.box.map(r2) })), ptsMs: r2(r.ptsMs!) })),
    );
    expect(JSON.parse(inflateRawSync((item as PackedRecordsItem).packedRecords).toString('utf8'))).toMatchObject({ v: 2 });
  });

  it('is smaller than format 1 for moving boxes (the figure behind issue 44)', () => {
    const run = movingRun();
    const item = storedItems(run)[0] as PackedRecordsItem;
    const format1 = deflateRawSync(JSON.stringify(expandStored(item).map((r) => ({ status: r.status, detections: r.detections, ptsMs: r.ptsMs })))).byteLength;
    expect(item.packedRecords.byteLength).toBeLessThan(format1 * 0.8);
  });

  it('reads an item written in format 1 (before issue 44)', () => {
    // Prepare: format 1 as it was stored: the JSON array of each frame's own fields
    const frames = [
      { status: 'ok', detections: [{ trackId: 7, label: 'car', score: 0.9123, box: [1.5, 2.25, 30, 40.01] }], ptsMs: 0 },
      { status: 'failed', detections: [], reason: 'decode-error', detail: 'truncated', ptsMs: 33.33 },
    ];
    const item: PackedRecordsItem = { videoId: 'v', frame: 5, status: 'packed', packedCount: 2, packedRecords: new Uint8Array(deflateRawSync(JSON.stringify(frames))), token: 3, worker: 'w', committedAtMs: 1_000, key: seg(5) };
    // Act / Assess
    expect(expandStored(item).map(({ frame, status, detections, reason, detail, ptsMs }) => ({ frame, status, detections, reason, detail, ptsMs }))).toEqual([
      { frame: 5, ...frames[0], reason: undefined, detail: undefined },
      { frame: 6, ...frames[1] },
    ]);
  });

  it('keeps format 1 for a run whose detections carry anything beyond track id, label, score and box', () => {
    const extra = { trackId: 1, label: 'car', score: 0.5, box: [1, 2, 3, 4], color: 'red' } as unknown as Detection;
    const [item] = storedItems([ok(0, seg(0), { detections: [extra] }), ok(1, seg(0))]);
    expect(Array.isArray(JSON.parse(inflateRawSync((item as PackedRecordsItem).packedRecords).toString('utf8')))).toBe(true);
    expect(expandStored(item!)[0]!.detections).toEqual([extra]);
  });

  it('keeps a failed frame\'s reason and detail, and frames without pts', () => {
    const run = [ok(0, seg(0)), ok(1, seg(0), { status: 'failed', reason: 'decode-error', detail: 'x' }), ok(2, seg(0), { status: 'failed', reason: 'decode-error' })];
    const back = expandStored(storedItems(run)[0]!);
    expect(back.map(({ status, reason, detail, ptsMs }) => ({ status, reason, detail, ptsMs }))).toEqual([
      { status: 'ok', reason: undefined, detail: undefined, ptsMs: undefined },
      { status: 'failed', reason: 'decode-error', detail: 'x', ptsMs: undefined },
      { status: 'failed', reason: 'decode-error', detail: undefined, ptsMs: undefined },
    ]);
  });

  it('refuses records in a format it does not know, or with a broken detection list', () => {
    expect(() => decodeRecords('{"v":3,"l":[],"f":[]}')).toThrow(/unknown format \(3\)/);
    expect(() => decodeRecords('{"v":2,"l":["car"],"f":[["ok",null,[1,0,9000]]]}')).toThrow(/groups of 7/);
    expect(() => decodeRecords('{"v":2,"l":[],"f":[["ok",null,[1,0,9000,1,2,3,4]]]}')).toThrow(/label index 0 of 0/);
  });
});
