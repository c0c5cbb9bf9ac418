/**
 * Workload and accounting helpers for bench/compare.ts and bench/soak.ts: segmented
 * synthetic clips with ground truth, the AWS call log of
 * core/aws/clients.ts, and the workers' EMF metric lines.
 */
import { existsSync, readFileSync } from 'node:fs';
import { generateClip } from '../gpu-worker/vision/index.ts';
import type { GroundTruthFrame } from '../gpu-worker/vision/synthetic/generate.ts';

/** Frames per synthetic segment: objects cross a 320-px frame in about 100 frames. */
export const SEGMENT_FRAMES = 100;
/** Ground-truth IDs of segment k are offset by k x this. */
export const SEGMENT_ID_STRIDE = 1000;

/** One synthetic video: JPEG frames numbered from 1 and their ground truth. */
export interface SyntheticVideo {
  readonly images: Map<number, Uint8Array>;
  readonly groundTruth: GroundTruthFrame[];
}

/**
 * One video's frames and ground truth, numbered from 1: segments of {@link SEGMENT_FRAMES}
 * frames from different clip seeds (a scene cut between them), so objects stay in view for
 * the whole video; ground-truth IDs are distinct per segment. Deterministic in its arguments.
 */
export async function makeSegmentedVideo(seed: number, videoIndex: number, frames: number): Promise<SyntheticVideo> {
  const images = new Map<number, Uint8Array>();
  const groundTruth: GroundTruthFrame[] = [];
  for (let k = 0; k * SEGMENT_FRAMES < frames; k++) {
    const n = Math.min(SEGMENT_FRAMES, frames - k * SEGMENT_FRAMES);
    const clip = await generateClip({
      seed: seed * 1000 + videoIndex * 10 + k,
      frames: n,
      firstFrame: 1 + k * SEGMENT_FRAMES,
      format: 'jpeg',
      objects: 4 + ((videoIndex + k) % 3),
      crossings: (videoIndex + k) % 2 === 1,
    });
    for (const f of clip.frames) images.set(f.frame, f.image);
    for (const g of clip.groundTruth) groundTruth.push({ frame: g.frame, objects: g.objects.map((o) => ({ ...o, id: o.id + k * SEGMENT_ID_STRIDE })) });
  }
  return { images, groundTruth };
}

/** AWS calls in an `AWS_CALL_LOG` file (`role service operation` lines), in total and by `role.service.operation`. */
export function tallyCallLog(file: string): { total: number; byOperation: Record<string, number> } {
  const byOperation: Record<string, number> = {};
  let total = 0;
  if (!existsSync(file)) return { total, byOperation };
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    const [role, service, op] = line.split('\t');
    total++;
    byOperation[`${role}.${service}.${op}`] = (byOperation[`${role}.${service}.${op}`] ?? 0) + 1;
  }
  return { total, byOperation };
}

/**
 * Values of the named metrics in one EMF line a worker wrote on stdout (possibly behind a
 * `[slot-N pid] ` prefix), summed when a line carries several; empty when the line is not
 * EMF or names none of them.
 */
export function emfValues(line: string, names: readonly string[]): Record<string, number> {
  const at = line.indexOf('{"');
  if (at < 0 || !line.includes('"_aws"')) return {};
  try {
    const doc = JSON.parse(line.slice(at)) as Record<string, unknown>;
    const out: Record<string, number> = {};
    for (const n of names) {
      const v = doc[n];
      const sum = Array.isArray(v) ? v.reduce((a: number, x) => a + Number(x), 0) : typeof v === 'number' ? v : undefined;
      if (sum !== undefined) out[n] = sum;
    }
    return out;
  } catch {
    return {};
  }
}
