import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { iou } from '../../../gpu-worker/vision/postprocess.ts';
import { generateClip } from '../../../gpu-worker/vision/synthetic/generate.ts';

describe('generateClip', () => {
  it('is deterministic from the seed', async () => {
    const [a, b, c] = await Promise.all([
      generateClip({ seed: 5, frames: 3 }),
      generateClip({ seed: 5, frames: 3 }),
      generateClip({ seed: 6, frames: 3 }),
    ]);
    expect(b).toEqual(a);
    expect(c.groundTruth).not.toEqual(a.groundTruth);
  });

  it('writes decodable frames of the requested size and format', async () => {
    const clip = await generateClip({ seed: 1, frames: 2, width: 160, height: 120, format: 'jpeg', firstFrame: 10 });
    const meta = await sharp(clip.frames[0].image).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 160, 120]);
    expect(clip.frames.map((f) => f.frame)).toEqual([10, 11]);
  });

  it('keeps boxes inside the image, and objects enter and leave', async () => {
    const clip = await generateClip({ seed: 2, frames: 60, objects: 4 });
    const seen = new Map<number, number[]>();
    for (const f of clip.groundTruth) {
      for (const o of f.objects) {
        const [x1, y1, x2, y2] = o.box;
        expect(x1 >= 0 && y1 >= 0 && x2 <= clip.width && y2 <= clip.height && x2 > x1 && y2 > y1).toBe(true);
        seen.set(o.id, [...(seen.get(o.id) ?? []), f.frame]);
      }
    }
    const first = clip.groundTruth[0].objects.map((o) => o.id);
    const last = clip.groundTruth.at(-1)!.objects.map((o) => o.id);
    expect([...seen.keys()].some((id) => !first.includes(id))).toBe(true);
    expect([...seen.keys()].some((id) => !last.includes(id))).toBe(true);
  });

  it('has overlapping objects only when crossings are asked for', async () => {
    const overlaps = async (crossings: boolean) => {
      const clip = await generateClip({ seed: 11, frames: 50, objects: 6, crossings });
      return clip.groundTruth.some((f) => f.objects.some((a, i) => f.objects.some((b, j) => j > i && iou(a.box, b.box) > 0)));
    };
    expect(await overlaps(false)).toBe(false);
    expect(await overlaps(true)).toBe(true);
  });
});
