/**
 * sharp's input pixel limit comes from the model's input size (gpu-worker/vision/preprocess.ts
 * sourcePixelLimit), not sharp's 268 MP default: a decompression bomb (a file of a few
 * hundred bytes declaring a huge size) is refused from its header as `image-too-large`,
 * in a frame's own decode and in the decode ahead alike.
 */
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVisionProcessor, type VisionProcessor } from '../../../gpu-worker/vision/index.ts';
import {
  ImageDecodeError,
  MAX_SOURCE_PIXEL_LIMIT,
  MIN_SOURCE_PIXEL_LIMIT,
  prepareFrame,
  sourcePixelLimit,
} from '../../../gpu-worker/vision/preprocess.ts';

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body) >>> 0);
  return Buffer.concat([length, body, crc]);
}

/** A valid PNG header declaring `width` x `height` RGB, with one row of data: a few hundred bytes. */
function pngBomb(width: number, height: number): Uint8Array {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // RGB
  const signature = Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]);
  return new Uint8Array(Buffer.concat([signature, pngChunk('IHDR', ihdr), pngChunk('IDAT', deflateSync(Buffer.alloc(1 + 3 * width))), pngChunk('IEND', Buffer.alloc(0))]));
}

/** A small real JPEG whose start-of-frame marker is rewritten to declare `width` x `height`. */
async function jpegBomb(width: number, height: number): Promise<Uint8Array> {
  const jpeg = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#08f' } }).jpeg().toBuffer();
  for (let i = 2; i < jpeg.length; ) {
    const marker = jpeg[i + 1]!;
    if (marker >= 0xc0 && marker <= 0xc2) {
      jpeg.writeUInt16BE(height, i + 5);
      jpeg.writeUInt16BE(width, i + 7);
      return new Uint8Array(jpeg);
    }
    i += 2 + jpeg.readUInt16BE(i + 2);
  }
  throw new Error('no SOF marker');
}

describe('source pixel limit from the model input', () => {
  it.each([
    { input: [320, 320], limit: MIN_SOURCE_PIXEL_LIMIT, why: 'the demo model: 64 x 0.1 MP is below 4K UHD, so 4K UHD' },
    { input: [640, 640], limit: 64 * 640 * 640, why: 'YOLO at 640: 64 x its area, 26.2 MP' },
    { input: [640, 384], limit: 64 * 640 * 384, why: 'a rectangular input: 64 x its area, 15.7 MP' },
    { input: [1280, 1280], limit: MAX_SOURCE_PIXEL_LIMIT, why: 'YOLO at 1280: 64 x its area is over 8K UHD, so 8K UHD' },
  ])('$input.0 x $input.1: $why', ({ input, limit }) => {
    expect(sourcePixelLimit(input[0]!, input[1]!)).toBe(limit);
  });

  it("is far below sharp's default of 268 MP, and lets 4K UHD through for every model", () => {
    expect(MIN_SOURCE_PIXEL_LIMIT).toBe(3840 * 2160);
    expect(MAX_SOURCE_PIXEL_LIMIT).toBe(7680 * 4320);
    expect(MAX_SOURCE_PIXEL_LIMIT).toBeLessThan(0x3fff * 0x3fff);
  });
});

describe('decompression bombs', () => {
  it.each([
    { name: 'PNG declaring 100000 x 100000 (30 GB of RGB)', make: async () => pngBomb(100_000, 100_000), width: 100_000, height: 100_000 },
    { name: 'PNG declaring 16000 x 16000 (under sharp default limit of 268 MP)', make: async () => pngBomb(16_000, 16_000), width: 16_000, height: 16_000 },
    { name: 'JPEG declaring 60000 x 60000', make: () => jpegBomb(60_000, 60_000), width: 60_000, height: 60_000 },
  ])('refuses a $name as image-too-large from its header', async ({ make, width, height }) => {
    // Prepare
    const bomb = await make();
    // Act
    const err = await prepareFrame(bomb, 640, 640).catch((e: unknown) => e);
    // Assess: named by its declared size and the model's limit, which only the header check
    // (before any decode) reports; a decode of the missing rows would say corrupt-image.
    expect(bomb.length).toBeLessThan(1000);
    expect(err).toBeInstanceOf(ImageDecodeError);
    expect((err as ImageDecodeError).reason).toBe('image-too-large');
    expect((err as Error).message).toContain(`${width}x${height} = ${width * height} px is over the ${sourcePixelLimit(640, 640)} px limit for a 640x640 model input`);
  });

  it('decodes a real image at the limit and refuses the same image one pixel over it', async () => {
    // Prepare: 100 x 60 = 6000 px.
    const png = new Uint8Array(await sharp({ create: { width: 100, height: 60, channels: 3, background: '#3a6' } }).png().toBuffer());
    // Act
    const atLimit = await prepareFrame(png, 32, 32, 6000);
    const overLimit = await prepareFrame(png, 32, 32, 5999).catch((e: unknown) => e);
    // Assess
    expect(atLimit.geometry).toMatchObject({ sourceWidth: 100, sourceHeight: 60 });
    expect((overLimit as ImageDecodeError).reason).toBe('image-too-large');
  });

  it('still calls bytes that are no image corrupt-image', async () => {
    const err = await prepareFrame(new TextEncoder().encode('not an image at all'), 640, 640).catch((e: unknown) => e);
    expect((err as ImageDecodeError).reason).toBe('corrupt-image');
  });
});

describe('vision processor and decompression bombs', () => {
  let processor: VisionProcessor;
  beforeAll(async () => {
    processor = createVisionProcessor({ batchSize: 4, maxBatchWaitMs: 5, scoreThreshold: 0.25, preferCuda: false });
    await processor.start();
  });
  afterAll(async () => {
    await processor.stop();
  });

  it('records a bomb as failed image-too-large and processes the good frame beside it', async () => {
    // Prepare
    const good = new Uint8Array(await sharp({ create: { width: 160, height: 120, channels: 3, background: '#222' } }).png().toBuffer());
    processor.openVideo('bomb-video', undefined);
    // Act
    const outcomes = await processor.process([
      { videoId: 'bomb-video', frame: 0, image: pngBomb(50_000, 50_000) },
      { videoId: 'bomb-video', frame: 1, image: good },
    ]);
    // Assess
    expect(outcomes[0]).toMatchObject({ status: 'failed', reason: 'image-too-large' });
    expect(outcomes[1]).toMatchObject({ status: 'ok' });
    expect(processor.description).toContain(`maxSourcePixels=${MIN_SOURCE_PIXEL_LIMIT}`);
    processor.closeVideo('bomb-video');
  });

  it('does not decode a bomb ahead: the decode ahead is refused from the header, and the frame reports it', async () => {
    // Prepare
    const bomb = await jpegBomb(40_000, 40_000);
    processor.openVideo('ahead-video', undefined);
    const before = processor.preparedAhead;
    // Act
    processor.prepareAhead!(bomb);
    const [outcome] = await processor.process([{ videoId: 'ahead-video', frame: 0, image: bomb }]);
    // Assess: the frame's processing used the decode ahead (no second attempt) and got its refusal.
    expect(processor.preparedAhead).toEqual({ started: before.started + 1, used: before.used + 1 });
    expect(outcome).toMatchObject({ status: 'failed', reason: 'image-too-large' });
    processor.closeVideo('ahead-video');
  });
});
