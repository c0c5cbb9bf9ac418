/**
 * The uint8 letterbox of the default path (decision 32): the same geometry and the same
 * bytes as the float CPU path, grey 114 borders exactly outside the image, JPEG shrink-on-load for
 * large sources with an exact output size, and bad input still a `failed` outcome with
 * its reason through the processor.
 */
import sharp, { type Sharp } from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVisionProcessor, type VisionProcessor } from '../../../gpu-worker/vision/index.ts';
import { ImageDecodeError, LETTERBOX_PAD_VALUE, letterboxGeometry, prepareFrame, prepareFrameUint8 } from '../../../gpu-worker/vision/preprocess.ts';
import { generateClip } from '../../../gpu-worker/vision/synthetic/generate.ts';

/** The CPU path's byte -> float table (preprocess.ts). */
const UNIT = Float32Array.from({ length: 256 }, (_, i) => i / 255);

function noisyImage(width: number, height: number): Sharp {
  return sharp({ create: { width, height, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 50 } } });
}

describe('prepareFrameUint8', () => {
  it.each([
    ['a 640x480 JPEG', 640, 480, 'jpeg', 640, 640],
    ['a 1920x1080 JPEG (shrunk on load)', 1920, 1080, 'jpeg', 640, 640],
    ['a 1917x1079 JPEG (odd sides)', 1917, 1079, 'jpeg', 640, 640],
    ['a portrait 333x517 PNG', 333, 517, 'png', 320, 320],
    ['a 7x5 PNG into a 9x6 input', 7, 5, 'png', 9, 6],
  ] as const)('places %s exactly where the float path does, with the same bytes behind its floats', async (_label, width, height, format, inputWidth, inputHeight) => {
    // Prepare
    const image = await noisyImage(width, height)[format]().toBuffer();
    // Act
    const floats = await prepareFrame(image, inputWidth, inputHeight);
    const bytes = await prepareFrameUint8(image, inputWidth, inputHeight);
    // Assess: one geometry, and chw = UNIT[hwc] for every value, borders included.
    expect(bytes.geometry).toEqual(floats.geometry);
    expect(bytes.geometry).toEqual(letterboxGeometry(width, height, inputWidth, inputHeight));
    expect(bytes.hwc.length).toBe(inputWidth * inputHeight * 3);
    const plane = inputWidth * inputHeight;
    const expected = new Float32Array(3 * plane);
    for (let p = 0; p < plane; p++) for (let c = 0; c < 3; c++) expected[c * plane + p] = UNIT[bytes.hwc[p * 3 + c]!]!;
    expect(floats.chw).toEqual(expected);
  });

  it('fills exactly the letterbox borders with grey 114, and no pixel of the image', async () => {
    // Prepare: channel values 1..113, never the pad value, so a border pixel inside the image shows.
    const width = 1917;
    const height = 1079;
    const raw = Buffer.from(Array.from({ length: width * height * 3 }, (_, i) => 1 + ((i * 37) % 113)));
    const png = await sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer();
    // Act
    const { hwc, geometry: g } = await prepareFrameUint8(png, 640, 640);
    // Assess: 640 x 360 placed at padTop 140 (Ultralytics' rounding), bands above and below.
    expect([g.resizedWidth, g.resizedHeight, g.padLeft, g.padTop]).toEqual([640, 360, 0, 140]);
    for (let y = 0; y < 640; y++) {
      const inside = y >= g.padTop && y < g.padTop + g.resizedHeight;
      const row = hwc.subarray(y * 640 * 3, (y + 1) * 640 * 3);
      if (inside) expect(row.every((v) => v !== LETTERBOX_PAD_VALUE), `row ${y}`).toBe(true);
      else expect(row.every((v) => v === LETTERBOX_PAD_VALUE), `row ${y}`).toBe(true);
    }
  });

  it('decodes a JPEG at least twice the model input with DCT shrink-on-load, to the exact letterbox size', async () => {
    // Prepare: a 1080p JPEG; the same resize from a full-size decode (shrink-on-load off).
    const jpeg = await noisyImage(1920, 1080).jpeg().toBuffer();
    const g = letterboxGeometry(1920, 1080, 640, 640);
    const fullDecode = await sharp(jpeg).removeAlpha().toColourspace('srgb').resize(g.resizedWidth, g.resizedHeight, { fit: 'fill', kernel: 'linear', fastShrinkOnLoad: false }).raw().toBuffer();
    // Act
    const { hwc } = await prepareFrameUint8(jpeg, 640, 640);
    // Assess: the size is exact (no round-down of a side), and the pixels are not the
    // full decode's: libjpeg scaled the DCT, so the 1920x1080 image was never decoded whole.
    const image = hwc.subarray(g.padTop * 640 * 3, (g.padTop + g.resizedHeight) * 640 * 3);
    expect(image.length).toBe(fullDecode.length);
    expect(Buffer.compare(Buffer.from(image), fullDecode)).not.toBe(0);
    let sumAbsDiff = 0;
    for (let i = 0; i < image.length; i++) sumAbsDiff += Math.abs(image[i]! - fullDecode[i]!);
    // Close to it all the same: a mean difference of a few grey levels on heavy noise.
    expect(sumAbsDiff / image.length).toBeLessThan(16);
  });

  it.each([
    ['bytes that are not an image', () => Promise.resolve(Buffer.from('not an image')), 'corrupt-image'],
    ['a truncated JPEG', async () => (await noisyImage(64, 64).jpeg().toBuffer()).subarray(0, 400), 'corrupt-image'],
    ['a frame over the pixel limit', () => noisyImage(100, 70).png().toBuffer(), 'image-too-large'],
  ] as const)('refuses %s with its reason', async (_label, make, reason) => {
    const err = await prepareFrameUint8(await make(), 32, 32, 6999).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageDecodeError);
    expect((err as ImageDecodeError).reason).toBe(reason);
  });
});

describe('the processor on the default path', () => {
  let processor: VisionProcessor;
  const logLines: (string | object)[] = [];

  beforeAll(async () => {
    processor = createVisionProcessor({ batchSize: 4, maxBatchWaitMs: 5, scoreThreshold: 0.25, preferCuda: false, logger: (l) => logLines.push(l) });
    await processor.start();
  });
  afterAll(async () => {
    await processor.stop();
  });

  it('runs the rewritten graph, and says so in its start line', () => {
    expect(processor.layout).toBe('uint8-nhwc');
    expect(logLines).toContainEqual(expect.objectContaining({ msg: 'vision model loaded', layout: 'uint8-nhwc', layoutReason: expect.stringContaining('graph rewritten') }));
  });

  it('gives a corrupt frame a failed outcome with its reason, beside good frames of the same batch', async () => {
    // Prepare
    const clip = await generateClip({ seed: 11, frames: 3, format: 'jpeg' });
    processor.openVideo('corrupt', undefined);
    const truncated = clip.frames[1]!.image.subarray(0, 300);
    // Act
    const outcomes = await processor.process([
      { videoId: 'corrupt', frame: 0, image: clip.frames[0]!.image },
      { videoId: 'corrupt', frame: 1, image: truncated },
      { videoId: 'corrupt', frame: 2, image: clip.frames[2]!.image },
    ]);
    // Assess
    expect(outcomes.map((o) => o.status)).toEqual(['ok', 'failed', 'ok']);
    expect(outcomes[1]).toMatchObject({ status: 'failed', reason: 'corrupt-image' });
  });

  it('reports the same tracked detections as the float CPU path', async () => {
    // Prepare: the same clip through a processor kept on the CPU path.
    const clip = await generateClip({ seed: 12, frames: 6, format: 'jpeg', width: 640, height: 480 });
    const cpu = createVisionProcessor({ batchSize: 4, maxBatchWaitMs: 5, scoreThreshold: 0.25, preferCuda: false, preprocessInGraph: false });
    await cpu.start();
    const frames = (videoId: string) => clip.frames.map((f) => ({ videoId, frame: f.frame, image: f.image }));
    processor.openVideo('same', undefined);
    cpu.openVideo('same', undefined);
    // Act
    const graph = await processor.process(frames('same'));
    const reference = await cpu.process(frames('same'));
    const cpuLayout = cpu.layout;
    await cpu.stop();
    // Assess: bit-identical model input, so equal outcomes, boxes included.
    expect(cpuLayout).toBe('float32-nchw');
    expect(graph.every((o) => o.status === 'ok' && o.detections.length > 0)).toBe(true);
    expect(graph).toEqual(reference);
  });
});
