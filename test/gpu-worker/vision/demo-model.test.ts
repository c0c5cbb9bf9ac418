/**
 * The demo detector (gpu-worker/vision/demo-model/build-model.ts) on hand-drawn scenes:
 * one box per object, also when another object hides part of it. A real detector
 * reports a partly hidden object once; the demo model used to report each visible
 * piece of it (an L, a U, two strips) as its own box, so the tracker made extra tracks
 * and cam-c's zone in `npm run demo` counted magenta entering 4 times instead of once.
 */
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDemoModelBytes, DEMO_CLASSES, DEMO_INPUT_SIZE } from '../../../gpu-worker/vision/demo-model/build-model.ts';
import { postprocess, type Box } from '../../../gpu-worker/vision/postprocess.ts';

const S = DEMO_INPUT_SIZE;
type Rect = { readonly colour: string; readonly box: Box };

/** A float32 NCHW input of S x S: dark background, rectangles drawn in order (later on top). */
function scene(rects: readonly Rect[]): Float32Array {
  const x = new Float32Array(3 * S * S).fill(16 / 255);
  for (const r of rects) {
    const rgb = DEMO_CLASSES.find((c) => c.name === r.colour)!.rgb;
    const [x1, y1, x2, y2] = r.box;
    for (let y = y1; y < y2; y++) for (let c = 0; c < 3; c++) x.fill(rgb[c]!, c * S * S + y * S + x1, c * S * S + y * S + x2);
  }
  return x;
}

let session: ort.InferenceSession;
beforeAll(async () => {
  session = await ort.InferenceSession.create(buildDemoModelBytes(), { executionProviders: ['cpu'] });
});
afterAll(async () => {
  await session?.release();
});

async function detect(rects: readonly Rect[]): Promise<{ label: string; box: number[] }[]> {
  const out = await session.run({ images: new ort.Tensor('float32', scene(rects), [1, 3, S, S]) });
  const data = out['output0']!.data as Float32Array;
  const geometry = { sourceWidth: S, sourceHeight: S, scale: 1, padLeft: 0, padTop: 0, resizedWidth: S, resizedHeight: S };
  return postprocess(data, 0, DEMO_CLASSES.length, data.length / (4 + DEMO_CLASSES.length), geometry)
    // Within 0.1 px of whole pixels (the class weighting's eps shortens a side by ~0.1%), then rounded.
    .map((d) => {
      expect(d.box.every((v) => Math.abs(v - Math.round(v)) < 0.1)).toBe(true);
      return { label: DEMO_CLASSES[d.classIndex]!.name, box: d.box.map((v) => Math.round(v)) };
    })
    .sort((a, b) => a.label.localeCompare(b.label) || a.box[0]! - b.box[0]!);
}

const MAGENTA: Rect = { colour: 'magenta', box: [100, 100, 140, 140] };

describe('demo detector: one box per object', () => {
  it.each([
    // [case, occluder drawn over the magenta square, magenta's expected box: the extent of what is visible]
    ['not hidden', { colour: 'yellow', box: [200, 200, 224, 224] }, [100, 100, 140, 140]],
    // cam-c's frames 20-21: a yellow square crossing the top of the magenta one leaves a U.
    ['a U: the top middle hidden', { colour: 'yellow', box: [110, 90, 130, 120] }, [100, 100, 140, 140]],
    ['two pieces: a bar across the middle', { colour: 'yellow', box: [90, 112, 150, 128] }, [100, 100, 140, 140]],
    ['two pieces: a bar down the middle', { colour: 'cyan', box: [112, 90, 128, 150] }, [100, 100, 140, 140]],
    ['an L: one corner hidden', { colour: 'green', box: [120, 80, 160, 120] }, [100, 100, 140, 140]],
    ['the right half hidden: only the left half is visible', { colour: 'yellow', box: [120, 90, 160, 150] }, [100, 100, 120, 140]],
  ] as [string, Rect, Box][])('%s', async (_name, occluder, magentaBox) => {
    // Act
    const found = await detect([MAGENTA, occluder]);
    // Assess: one magenta box spanning the visible pixels, and the occluder's own box.
    expect(found).toEqual(
      [
        { label: 'magenta', box: magentaBox },
        { label: occluder.colour, box: [...occluder.box] },
      ].sort((a, b) => a.label.localeCompare(b.label)),
    );
  });

  it('keeps objects of different colours apart when they touch', async () => {
    const found = await detect([
      { colour: 'red', box: [40, 40, 80, 80] },
      { colour: 'blue', box: [80, 40, 100, 60] },
    ]);
    expect(found).toEqual([
      { label: 'blue', box: [80, 40, 100, 60] },
      { label: 'red', box: [40, 40, 80, 80] },
    ]);
  });
});
