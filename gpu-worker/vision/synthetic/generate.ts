/**
 * Synthetic video clips with ground truth: solid squares of saturated colours
 * moving over a dark, slightly noisy background. Deterministic from a seed, so
 * tests, the local stack, the CLI and the demo all see the same clip.
 *
 * Without crossings every object keeps to its own horizontal lane, so paths
 * never overlap; with crossings, half the objects move vertically through the
 * lanes of the others. Some objects start outside the frame and enter; objects
 * that move off the edge leave.
 */
import sharp from 'sharp';
import { DEMO_CLASSES } from '../demo-model/build-model.ts';
import { rng } from '../../../core/random.ts';

export interface ClipOptions {
  readonly seed: number;
  readonly frames: number;
  /** Default 320. */
  readonly width?: number;
  /** Default 240. */
  readonly height?: number;
  /** Number of moving squares (default 4). */
  readonly objects?: number;
  /** Let paths cross (objects occlude each other); default false. */
  readonly crossings?: boolean;
  /** Encoding of the frames (default png). */
  readonly format?: 'png' | 'jpeg';
  /** Smallest and largest square side in pixels (defaults 16 and 40). */
  readonly minSizePx?: number;
  readonly maxSizePx?: number;
  /** Amplitude of the per-pixel background/object noise, 0-255 (default 6). */
  readonly noise?: number;
  /** First frame number (default 0). */
  readonly firstFrame?: number;
}

/** A ground-truth object in one frame; the box is the visible part, clipped to the image. */
export interface GroundTruthObject {
  readonly id: number;
  readonly label: string;
  readonly box: [number, number, number, number];
}

export interface GroundTruthFrame {
  readonly frame: number;
  readonly objects: GroundTruthObject[];
}

export interface ClipFrame {
  readonly frame: number;
  readonly image: Uint8Array;
}

export interface Clip {
  readonly width: number;
  readonly height: number;
  readonly format: 'png' | 'jpeg';
  readonly frames: ClipFrame[];
  readonly groundTruth: GroundTruthFrame[];
}

/** Fisher-Yates shuffle driven by `rand`. */
function shuffle<T>(items: T[], rand: () => number): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

interface Mover {
  id: number;
  label: string;
  rgb: readonly [number, number, number];
  size: number;
  x: number;
  y: number;
  vx: number;
  vy: number;
}

function planMovers(o: Required<ClipOptions>, rand: () => number): Mover[] {
  const { width, height, minSizePx, maxSizePx } = o;
  const between = (a: number, b: number) => a + rand() * (b - a);
  const laneHeight = maxSizePx + 8;
  const laneCount = Math.max(1, Math.floor(height / laneHeight));
  const lanes = shuffle(Array.from({ length: laneCount }, (_, i) => i), rand);
  const colours = shuffle(DEMO_CLASSES.map((_, i) => i), rand);
  const movers: Mover[] = [];
  let horizontal = 0;
  for (let k = 0; k < o.objects; k++) {
    const cls = DEMO_CLASSES[colours[k % colours.length]];
    const size = Math.round(between(minSizePx, maxSizePx));
    const speed = between(1.5, 4);
    const dir = rand() < 0.5 ? -1 : 1;
    const entering = k % 2 === 1;
    const vertical = o.crossings && k % 2 === 1;
    if (!vertical) {
      const lane = lanes[horizontal++ % laneCount];
      const y = lane * laneHeight + 4 + Math.floor(rand() * Math.max(1, laneHeight - 8 - size));
      const x = entering ? (dir > 0 ? -size - between(0, 30) : width + between(0, 30)) : between(0, width - size);
      movers.push({ id: k + 1, label: cls.name, rgb: cls.rgb, size, x, y, vx: dir * speed, vy: 0 });
    } else {
      const x = between(width * 0.2, width * 0.8 - size);
      const y = dir > 0 ? -size - between(0, 20) : height + between(0, 20);
      movers.push({ id: k + 1, label: cls.name, rgb: cls.rgb, size, x, y, vx: 0, vy: dir * speed });
    }
  }
  return movers;
}

/** Generates a clip and its ground truth. */
export async function generateClip(options: ClipOptions): Promise<Clip> {
  const o: Required<ClipOptions> = {
    width: 320,
    height: 240,
    objects: 4,
    crossings: false,
    format: 'png',
    minSizePx: 16,
    maxSizePx: 40,
    noise: 6,
    firstFrame: 0,
    ...options,
  };
  const rand = rng(o.seed);
  const movers = planMovers(o, rand);
  const { width, height } = o;
  const frames: ClipFrame[] = [];
  const groundTruth: GroundTruthFrame[] = [];
  const pixels = Buffer.alloc(width * height * 3);
  for (let f = 0; f < o.frames; f++) {
    const frame = o.firstFrame + f;
    for (let p = 0; p < width * height; p++) {
      const n = Math.floor(rand() * (o.noise + 1));
      pixels[3 * p] = 14 + n;
      pixels[3 * p + 1] = 14 + n;
      pixels[3 * p + 2] = 18 + n;
    }
    const objects: GroundTruthObject[] = [];
    // Later objects are drawn on top, so during a crossing the earlier one is occluded.
    for (const m of movers) {
      const x0 = Math.round(m.x + m.vx * f);
      const y0 = Math.round(m.y + m.vy * f);
      const x1 = Math.max(0, x0);
      const y1 = Math.max(0, y0);
      const x2 = Math.min(width, x0 + m.size);
      const y2 = Math.min(height, y0 + m.size);
      if (x2 <= x1 || y2 <= y1) continue;
      for (let y = y1; y < y2; y++) {
        for (let x = x1; x < x2; x++) {
          const p = 3 * (y * width + x);
          const n = Math.floor(rand() * (o.noise + 1));
          pixels[p] = m.rgb[0] ? 255 - n : n;
          pixels[p + 1] = m.rgb[1] ? 255 - n : n;
          pixels[p + 2] = m.rgb[2] ? 255 - n : n;
        }
      }
      objects.push({ id: m.id, label: m.label, box: [x1, y1, x2, y2] });
    }
    const img = sharp(pixels, { raw: { width, height, channels: 3 } });
    const encoded = o.format === 'png' ? await img.png({ compressionLevel: 1 }).toBuffer() : await img.jpeg({ quality: 95, chromaSubsampling: '4:4:4' }).toBuffer();
    frames.push({ frame, image: new Uint8Array(encoded) });
    groundTruth.push({ frame, objects });
  }
  return { width, height, format: o.format, frames, groundTruth };
}
