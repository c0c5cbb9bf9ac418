/**
 * The frame sources' routing (gpu-worker/sources/frame-sources.ts): each key goes to the
 * source of its kind, behind one interface. Images and segments answer the same questions
 * differently: what an object holds, its size limit, what is learnt ahead, what covers a frame.
 */
import { describe, expect, it } from 'vitest';
import { nullMetrics, type LogSink } from '../../../core/ports.ts';
import type { FrameRef } from '../../../core/ordering/sequencer.ts';
import { createFrameSources } from '../../../gpu-worker/sources/frame-sources.ts';
import type { SegmentDescription } from '../../../gpu-worker/sources/segment/segment-reader.ts';

const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
const image = (frame: number, sizeBytes = 10): FrameRef => ({ frame, bucket: 'b', key: `frames/v/${String(frame).padStart(6, '0')}.jpg`, sizeBytes });
const segment = (frame: number, sizeBytes = 10): FrameRef => ({ frame, bucket: 'b', key: `frames/v/${String(frame).padStart(6, '0')}.mp4`, sizeBytes });

/** Sources whose segments each hold `frameCount` frames (or are unknown), recording every description asked for. */
function sources(frameCount: number | 'unknown' = 3) {
  const described: string[] = [];
  const s = createFrameSources({
    frames: {} as never,
    tunables: { maxFrameBytes: 100, maxSegmentBytes: 1_000 },
    metrics: nullMetrics,
    log: quiet,
    segmentReader: {
      describe: async (_bucket: string, key: string): Promise<SegmentDescription> => {
        described.push(key);
        return frameCount === 'unknown' ? { frameCount: 1, source: 'unknown', sizeBytes: 0, eTag: undefined } : { frameCount, source: 'declared', sizeBytes: 500, eTag: 'e' };
      },
    },
  });
  return { s, described };
}

describe('frame sources: one interface, a source per kind of object', () => {
  it('says which objects span frames: segments, never images', () => {
    const { s } = sources();
    expect([image(4), segment(0), { ...segment(0), key: 'frames/v/000000.ts' }].map((r) => s.spans(r.key))).toEqual([false, true, true]);
  });

  it.each([
    ['an empty image', image(1, 0), 'empty-object', 'zero-byte object'],
    ['an empty segment', segment(0, 0), 'empty-object', 'zero-byte object'],
    ['an image over maxFrameBytes', image(1, 101), 'oversized', '101 bytes > maxFrameBytes 100'],
    ['a segment over maxSegmentBytes', segment(0, 1_001), 'oversized', '1001 bytes > maxSegmentBytes 1000'],
  ])('screens %s by its own limit', (_name, ref, reason, detail) => {
    expect(sources().s.screen(ref)).toEqual({ status: 'failed', reason, detail });
  });

  it('passes a segment larger than an image may be, and an image within its limit', () => {
    const { s } = sources();
    expect(s.screen(segment(0, 500))).toBeUndefined();
    expect(s.screen(image(1, 100))).toBeUndefined();
  });

  it("an image holds its own frame, unread; a segment its description's [n, n + k)", async () => {
    const { s, described } = sources(3);
    expect(await s.framesOf(image(7))).toEqual({ refs: [image(7)], countUnknown: false });
    expect((await s.framesOf(segment(30))).refs.map((r) => r.frame)).toEqual([30, 31, 32]);
    expect(described).toEqual(['frames/v/000030.mp4']);
  });

  it('a segment nothing could count holds up to where the next object starts, once a listing says', async () => {
    const { s } = sources('unknown');
    expect(await s.framesOf(segment(10))).toMatchObject({ countUnknown: true, refs: [{ frame: 10 }] });
    expect((await s.framesOf(segment(10), { spanEnd: 14 })).refs.map((r) => r.frame)).toEqual([10, 11, 12, 13]);
  });

  it("learns a receive's segments side by side, never its images, and leaves a lone segment to its video", async () => {
    const two = sources();
    await two.s.learn([image(1), segment(0), segment(30)]);
    expect(two.described).toEqual(['frames/v/000000.mp4', 'frames/v/000030.mp4']);
    const one = sources();
    await one.s.learn([image(1), image(2), segment(0)]);
    expect(one.described).toEqual([]);
  });

  it('an image covers no frame but its own; a segment begun below a frame covers it while its count reaches it', async () => {
    const { s } = sources(3);
    expect(await s.covering('b', image(5).key, 6)).toBeUndefined();
    expect(await s.covering('b', segment(30).key, 32)).toEqual({ frame: 30, bucket: 'b', key: segment(30).key, sizeBytes: 500 });
    expect(await s.covering('b', segment(30).key, 33)).toBeUndefined();
    expect(await s.covering('b', segment(30).key, 30)).toBeUndefined();
  });
});
