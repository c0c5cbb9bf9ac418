/**
 * sharp's output freed as soon as its pixels are copied out (`releaseDecoded`, decision 40):
 * the Buffer sharp returns is detached, views into shared memory are left alone, and the
 * letterboxes made with it are the bytes made without it, frame after frame, on the main
 * thread and in the decode thread.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BufferPool } from '../../../gpu-worker/vision/buffer-pool.ts';
import { DecodeThread } from '../../../gpu-worker/vision/decode-thread.ts';
import { letterboxGeometry, letterboxInto, prepareFrame, prepareFrameUint8, releaseDecoded } from '../../../gpu-worker/vision/preprocess.ts';
import { noisy } from '../../support/noisy-image.ts';

/** The letterbox as it was made before decision 40: sharp's Buffer left to the collector. */
async function reference(image: Buffer, width: number, height: number): Promise<Uint8Array> {
  const g = letterboxGeometry(width, height, 640, 640);
  let pipeline = sharp(image, { failOn: 'error' }).removeAlpha().toColourspace('srgb');
  if (g.resizedWidth !== width || g.resizedHeight !== height) pipeline = pipeline.resize(g.resizedWidth, g.resizedHeight, { fit: 'fill', kernel: 'linear', fastShrinkOnLoad: true });
  const hwc = new Uint8Array(640 * 640 * 3);
  letterboxInto(hwc, await pipeline.raw().toBuffer(), 640, g);
  return hwc;
}

describe('releaseDecoded', () => {
  it("detaches sharp's output Buffer, which owns its whole ArrayBuffer", async () => {
    // Prepare
    const rgb = await sharp(await noisy(64, 48, 'jpeg')).raw().toBuffer();
    expect(rgb.byteOffset).toBe(0);
    expect(rgb.byteLength).toBe(rgb.buffer.byteLength);
    // Act
    releaseDecoded(rgb);
    // Assess: detached (a view over a detached buffer reads as empty); a second call is harmless.
    expect((rgb.buffer as ArrayBuffer & { detached: boolean }).detached).toBe(true);
    expect(rgb.length).toBe(0);
    expect(() => releaseDecoded(rgb)).not.toThrow();
  });

  it('leaves a view into a larger buffer alone (Node pools small Buffers; others may share it)', () => {
    // Prepare
    const pooled = Buffer.from([1, 2, 3]);
    const whole = new Uint8Array([9, 8, 7, 6, 5]);
    const view = whole.subarray(1, 4);
    // Act
    releaseDecoded(pooled);
    releaseDecoded(view);
    // Assess
    expect([...pooled]).toEqual([1, 2, 3]);
    expect([...whole]).toEqual([9, 8, 7, 6, 5]);
  });

  it.each([
    ['640x480', 640, 480],
    ['1920x1080 (shrunk on load)', 1920, 1080],
  ] as const)('gives the same %s letterbox bytes as before, frame after frame, into reused buffers', async (_label, width, height) => {
    // Prepare: a few different frames, decoded again and again, so freed libvips memory is reused by later decodes.
    const images = await Promise.all([0, 1, 2].map(() => noisy(width, height, 'jpeg')));
    const expected = await Promise.all(images.map((image) => reference(image, width, height)));
    const pool = new BufferPool(1 << 26);
    // Act
    for (let round = 0; round < 4; round++) {
      const frames = await Promise.all(images.map((image) => prepareFrameUint8(image, 640, 640, 26_214_400, pool)));
      // Assess
      frames.forEach((f, i) => expect(Buffer.from(f.hwc).equals(Buffer.from(expected[i]!))).toBe(true));
      for (const f of frames) pool.release(f.hwc.buffer as ArrayBuffer);
    }
    // The callers' JPEG bytes are never touched.
    expect(images.every((image) => image.length > 0 && image[0] === 0xff && image[1] === 0xd8)).toBe(true);
  });

  it("gives the float path's same values as the uint8 path (both release sharp's Buffer)", async () => {
    // Prepare
    const image = await noisy(640, 480, 'jpeg');
    // Act
    const floats = await prepareFrame(image, 640, 640);
    const bytes = await prepareFrameUint8(image, 640, 640);
    // Assess: chw == hwc / 255, plane by plane.
    const plane = 640 * 640;
    for (let p = 0; p < plane; p += 997) {
      for (let c = 0; c < 3; c++) expect(floats.chw[c * plane + p]).toBe(Math.fround(bytes.hwc[p * 3 + c]! / 255));
    }
  });

  describe('in the decode thread', () => {
    let thread: DecodeThread;
    beforeAll(async () => {
      thread = await DecodeThread.start();
    });
    afterAll(async () => {
      await thread?.stop();
    });

    it('gives the same letterbox bytes as before, frame after frame', async () => {
      // Prepare
      const images = await Promise.all([0, 1, 2].map(() => noisy(640, 480, 'jpeg')));
      const expected = await Promise.all(images.map((image) => reference(image, 640, 480)));
      const pool = new BufferPool(1 << 26);
      // Act + Assess
      for (let round = 0; round < 4; round++) {
        const frames = await Promise.all(images.map((image) => thread.prepare(image, 640, 640, 26_214_400, pool)));
        frames.forEach((f, i) => expect(Buffer.from(f.hwc).equals(Buffer.from(expected[i]!))).toBe(true));
        for (const f of frames) pool.release(f.hwc.buffer as ArrayBuffer);
      }
    });
  });
});
