/**
 * How a unit's frame records are stored (decision 56): consecutive frames of one segment
 * become one packed item; everything else stays one item per frame. Table-driven.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { expandStored, isPacked, MAX_PACKED_RECORDS_BYTES, storedItems, type PackedRecordsItem, type StoredResultItem } from '../../../core/commit/record-packing.ts';
import { decodeRecords, encodeRecords, type PackedFrame } from '../../../core/commit/record-formats.ts';
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

describe('packed records, formats 2 and 3 (issue 44): per-track box differences, same precision', () => {
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
    expect(decodeRecords(encodeRecords(decodeRecords(inflateRawSync((item as PackedRecordsItem).packedRecords)), 2))).toEqual(back.map(({ status, detections, ptsMs }) => ({ status, detections, ptsMs })));
  });

  it('is smaller than format 1 for moving boxes (the figure behind issue 44)', () => {
    const run = movingRun();
    const item = storedItems(run)[0] as PackedRecordsItem;
    const format1 = deflateRawSync(JSON.stringify(expandStored(item).map((r) => ({ status: r.status, detections: r.detections, ptsMs: r.ptsMs })))).byteLength;
    const format2 = deflateRawSync(encodeRecords(decodeRecords(inflateRawSync(item.packedRecords)), 2)).byteLength;
    expect(format2).toBeLessThan(format1 * 0.8);
    // Format 3 (decision 77): the same numbers as Rice codes, about two thirds of format 2.
    expect(item.packedRecords.byteLength).toBeLessThan(format2 * 0.75);
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

describe('packed records, format 3 (decision 77): Rice codes of the same integers', () => {
  const det = (trackId: number, box: readonly number[], score = 0.9, label = 'car'): Detection => ({ trackId, label, score, box: box as Detection['box'] });
  const f = (detections: Detection[], extra: Partial<PackedFrame> = {}): PackedFrame => ({ status: 'ok', detections, ...extra });
  /** What format 2 gives a reader for these frames (itself to the bit what format 1 gives, above). */
  const viaFormat2 = (frames: PackedFrame[]) => decodeRecords(encodeRecords(frames, 2));
  const formatOf = (bytes: Uint8Array) => (bytes[0] === 3 ? 3 : bytes[0] === 0x7b ? 2 : 1);

  it.each<{ name: string; frames: PackedFrame[]; format: 1 | 2 | 3 }>([
    { name: 'no frames', frames: [], format: 3 },
    { name: 'frames without detections, with and without pts', frames: [f([]), f([], { ptsMs: 0 }), f([]), f([], { ptsMs: 66.67 })], format: 3 },
    {
      name: 'failed and gap frames with reasons and details (unicode too), a detail without a reason',
      frames: [
        f([det(1, [1, 2, 3, 4])], { ptsMs: 0 }),
        f([], { status: 'failed', reason: 'decode-error', detail: 'truncated NAL « 5 »', ptsMs: 33.33 }),
        f([], { status: 'gap', reason: 'missing' }),
        f([], { status: 'late', detail: 'only a detail' }),
        f([det(1, [1.5, 2, 3, 4])], { ptsMs: 133.33 }),
      ],
      format: 3,
    },
    { name: 'track ids up to 2^48, and negative ones', frames: [f([det(2 ** 48, [0, 0, 1, 1]), det(-7, [0, 0, 1, 1]), det(0, [0, 0, 1, 1])]), f([det(-7, [0, 0, 1, 1]), det(2 ** 48, [1, 1, 2, 2])])], format: 3 },
    { name: 'a track id past 2^48 stays in format 2', frames: [f([det(Number.MAX_SAFE_INTEGER, [0, 0, 1, 1])]), f([det(Number.MAX_SAFE_INTEGER, [1, 1, 2, 2])])], format: 2 },
    { name: 'a box past 2^48 hundredths of a pixel stays in format 2', frames: [f([det(1, [1e13, 0, 1, 1])])], format: 2 },
    { name: 'negative and sub-pixel coordinates, scores 0 and 1', frames: [f([det(3, [-12.34, -0.01, 0.004, 1919.99], 0), det(4, [-1e6, -2e6, 3e6, 4e6], 1)]), f([det(3, [-12.35, 0, 0.01, 1920], 0.0001)])], format: 3 },
    {
      name: 'tracks that leave and come back, newcomers, reordering, a duplicate id in one frame',
      frames: [
        f([det(10, [0, 0, 10, 10]), det(11, [5, 5, 15, 15]), det(12, [9, 9, 19, 19])]),
        f([det(12, [9, 9, 19, 19]), det(10, [1, 0, 11, 10])]),
        f([det(13, [0, 0, 5, 5]), det(11, [6, 5, 16, 15]), det(10, [2, 0, 12, 10]), det(10, [2, 1, 12, 11])]),
        f([]),
        f([det(12, [10, 9, 20, 19]), det(5, [0, 0, 1, 1])]),
      ],
      format: 3,
    },
    {
      name: 'a track whose label changes, many labels, statuses from several frames',
      frames: [
        f([det(1, [0, 0, 1, 1], 0.5, 'person'), det(2, [0, 0, 1, 1], 0.5, 'bicycle')]),
        f([det(1, [0, 0, 1, 1], 0.5, 'car'), det(2, [0, 0, 1, 1], 0.5, 'bicycle')], { status: 'late' }),
        f([det(1, [0, 0, 1, 1], 0.5, 'car'), det(2, [0, 0, 1, 1], 0.5, '')]),
      ],
      format: 3,
    },
    { name: 'pts that jump back and forth', frames: [f([], { ptsMs: 1e9 }), f([], { ptsMs: 0 }), f([]), f([], { ptsMs: -33.33 }), f([], { ptsMs: 2.5e12 })], format: 3 },
    { name: 'detector floats, rounded as stored', frames: [f([det(8, [10.123456, 20.987654, 110.004999, 220.5], 0.876543219)], { ptsMs: 33.3333333 }), f([det(8, [10.2, 21.0049, 110.1, 220.55], 0.87)], { ptsMs: 66.666666 })], format: 3 },
  ])('$name: read back exactly as format 2 reads it', ({ frames, format }) => {
    // Prepare: the frames as a packed item keeps them (rounded by storedItems; a run of one is not packed)
    const stored = frames.length < 2 ? frames : expandStored(storedItems(frames.map((fr, i) => ok(i, seg(0), fr)))[0]!).map(({ status, detections, reason, detail, ptsMs }) => ({ status, detections, ...(reason !== undefined ? { reason } : {}), ...(detail !== undefined ? { detail } : {}), ...(ptsMs !== undefined ? { ptsMs } : {}) }));
    // Act
    const bytes = encodeRecords(stored);
    const back = decodeRecords(inflateRawSync(deflateRawSync(bytes)));
    // Assess
    expect(formatOf(bytes)).toBe(format);
    expect(back).toEqual(viaFormat2(stored));
    expect(back).toEqual(stored);
  });

  it('reads back 300 seeded random runs exactly as format 2 does', () => {
    let seed = 77;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    for (let run = 0; run < 300; run++) {
      const ids = Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => Math.floor(rnd() * (rnd() < 0.1 ? 2 ** 40 : 50)));
      const frames: PackedFrame[] = Array.from({ length: 1 + Math.floor(rnd() * 40) }, (_, i) => {
        const status = pick(['ok', 'ok', 'ok', 'late', 'failed', 'gap'] as const);
        const detections = ids.filter(() => rnd() < 0.7).map((id) => det(id, [rnd() * 4000 - 1000, rnd() * 2000, rnd() * 1e5, rnd() * 10], Number(rnd().toFixed(4)), pick(['car', 'person', 'bus'])));
        return f(rnd() < 0.3 ? detections.reverse() : detections, {
          status,
          ...(status !== 'ok' && rnd() < 0.8 ? { reason: pick(['decode-error', 'missing', 'x']) } : {}),
          ...(rnd() < 0.1 ? { detail: `detail ${i}` } : {}),
          ...(rnd() < 0.9 ? { ptsMs: Number((i * 33.33 + (rnd() < 0.1 ? rnd() * 1e6 : 0)).toFixed(2)) } : {}),
        });
      });
      const rounded = decodeRecords(encodeRecords(frames, 2));
      const bytes = encodeRecords(rounded);
      expect(formatOf(bytes)).toBe(3);
      expect(decodeRecords(bytes)).toEqual(rounded);
      // Never longer than format 1's JSON, which the byte cap of storedItems counts.
      expect(bytes.byteLength).toBeLessThanOrEqual(Buffer.byteLength(JSON.stringify(rounded)));
    }
  });

  it('keeps a run at the byte cap well under the 400 KB item limit, however noisy its numbers', () => {
    // Prepare: 1,000 frames of 8 detections with random boxes anywhere in ±2^40 px
    let seed = 5;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const results = Array.from({ length: 1_000 }, (_, i) =>
      ok(i, seg(0), { detections: Array.from({ length: 8 }, (_, j) => det(j * 7919 + i, [0, 1, 2, 3].map(() => (rnd() - 0.5) * 2 ** 41), rnd())), ptsMs: rnd() * 1e9 }),
    );
    // Act
    const items = storedItems(results);
    // Assess: split at the cap, each item's records format 3, compressed under the cap
    expect(items.length).toBeGreaterThan(1);
    for (const item of items) {
      const packed = item as PackedRecordsItem;
      expect(isPacked(packed)).toBe(true);
      expect(formatOf(inflateRawSync(packed.packedRecords))).toBe(3);
      expect(packed.packedRecords.byteLength).toBeLessThanOrEqual(MAX_PACKED_RECORDS_BYTES);
    }
    expect(items.flatMap((i) => expandStored(i)).map((r) => r.frame)).toEqual(results.map((r) => r.frame));
  });

  it.each<{ name: string; corrupt: (bytes: Uint8Array) => Uint8Array; error: RegExp }>([
    { name: 'cut short', corrupt: (b) => b.subarray(0, b.byteLength - 20), error: /format 3\): truncated/ },
    { name: 'with bytes after its last frame', corrupt: (b) => Buffer.concat([b, Buffer.from([0xff, 0xff])]), error: /format 3\): bytes left after the last frame/ },
    { name: 'with a header that is not JSON', corrupt: (b) => Buffer.concat([b.subarray(0, 2), Buffer.from('x'), b.subarray(3)]), error: /JSON/ },
    { name: 'with a header without its labels', corrupt: () => { const h = Buffer.from(JSON.stringify({ n: 2, s: ['ok'] })); return Buffer.concat([Buffer.from([3, h.byteLength]), h]); }, error: /without its frame count, labels or statuses/ },
  ])('refuses records $name, naming the format', ({ corrupt, error }) => {
    const bytes = encodeRecords([f([det(1, [1, 2, 3, 4]), det(2, [5, 6, 7, 8], 0.5, 'person')], { ptsMs: 0 }), f([det(1, [1, 2, 3, 5])], { ptsMs: 33.33 })]);
    expect(bytes[0]).toBe(3);
    expect(() => decodeRecords(corrupt(bytes))).toThrow(error);
  });

  it('names the video, frame and segment of a packed item whose records do not read', () => {
    const [item] = storedItems([ok(40, seg(40), { detections: [det(1, [1, 2, 3, 4])] }), ok(41, seg(40), { detections: [det(1, [1, 2, 3, 5])] })]);
    const records = inflateRawSync((item as PackedRecordsItem).packedRecords);
    const corrupt: PackedRecordsItem = { ...(item as PackedRecordsItem), packedRecords: new Uint8Array(deflateRawSync(records.subarray(0, records.byteLength - 3))) };
    expect(() => expandStored(corrupt)).toThrow(/packed records of v at frame 40 do not read \(packed records \(format 3\): truncated\).*frames\/v\/000040\.mp4/);
    expect(() => expandStored({ ...corrupt, packedRecords: new Uint8Array([1, 2, 3]) })).toThrow(/packed records of v at frame 40 do not read/);
  });
});
