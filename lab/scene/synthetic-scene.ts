/**
 * A synthetic street scene for cost and state-size measurements (issue 44): detector-like
 * boxes for frame `frame` of a video, as a function of the video id and the frame number
 * alone (so they are the same after a failover or a replay), with objects that are born,
 * move and leave at a steady rate, and a detector that sometimes misses or doubts.
 *
 * - `lanes` = ceil(1.25 × `detections`) object lanes. Each lane repeats a cycle: an object
 *   lives `lifeSeconds` (±40 %, per cycle), then the lane is empty for a while, sized so
 *   that about `detections` objects are detected a frame on average, each a new track
 *   when it comes.
 * - An object enters at a random point and walks (a person, 60-110 × 140-220 px at 1080p)
 *   or drives (a car, 180-300 × 110-170 px) on a straight line at 1-4 % of the width per
 *   second, with ±1.5 px of per-frame jitter on each edge.
 * - The detector: scores 0.55-0.95 per object with ±0.04 per frame; in 4 % of frames an
 *   object is missed, in 6 % its score drops to 0.15-0.45 (ByteTrack's second association
 *   keeps it). So the tracker holds tracked, lost (a missed object and every object that
 *   left, for `maxLostFrames`) and newly born tracks, as on a real camera.
 *
 * Pure and deterministic (a small integer hash, no Math.random).
 */
import type { TrackerInput } from '../../gpu-worker/vision/tracker.ts';

export interface SceneOptions {
  /** Mean detections per frame. @default 5 */
  readonly detections: number;
  /** Frames per second (motion and lifetimes are in seconds). */
  readonly fps: number;
  /** Mean time an object stays in view, s. @default 8 */
  readonly lifeSeconds: number;
  readonly width: number;
  readonly height: number;
}

export const DEFAULT_SCENE: Omit<SceneOptions, 'fps'> = Object.freeze({ detections: 5, lifeSeconds: 8, width: 1920, height: 1080 });

/** A 32-bit mix of integers (murmur3's finalizer over a running hash). */
function mix(...xs: number[]): number {
  let h = 0x9e3779b9;
  for (const x of xs) {
    h = Math.imul(h ^ (x | 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}
/** A uniform number in [0, 1) from integers. */
const unit = (...xs: number[]) => mix(...xs) / 2 ** 32;

function videoSeed(videoId: string): number {
  let h = 0;
  for (let i = 0; i < videoId.length; i++) h = (Math.imul(h, 31) + videoId.charCodeAt(i)) | 0;
  return h;
}

/** Share of an object's frames the detector misses. */
const MISSED = 0.04;

/** Object lanes for a mean of `detections` a frame. */
const lanesFor = (detections: number) => Math.max(1, Math.ceil(1.25 * detections));

/** The lane's cycle holding `frame`: its number and the frame it starts at (cycles vary in length, so walk them). */
interface Cycle {
  readonly n: number;
  readonly start: number;
  readonly lifeFrames: number;
}

/** Cycles per lane are walked from frame 0; a cache keeps it O(1) per frame for a video read in order. */
const cycleCache = new Map<string, Cycle>();

function cycleAt(seed: number, lane: number, frame: number, o: SceneOptions): Cycle {
  // Each lane is busy a share of the time such that lanes x share x (1 - 4 % missed) = the detections asked.
  const lanes = lanesFor(o.detections);
  const busy = Math.min(0.95, o.detections / (lanes * (1 - MISSED)));
  const lengths = (n: number) => {
    const life = Math.max(2, Math.round(o.lifeSeconds * o.fps * (0.6 + 0.8 * unit(seed, lane, n, 1))));
    return { life, total: life + Math.max(1, Math.round((life * (1 - busy)) / busy)) };
  };
  const key = `${seed}:${lane}:${o.fps}:${o.lifeSeconds}:${o.detections}`;
  let c = cycleCache.get(key);
  // Each lane starts part-way into its first cycle, so lanes do not all begin together.
  if (!c || c.start > frame) {
    const first = lengths(0);
    c = { n: 0, start: -Math.floor(unit(seed, lane, 7) * first.total), lifeFrames: first.life };
  }
  for (;;) {
    const { total } = lengths(c.n);
    if (frame < c.start + total) break;
    const next = lengths(c.n + 1);
    c = { n: c.n + 1, start: c.start + total, lifeFrames: next.life };
  }
  cycleCache.set(key, c);
  return c;
}

/** The detections of frame `frame` of `videoId` (see the module comment). */
export function sceneDetections(videoId: string, frame: number, options: Partial<SceneOptions> & Pick<SceneOptions, 'fps'>): TrackerInput[] {
  const o: SceneOptions = { ...DEFAULT_SCENE, ...options };
  const seed = videoSeed(videoId);
  const lanes = lanesFor(o.detections);
  const out: TrackerInput[] = [];
  for (let lane = 0; lane < lanes; lane++) {
    const c = cycleAt(seed, lane, frame, o);
    const age = frame - c.start;
    if (age >= c.lifeFrames) continue;
    const r = (k: number) => unit(seed, lane, c.n, k);
    const person = r(2) < 0.6;
    const w = person ? 60 + 50 * r(3) : 180 + 120 * r(3);
    const h = person ? 140 + 80 * r(4) : 110 + 60 * r(4);
    const speed = (0.01 + 0.03 * r(5)) * o.width; // px per second
    const angle = 2 * Math.PI * r(6);
    const x0 = r(8) * (o.width - w);
    const y0 = r(9) * (o.height - h);
    const t = age / o.fps;
    // Bounce off the edges (reflect the straight path into the frame).
    const reflect = (p: number, span: number) => {
      const m = ((p % (2 * span)) + 2 * span) % (2 * span);
      return m > span ? 2 * span - m : m;
    };
    const x = reflect(x0 + Math.cos(angle) * speed * t, o.width - w);
    const y = reflect(y0 + Math.sin(angle) * speed * t, o.height - h);
    const jitter = (k: number) => (unit(seed, lane, frame, k) - 0.5) * 3;
    const miss = unit(seed, lane, frame, 20);
    if (miss < MISSED) continue;
    const base = 0.55 + 0.4 * r(10);
    const score = miss < 0.1 ? 0.15 + 0.3 * unit(seed, lane, frame, 21) : Math.min(0.99, Math.max(0.5, base + (unit(seed, lane, frame, 22) - 0.5) * 0.08));
    out.push({ box: [x + jitter(11), y + jitter(12), x + w + jitter(13), y + h + jitter(14)], score, label: person ? 'person' : 'car' });
  }
  return out;
}
