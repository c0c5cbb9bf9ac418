/** The simulated GPU (lab/worker/simulated-gpu.ts): batching, timing on the clock, tracking, snapshots. */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { StageClock } from '../../../gpu-worker/runtime/stage-clock.ts';
import { imageSize, parseSimulatedGpu, simulatedDetections, simulatedGpuCapacityFps, SimulatedGpuProcessor } from '../../../lab/worker/simulated-gpu.ts';
import { readTrackerSnapshot } from '../../../gpu-worker/vision/tracker.ts';

describe('simulated GPU', () => {
  it.each([
    [{ batchFixedMs: 2, perFrameMs: 1, batchSize: 8 }, 800],
    [{ batchFixedMs: 2, perFrameMs: 1, batchSize: 1 }, 1000 / 3],
    [{ batchFixedMs: 0, perFrameMs: 4, batchSize: 16 }, 250],
  ])('capacity of %o is %d frames/s', (o, fps) => {
    expect(simulatedGpuCapacityFps(o)).toBeCloseTo(fps, 6);
  });

  it('parses SIMULATED_GPU over its base and refuses unknown fields', () => {
    expect(parseSimulatedGpu('{"perFrameMs":2}', { batchSize: 4 })).toMatchObject({ batchFixedMs: 2, perFrameMs: 2, batchSize: 4 });
    expect(() => parseSimulatedGpu('{"speed":2}')).toThrow(/unknown field speed/);
    expect(() => parseSimulatedGpu('{"perFrameMs":-1}')).toThrow(/perFrameMs/);
  });

  it('reads the size from a JPEG and a PNG header without decoding', async () => {
    const img = sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 1, g: 2, b: 3 } } });
    expect(imageSize(new Uint8Array(await img.clone().jpeg().toBuffer()))).toEqual({ width: 64, height: 48 });
    expect(imageSize(new Uint8Array(await img.clone().png().toBuffer()))).toEqual({ width: 64, height: 48 });
    expect(imageSize(new Uint8Array([1, 2, 3]))).toBeUndefined();
  });

  it('with sceneFps, tracks the cost bench\'s street scene (issue 44): the scene\'s boxes, through the tracker', async () => {
    const gpu = new SimulatedGpuProcessor({ batchSize: 1, maxBatchWaitMs: 0, objects: 5, sceneFps: 3 });
    const image = new Uint8Array(await sharp({ create: { width: 160, height: 120, channels: 3, background: { r: 1, g: 2, b: 3 } } }).jpeg().toBuffer());
    gpu.openVideo('cam', undefined);
    const seen: number[] = [];
    for (let f = 1; f <= 6; f++) {
      const [out] = await gpu.process([{ videoId: 'cam', frame: f, key: `frames/cam/${f}.jpg`, image }]);
      if (out!.status !== 'ok') throw new Error('not ok');
      seen.push(out!.detections.length);
      // Boxes of a 1920x1080 scene, whatever the test picture's size.
      if (f > 2) expect(Math.max(...out!.detections.map((d) => d.box[2]))).toBeGreaterThan(160);
    }
    expect(Math.max(...seen)).toBeGreaterThanOrEqual(3);
    expect(readTrackerSnapshot(gpu.snapshot('cam')).t.length).toBeGreaterThanOrEqual(3);
  });

  it('detections are a function of video and frame', () => {
    expect(simulatedDetections('v', 7, 640, 480, 3)).toEqual(simulatedDetections('v', 7, 640, 480, 3));
    expect(simulatedDetections('v', 8, 640, 480, 3)).not.toEqual(simulatedDetections('v', 7, 640, 480, 3));
  });

  it('batches concurrent calls across videos, keeps track IDs through a snapshot, and times its stages', async () => {
    const clock = new StageClock();
    const gpu = new SimulatedGpuProcessor({ batchSize: 4, maxBatchWaitMs: 5 }, clock);
    const image = new Uint8Array(await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 1, g: 2, b: 3 } } }).jpeg().toBuffer());
    gpu.openVideo('a', undefined);
    gpu.openVideo('b', undefined);
    const [a, b] = await Promise.all([
      gpu.process([0, 1].map((frame) => ({ videoId: 'a', frame, image }))),
      gpu.process([0, 1].map((frame) => ({ videoId: 'b', frame, image }))),
    ]);
    expect(gpu.batchSizes).toEqual([4]);
    expect(gpu.framesRun).toBe(4);
    for (const o of [...a, ...b]) expect(o.status).toBe('ok');
    const r = clock.report();
    expect(r.stages.infer.items).toBe(4);
    expect(r.stages.track.items).toBe(4);
    expect(r.stages.decode.items).toBe(4);
    // The tracker's state survives a snapshot: the next frame keeps the same track IDs.
    const ids = (o: (typeof a)[number]) => (o.status === 'ok' ? o.detections.map((d) => d.trackId) : []);
    const snap = gpu.snapshot('a');
    const other = new SimulatedGpuProcessor({ batchSize: 1 });
    other.openVideo('a', snap);
    gpu.closeVideo('a');
    gpu.openVideo('a', snap);
    const [next] = await gpu.process([{ videoId: 'a', frame: 2, image }]);
    const [again] = await other.process([{ videoId: 'a', frame: 2, image }]);
    expect(ids(next!)).toEqual(ids(again!));
    expect(ids(next!).length).toBeGreaterThan(0);
  });

  it('detects hinted frames ahead in the batches rounds leave free, and a round uses them with the same tracks (decision 42)', async () => {
    const jpeg = new Uint8Array(await sharp({ create: { width: 640, height: 480, channels: 3, background: { r: 1, g: 2, b: 3 } } }).jpeg().toBuffer());
    // Each frame its own byte array, as each S3 GET is.
    const frames = Array.from({ length: 12 }, (_, frame) => ({ videoId: 'v', frame, image: jpeg.slice() }));
    const plain = new SimulatedGpuProcessor({ batchSize: 4, maxBatchWaitMs: 1 });
    const ahead = new SimulatedGpuProcessor({ batchSize: 4, maxBatchWaitMs: 1 }, undefined, 32);
    for (const p of [plain, ahead]) p.openVideo('v', undefined);
    for (const f of [...frames].reverse()) ahead.detectAhead(f);
    for (let i = 0; i < 100 && ahead.framesRun < 12; i++) await new Promise((r) => setTimeout(r, 10));
    const [want, got] = await Promise.all([plain.process(frames), ahead.process(frames)]);
    expect(got).toEqual(want);
    expect(ahead.detectedAhead).toMatchObject({ started: 12, used: 12, dropped: 0, held: 0 });
    // The round's frames ran nothing more on the GPU: all 12 were detected ahead.
    expect(ahead.framesRun).toBe(12);
    // Off by default: a hint does nothing.
    plain.detectAhead(frames[0]!);
    expect(plain.detectedAhead.started).toBe(0);
  });
});
