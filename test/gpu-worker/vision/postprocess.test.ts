import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import { decodeYolo, iou, nms, postprocess, unletterboxBox, type RawDetection } from '../../../gpu-worker/vision/postprocess.ts';
import { ImageDecodeError, letterboxGeometry, prepareFrame, roundHalfToEven } from '../../../gpu-worker/vision/preprocess.ts';

/** Builds a [B, 4 + C, N] tensor from per-anchor rows [cx, cy, w, h, ...scores]. */
function yoloTensor(images: number[][][], classCount: number): Float32Array {
  const n = images[0].length;
  const ch = 4 + classCount;
  const data = new Float32Array(images.length * ch * n);
  images.forEach((anchors, b) => anchors.forEach((row, a) => row.forEach((v, c) => (data[b * ch * n + c * n + a] = v))));
  return data;
}

describe('letterboxGeometry', () => {
  it('fits a landscape image to the width and centres it vertically', () => {
    // Prepare / Act
    const g = letterboxGeometry(640, 480, 320, 320);
    // Assess: scale 0.5 -> 320x240, (320-240)/2 = 40 on top.
    expect(g).toEqual({ sourceWidth: 640, sourceHeight: 480, scale: 0.5, padLeft: 0, padTop: 40, resizedWidth: 320, resizedHeight: 240 });
  });

  it('fits a portrait image to the height and centres it horizontally', () => {
    const g = letterboxGeometry(100, 200, 320, 320);
    // scale 1.6 -> 160x320, (320-160)/2 = 80 on the left.
    expect([g.scale, g.resizedWidth, g.resizedHeight, g.padLeft, g.padTop]).toEqual([1.6, 160, 320, 80, 0]);
  });

  it('rounds the resized size half to even, like Python and Ultralytics', () => {
    // Scale 0.5: widths 5, 7, 9 become 2.5 -> 2 (half-up would give 3), 3.5 -> 4, 4.5 -> 4 (not 5).
    expect(letterboxGeometry(5, 100, 50, 50).resizedWidth).toBe(2);
    expect(letterboxGeometry(7, 100, 50, 50).resizedWidth).toBe(4);
    expect(letterboxGeometry(9, 100, 50, 50).resizedWidth).toBe(4);
    expect([roundHalfToEven(0.5), roundHalfToEven(1.5), roundHalfToEven(2.5), roundHalfToEven(2.4999), roundHalfToEven(2.5001), roundHalfToEven(-1.5)]).toEqual([0, 2, 2, 2, 3, -2]);
  });

  it('puts the odd padding pixel at the bottom like Ultralytics', () => {
    const g = letterboxGeometry(320, 99, 320, 320);
    // dh = 110.5 -> top round(110.4) = 110, bottom 111.
    expect([g.padTop, 320 - g.resizedHeight - g.padTop]).toEqual([110, 111]);
  });
});

describe('unletterboxBox', () => {
  it('undoes padding and scale', () => {
    const g = letterboxGeometry(640, 480, 320, 320);
    // Model box (10, 50)-(110, 90): x/0.5, (y-40)/0.5.
    expect(unletterboxBox([10, 50, 110, 90], g)).toEqual([20, 20, 220, 100]);
  });

  it('clips boxes that reach into the padding or past the image edges', () => {
    const g = letterboxGeometry(640, 480, 320, 320);
    // y from 30 (inside top padding) to 290 (inside bottom padding), x from -4 to 330.
    expect(unletterboxBox([-4, 30, 330, 290], g)).toEqual([0, 0, 640, 480]);
  });
});

describe('decodeYolo', () => {
  it('converts cx,cy,w,h to corners, takes the best class and applies the threshold', () => {
    // Prepare: 3 anchors, 2 classes.
    const data = yoloTensor(
      [
        [
          [50, 40, 20, 10, 0.1, 0.9],
          [10, 10, 4, 4, 0.2, 0.1],
          [100, 100, 10, 30, 0.6, 0.3],
        ],
      ],
      2,
    );
    // Act
    const out = decodeYolo(data, 0, 2, 3, 0.25);
    // Assess
    expect(out).toEqual([
      { box: [40, 35, 60, 45], score: expect.closeTo(0.9, 6), classIndex: 1 },
      { box: [95, 85, 105, 115], score: expect.closeTo(0.6, 6), classIndex: 0 },
    ]);
  });

  it('keeps only scores strictly above the threshold, like Ultralytics', () => {
    const data = yoloTensor([[[10, 10, 4, 4, 0.5], [30, 30, 4, 4, 0.5000001]]], 1);
    expect(decodeYolo(data, 0, 1, 2, 0.5).map((d) => d.box)).toEqual([[28, 28, 32, 32]]);
  });

  it('takes the first class on a tied score and never a NaN one', () => {
    // Anchor 0: classes 1 and 2 tie at 0.7. Anchor 1: class 0 is NaN, class 2 is 0.6.
    const data = yoloTensor([[[10, 10, 4, 4, 0.1, 0.7, 0.7], [30, 30, 4, 4, Number.NaN, 0.2, 0.6]]], 3);
    expect(decodeYolo(data, 0, 3, 2, 0.5).map((d) => d.classIndex)).toEqual([1, 2]);
  });

  it('reads the requested image of a batch', () => {
    const data = yoloTensor([[[1, 1, 2, 2, 0.9]], [[30, 30, 2, 2, 0.8]]], 1);
    expect(decodeYolo(data, 1, 1, 1, 0.5)).toEqual([{ box: [29, 29, 31, 31], score: expect.closeTo(0.8, 6), classIndex: 0 }]);
  });
});

describe('nms', () => {
  const det = (box: [number, number, number, number], score: number, classIndex = 0): RawDetection => ({ box, score, classIndex });

  it('keeps the earlier of two identical boxes with tied scores', () => {
    const a = det([0, 0, 10, 10], 0.8);
    const b = det([0, 0, 10, 10], 0.8);
    const kept = nms([a, b], 0.5, 10);
    expect(kept).toHaveLength(1);
    expect(kept[0]).toBe(a);
  });

  it('suppresses only within a class and keeps the higher score', () => {
    const low = det([0, 0, 10, 10], 0.6);
    const high = det([1, 0, 11, 10], 0.9);
    const otherClass = det([0, 0, 10, 10], 0.7, 1);
    const far = det([50, 50, 60, 60], 0.5);
    expect(nms([low, high, otherClass, far], 0.5, 10)).toEqual([high, otherClass, far]);
  });

  it('keeps boxes whose overlap is at the threshold (suppression needs IoU above it)', () => {
    // IoU of [0,0,10,10] and [5,0,15,10] = 50/150 = 1/3.
    const a = det([0, 0, 10, 10], 0.9);
    const b = det([5, 0, 15, 10], 0.8);
    expect(iou(a.box, b.box)).toBeCloseTo(1 / 3, 12);
    expect(nms([a, b], 1 / 3, 10)).toEqual([a, b]);
    expect(nms([a, b], 0.3, 10)).toEqual([a]);
  });

  it('stops at maxDetections', () => {
    const dets = [det([0, 0, 1, 1], 0.5), det([5, 5, 6, 6], 0.7), det([9, 9, 10, 10], 0.6)];
    expect(nms(dets, 0.5, 2).map((d) => d.score)).toEqual([0.7, 0.6]);
  });
});

describe('postprocess', () => {
  it('maps boxes at the image edge back to source pixels and drops those clipped to nothing', () => {
    // Prepare: 640x480 source in a 320 input (scale 0.5, padTop 40).
    const g = letterboxGeometry(640, 480, 320, 320);
    const data = yoloTensor(
      [
        [
          [5, 50, 14, 20, 0.9], // x from -2: clipped to 0
          [160, 20, 10, 10, 0.9], // entirely in the top padding: dropped
          [315, 275, 10, 10, 0.8], // bottom-right corner
        ],
      ],
      1,
    );
    // Act
    const out = postprocess(data, 0, 1, 3, g);
    // Assess
    expect(out.map((d) => d.box)).toEqual([
      [0, 0, 24, 40],
      [620, 460, 640, 480],
    ]);
  });
});

describe('prepareFrame', () => {
  it('letterboxes with grey 114 and normalises to CHW in [0, 1]', async () => {
    // Prepare: 8x4 image, all black except a red pixel at (x=7, y=0).
    const raw = Buffer.alloc(8 * 4 * 3);
    raw[7 * 3] = 255;
    const png = await sharp(raw, { raw: { width: 8, height: 4, channels: 3 } }).png().toBuffer();
    // Act: into 8x8, scale 1, padTop 2.
    const { chw, geometry } = await prepareFrame(png, 8, 8);
    // Assess
    const at = (c: number, y: number, x: number) => chw[c * 64 + y * 8 + x];
    expect(geometry.padTop).toBe(2);
    expect(at(0, 0, 0)).toBeCloseTo(114 / 255, 6);
    expect(at(2, 7, 7)).toBeCloseTo(114 / 255, 6);
    expect(at(0, 2, 7)).toBe(1);
    expect(at(1, 2, 7)).toBe(0);
    expect(at(0, 2, 6)).toBe(0);
  });

  it('places a portrait image between left and right padding, row by row', async () => {
    // Prepare: 4x8 image, green at (x=0, y=0) and blue at (x=3, y=7), grey 50 elsewhere.
    const raw = Buffer.alloc(4 * 8 * 3, 50);
    raw.set([0, 255, 0], 0);
    raw.set([0, 0, 255], (7 * 4 + 3) * 3);
    const png = await sharp(raw, { raw: { width: 4, height: 8, channels: 3 } }).png().toBuffer();
    // Act: into 8x8, scale 1, padLeft 2.
    const { chw, geometry } = await prepareFrame(png, 8, 8);
    // Assess
    const at = (c: number, y: number, x: number) => chw[c * 64 + y * 8 + x];
    expect([geometry.padLeft, geometry.padTop]).toEqual([2, 0]);
    expect([at(0, 0, 1), at(1, 7, 6)]).toEqual([Math.fround(114 / 255), Math.fround(114 / 255)]);
    expect([at(0, 0, 2), at(1, 0, 2), at(2, 0, 2)]).toEqual([0, 1, 0]);
    expect([at(0, 7, 5), at(1, 7, 5), at(2, 7, 5)]).toEqual([0, 0, 1]);
    expect(at(0, 3, 3)).toBe(Math.fround(50 / 255));
  });

  it.each([
    [5, 3, 8, 8],
    [3, 7, 8, 8],
    [7, 7, 9, 6],
    [6, 4, 6, 4],
  ])('pads every pixel outside a %ix%i image in a %ix%i input, and no pixel inside', async (width, height, inputWidth, inputHeight) => {
    // Prepare: channel values 1..254, never the pad value 114, so a pad pixel inside the image shows.
    const raw = Buffer.from(Array.from({ length: width * height * 3 }, (_, i) => 1 + ((i * 37) % 113)));
    const png = await sharp(raw, { raw: { width, height, channels: 3 } }).png().toBuffer();
    // Act
    const { chw, geometry: g } = await prepareFrame(png, inputWidth, inputHeight);
    // Assess
    const pad = Math.fround(114 / 255);
    for (let c = 0; c < 3; c++) {
      for (let y = 0; y < inputHeight; y++) {
        for (let x = 0; x < inputWidth; x++) {
          const inside = x >= g.padLeft && x < g.padLeft + g.resizedWidth && y >= g.padTop && y < g.padTop + g.resizedHeight;
          const v = chw[c * inputWidth * inputHeight + y * inputWidth + x];
          if (inside) expect(v, `c${c} y${y} x${x}`).not.toBe(pad);
          else expect(v, `c${c} y${y} x${x}`).toBe(pad);
        }
      }
    }
  });

  it('rejects bytes that are not an image with a corrupt-image error', async () => {
    const err = await prepareFrame(new TextEncoder().encode('not an image'), 8, 8).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageDecodeError);
    expect((err as ImageDecodeError).reason).toBe('corrupt-image');
  });

  it('rejects a truncated JPEG', async () => {
    const jpeg = await sharp({ create: { width: 64, height: 64, channels: 3, background: '#0f0' } }).jpeg().toBuffer();
    const err = await prepareFrame(jpeg.subarray(0, Math.floor(jpeg.length * 0.9)), 8, 8).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageDecodeError);
  });

  it('rejects a truncated PNG', async () => {
    const png = await sharp({ create: { width: 32, height: 32, channels: 3, background: '#f00' } }).png().toBuffer();
    const err = await prepareFrame(png.subarray(0, png.length / 2), 8, 8).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ImageDecodeError);
  });
});
