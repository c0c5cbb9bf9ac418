import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import type { FrameInput } from '../../../core/ports.ts';
import { StatsProcessor } from '../../../lab/worker/stats-processor.ts';

let grey: Uint8Array;

beforeAll(async () => {
  // 8x6 mid-grey PNG: luminance 128 on every channel.
  grey = new Uint8Array(await sharp({ create: { width: 8, height: 6, channels: 3, background: { r: 128, g: 128, b: 128 } } }).png().toBuffer());
});

const frame = (n: number, image = grey): FrameInput => ({ videoId: 'v', frame: n, image });

describe('StatsProcessor.processLate', () => {
  it('leaves the video state unchanged and takes the before neighbour track ID', async () => {
    // Prepare: frames 0 and 2 processed in order; frame 1 was gapped.
    const p = new StatsProcessor();
    p.openVideo('v', undefined);
    const [f0, f2] = await p.process([frame(0), frame(2)]);
    const state = p.snapshot('v');
    // Act
    const [late] = await p.processLate([
      { ...frame(1), before: { frame: 0, detections: f0.status === 'ok' ? f0.detections : [] }, after: { frame: 2, detections: f2.status === 'ok' ? f2.detections : [] } },
    ]);
    // Assess
    expect(p.snapshot('v')).toBe(state);
    expect(late).toEqual({ status: 'ok', detections: [{ trackId: 1, label: 'frame', score: 128 / 255, box: [0, 0, 8, 6] }] });
    // The next in-order frame continues the counter as if the late frame never came.
    const [f3] = await p.process([frame(3)]);
    expect(f3.status === 'ok' && f3.detections[0].trackId).toBe(3);
  });

  it('gives trackId 0 without a before neighbour, and needs no open video', async () => {
    const p = new StatsProcessor();
    const [late] = await p.processLate([{ ...frame(4), after: { frame: 5, detections: [{ trackId: 9, label: 'frame', score: 1, box: [0, 0, 8, 6] }] } }]);
    expect(late.status === 'ok' && late.detections.map((d) => d.trackId)).toEqual([0]);
    expect(p.snapshot('v')).toBe(JSON.stringify({ framesSeen: 0, meanLuma: 0, lastFrame: null }));
  });

  it('fails a corrupt image as corrupt-image, without throwing or touching the state', async () => {
    const p = new StatsProcessor();
    p.openVideo('v', undefined);
    await p.process([frame(0)]);
    const state = p.snapshot('v');
    const outcomes = await p.processLate([frame(1, grey.slice(0, 20)), frame(2)]);
    expect(outcomes[0]).toMatchObject({ status: 'failed', reason: 'corrupt-image' });
    expect(outcomes[1].status).toBe('ok');
    expect(p.snapshot('v')).toBe(state);
  });
});
