/**
 * The demo detector on video it cannot see: the processor says so once per video, as a
 * warning naming the command to run a real model, and says nothing on the demo's own
 * clips. The start line says which model runs and where its class names came from.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_WATCH_FRAMES } from '../../../gpu-worker/vision/demo-model-watch.ts';
import { createVisionProcessor, type VisionProcessor } from '../../../gpu-worker/vision/index.ts';
import { generateClip } from '../../../gpu-worker/vision/synthetic/generate.ts';

let processor: VisionProcessor;
const infos: (string | object)[] = [];
const warnings: (string | object)[] = [];

beforeAll(async () => {
  processor = createVisionProcessor({ batchSize: 8, maxBatchWaitMs: 5, scoreThreshold: 0.25, preferCuda: false, logger: (l) => infos.push(l), warn: (l) => warnings.push(l) });
  await processor.start();
});

afterAll(async () => {
  await processor.stop();
});

/** A grey street-like frame with no saturated square: nothing the demo model knows. */
async function plainFrame(shade: number): Promise<Uint8Array> {
  return sharp({ create: { width: 320, height: 240, channels: 3, background: { r: shade, g: shade + 10, b: shade + 5 } } })
    .jpeg()
    .toBuffer();
}

describe('the demo model on real video', () => {
  it('says at start that the demo detector runs, and how to run a real one', () => {
    const loaded = infos.find((l) => typeof l === 'object' && (l as { msg?: string }).msg === 'vision model loaded') as Record<string, unknown>;
    expect(loaded).toMatchObject({ demoModel: true, classes: 6, inputSize: '320x320' });
    expect(String(loaded.demoModelNote)).toMatch(/coloured squares.*npm start -- --model/);
  });

  it('warns once for a video without boxes in most of its first frames, and never for the demo\'s own clip', async () => {
    // Prepare
    const grey = await Promise.all(Array.from({ length: DEMO_WATCH_FRAMES + 10 }, (_, i) => plainFrame(60 + (i % 20))));
    const clip = await generateClip({ seed: 5, frames: DEMO_WATCH_FRAMES + 10, objects: 3 });
    processor.openVideo('street', undefined);
    processor.openVideo('cam-a', undefined);
    // Act
    for (let i = 0; i < grey.length; i += 8) {
      await processor.process(grey.slice(i, i + 8).map((image, k) => ({ videoId: 'street', frame: i + k, image })));
      await processor.process(clip.frames.slice(i, i + 8).map((f) => ({ videoId: 'cam-a', frame: f.frame, image: f.image })));
    }
    // Assess
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ videoId: 'street', framesWithBoxes: 0, frames: DEMO_WATCH_FRAMES, first: true });
    expect((warnings[0] as { msg: string }).msg).toMatch(/^DEMO MODEL ON REAL VIDEO: video street .*npm start -- --model yolov8n\.onnx/);
  });
});
