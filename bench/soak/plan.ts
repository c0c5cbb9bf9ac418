/**
 * The soak's plan: from a seed, each frame's production and upload time (a log-normal
 * delay with a heavy tail), the frames never uploaded, the duplicated notifications and
 * the strays uploaded far ahead of their stream.
 */
import { rng } from '../../core/random.ts';
import { Z99, normal } from '../support.ts';
import type { SoakOptions } from '../soak.ts';

export interface PlannedUpload {
  readonly videoId: string;
  readonly frame: number;
  /** When the camera produced the frame (ms after the upload clock starts). */
  readonly producedMs: number;
  /** When the uploader may PUT it. */
  readonly dueMs: number;
  /** Drawn delay (due - produced); negative for a stray uploaded ahead. */
  readonly delayMs: number;
  readonly stray?: { readonly aheadBy: number };
  /** The notification is sent twice, the second copy this long after the first. */
  readonly duplicateAfterMs?: number;
}

export interface SoakPlan {
  readonly videoIds: readonly string[];
  /** Sorted by due time. */
  readonly uploads: readonly PlannedUpload[];
  readonly lost: ReadonlyMap<string, readonly number[]>;
  /** Of the log-normal delay. */
  readonly sigma: number;
}

/** Draws the plan from the seed; the delay's p99 is 4 x reorderWaitMs. */
export function makePlan(opts: SoakOptions, reorderWaitMs: number): SoakPlan {
  const rand = rng(opts.seed * 7919 + 17);
  const videoIds = Array.from({ length: opts.videos }, (_, i) => `soak-${String(i + 1).padStart(2, '0')}`);
  const frameMs = 1000 / opts.fps;
  const p99 = 4 * reorderWaitMs;
  // Log-normal with median delayP50Ms and 99th percentile 4 x reorderWaitMs.
  const sigma = Math.max(0.01, Math.log(p99 / opts.delayP50Ms) / Z99);
  const all = videoIds.flatMap((videoId) => Array.from({ length: opts.frames }, (_, i) => ({ videoId, frame: i + 1 })));
  const key = (v: string, f: number) => `${v}:${f}`;

  // Strays: frames 40-60 ahead of the stream, spread over the videos, in the middle of each.
  const strays = new Map<string, number>();
  for (let i = 0; i < opts.strays && opts.frames > 80; i++) {
    const videoId = videoIds[i % videoIds.length]!;
    for (let tries = 0; tries < 100; tries++) {
      const frame = 70 + Math.floor(rand() * (opts.frames - 80));
      if (!strays.has(key(videoId, frame))) {
        strays.set(key(videoId, frame), 40 + Math.floor(rand() * 21));
        break;
      }
    }
  }
  // Lost: never uploaded (not frame 1, not a stray).
  const lostCount = Math.round(all.length * opts.lostShare);
  const lostKeys = new Set<string>();
  const candidates = all.filter((x) => x.frame !== 1 && !strays.has(key(x.videoId, x.frame)));
  while (lostKeys.size < Math.min(lostCount, candidates.length)) {
    const c = candidates[Math.floor(rand() * candidates.length)]!;
    lostKeys.add(key(c.videoId, c.frame));
  }
  const uploadable = all.filter((x) => !lostKeys.has(key(x.videoId, x.frame)));
  const dupCount = Math.round(uploadable.length * opts.duplicateShare);
  const dups = new Map<string, number>();
  while (dups.size < Math.min(dupCount, uploadable.length)) {
    const c = uploadable[Math.floor(rand() * uploadable.length)]!;
    if (!dups.has(key(c.videoId, c.frame))) dups.set(key(c.videoId, c.frame), Math.round(rand() * 2 * reorderWaitMs));
  }

  const uploads: PlannedUpload[] = uploadable.map(({ videoId, frame }) => {
    const v = videoIds.indexOf(videoId);
    const startMs = (v * frameMs) / videoIds.length + v * 97;
    const producedMs = startMs + (frame - 1) * frameMs;
    const aheadBy = strays.get(key(videoId, frame));
    const delayMs = aheadBy !== undefined ? -aheadBy * frameMs : Math.min(opts.maxDelayMs, opts.delayP50Ms * Math.exp(sigma * normal(rand)));
    const dup = dups.get(key(videoId, frame));
    return {
      videoId,
      frame,
      producedMs,
      dueMs: Math.max(0, producedMs + delayMs),
      delayMs,
      ...(aheadBy !== undefined ? { stray: { aheadBy } } : {}),
      ...(dup !== undefined ? { duplicateAfterMs: dup } : {}),
    };
  });
  uploads.sort((a, b) => a.dueMs - b.dueMs);
  const lost = new Map<string, number[]>(videoIds.map((id) => [id, []]));
  for (const k of lostKeys) {
    const [v, f] = k.split(':');
    lost.get(v!)!.push(Number(f));
  }
  for (const l of lost.values()) l.sort((a, b) => a - b);
  return { videoIds, uploads, lost, sigma };
}
