/**
 * An object nothing could count (decision 59): the segment reader fails every frame of its
 * span as it failed the first, with the same reason, reading the object once. No decoder
 * runs on a real stream here: the bytes are not a video.
 */
import { describe, expect, it } from 'vitest';
import type { FrameSource } from '../../../../core/ingest/port.ts';
import { nullMetrics, type LogSink } from '../../../../core/ports.ts';
import { SegmentReader, type SegmentFrame } from '../../../../gpu-worker/sources/segment/segment-reader.ts';

const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
const GARBAGE = new TextEncoder().encode('this is not a video');
const KEY = 'frames/v/000000.mp4';

const show = (f: SegmentFrame) => ('pixels' in f ? 'ok' : f.failed.status === 'failed' ? `failed:${f.failed.reason}` : 'ok');

describe('SegmentReader: the span of an object whose frame count is unknown', () => {
  it('fails frames 1.. of the span with frame 0\'s reason, and GETs the object once', async () => {
    // Prepare: no declared count, not a video
    const reads: string[] = [];
    const frames: Pick<FrameSource, 'head' | 'getVersion'> = {
      head: async () => ({ sizeBytes: GARBAGE.byteLength, eTag: 'e1', metadata: {} }),
      getVersion: async (_b, key) => {
        reads.push(key);
        return { bytes: GARBAGE, eTag: 'e1' };
      },
    };
    const r = new SegmentReader({ frames, log: quiet, metrics: nullMetrics, maxSegmentBytes: 1 << 20, hardware: 'cpu' });
    // Act
    const d = await r.describe('b', KEY);
    const out: SegmentFrame[] = [];
    for (let f = 0; f < 5; f++) out.push(await r.frame({ frame: f, bucket: 'b', key: KEY, sizeBytes: GARBAGE.byteLength }));
    await r.closeAll();
    // Assess: one count (unknown, 1) and the reason of frame 0 on each; the detail names the frame
    expect(d).toMatchObject({ source: 'unknown', frameCount: 1 });
    expect(out.map(show)).toEqual(Array.from({ length: 5 }, () => `failed:${show(out[0]!).slice('failed:'.length)}`));
    expect(show(out[0]!)).not.toBe('failed:outside-segment');
    expect(out[3]!).toMatchObject({ failed: { detail: expect.stringMatching(/^frame 3 of an object whose frame count is unknown/) } });
    // The describe's count read once, the decoder's open once: no GET per frame of the span.
    expect(reads.length).toBeLessThanOrEqual(2);
  });
});
