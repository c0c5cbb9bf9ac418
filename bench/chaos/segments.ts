/**
 * Segment videos in the chaos run (issue 34): besides the JPEG cameras, `--segment-videos`
 * videos arrive as H.264 segments in MPEG-TS (`frames/{video}/{n}.ts`, covering frames
 * `[n, n + k)`, `x-amz-meta-frames: k` declared as the CLI and the edge segmenter do), cut
 * at keyframes so `k` varies around `--segment-seconds` at the run's fps. Each segment is a
 * real encode made at plan time by the `ffmpeg` binary (bench/harness/segments.ts), one per
 * length, shared by every segment of that length.
 *
 * Segment faults ({@link SEGMENT_FAULTS}), each given to `segmentFaultsEach` segments drawn
 * from the segment videos (never the first segment of a video), on a sequence of their own
 * so the JPEG videos' plan of a seed stays as it was:
 *  - *segment never uploaded*: its frames must end as `gap` (the S3 listing decides);
 *  - *segment late*: held back 3-6 x reorderWaitMs, gapped first, then processed `late`;
 *  - *segment uploaded twice (same bytes)*: a second PUT and notification of the same
 *    object, which must be processed once;
 *  - *segment truncated*: the bytes cut at 25-75 %, `k` still declared: the frames the
 *    decoder yields end `ok` (or `late`), the rest `failed` with the decoder's reason. How
 *    many it yields is found at plan time by the worker's own decoder on the same bytes.
 * Segment notifications are also dropped, duplicated and delayed, at the shares of
 * {@link SEGMENT_NOTIFICATION_SHARES} (a run has a few dozen segments, not a thousand frames).
 */
import { rng } from '../../core/random.ts';
import { decodeSegment } from '../../gpu-worker/video/segment-decoder.ts';
import { encodeSegment } from '../harness/segments.ts';
import { sleep } from '../harness/main.ts';
import type { LocalStack } from '../../local/stack.ts';
import { putSegmentObject } from '../harness/uploader.ts';
import type { PlanContext, PlannedUpload } from './faults.ts';
import { NOTIFICATION_FAULTS } from './faults.ts';

/** Width and height of the segments (the stats processor only averages their pixels). */
const SEGMENT_WIDTH = 160;
const SEGMENT_HEIGHT = 120;

/** A segment fault, given to a fixed number of segments per run. */
export interface SegmentFault {
  readonly kind: string;
  /** The segment is never uploaded (its frames must end as `gap`). */
  readonly neverUploaded?: boolean;
  /** How much later than planned the segment is put. */
  readonly holdBackMs?: (rand: () => number, ctx: PlanContext) => number;
  /** Values drawn for the segment. */
  readonly draw?: (rand: () => number) => Record<string, number>;
}

export const SEGMENT_MISSING = 'segment never uploaded';
export const SEGMENT_LATE = 'segment late';
export const SEGMENT_TWICE = 'segment uploaded twice (same bytes)';
export const SEGMENT_TRUNCATED = 'segment truncated';

export const SEGMENT_FAULTS: readonly SegmentFault[] = [
  { kind: SEGMENT_MISSING, neverUploaded: true },
  { kind: SEGMENT_LATE, holdBackMs: (rand, ctx) => (3 + rand() * 3) * ctx.reorderWaitMs },
  // The second PUT 0.2-2 x reorderWaitMs after the first.
  { kind: SEGMENT_TWICE, draw: (rand) => ({ againAfterShare: 0.2 + rand() * 1.8 }) },
  // The share of the bytes kept.
  { kind: SEGMENT_TRUNCATED, draw: (rand) => ({ keepShare: 0.25 + rand() * 0.5 }) },
];

/** Shares of the segments whose notification is dropped, duplicated, delayed (the kinds of NOTIFICATION_FAULTS). */
export const SEGMENT_NOTIFICATION_SHARES: Readonly<Record<string, number>> = {
  'notification dropped': 0.05,
  'notification duplicated': 0.08,
  'notification delayed': 0.05,
};

/** A segment as planned: frames `[frame, frame + frames)` of its video. */
export interface PlannedSegment {
  readonly frames: number;
  /** The bytes put (a truncated segment's are cut). */
  readonly bytes: Uint8Array;
  /** Frames the decoder yields from `bytes` (all `frames` unless truncated). */
  readonly yields: number;
  /** Which ones, by index in the segment, when not all (a damaged frame before the cut is lost at its own index, decision 67). */
  readonly decoded?: readonly number[];
}

/** The segment videos' part of a plan. */
export interface SegmentPlan {
  readonly videoIds: readonly string[];
  /** Uploads (one per segment, `segment` set), not sorted. */
  readonly uploads: readonly PlannedUpload[];
  /** Per video, the frames of the segments never uploaded. */
  readonly lost: ReadonlyMap<string, ReadonlySet<number>>;
  /** Per video, every segment planned (uploaded or not), by first frame. */
  readonly segments: ReadonlyMap<string, ReadonlyMap<number, PlannedSegment>>;
  /** Per video, its last frame (the `_end` marker's body). */
  readonly lastFrame: ReadonlyMap<string, number>;
}

/** Options of the segment videos. */
export interface SegmentOptions {
  readonly segmentVideos: number;
  readonly segmentSeconds: number;
  readonly segmentFaultsEach: number;
}

/**
 * The segment videos' plan: `o.segmentVideos` videos of `o.frames` frames numbered from 1,
 * in segments of `round(fps x segmentSeconds)` frames +- 30 % (at least 2), due when their
 * last frame has been captured. Drawn from its own sequence of the seed.
 */
export async function makeSegmentPlan(ctx: PlanContext & { readonly o: PlanContext['o'] & SegmentOptions }, firstVideoIndex: number): Promise<SegmentPlan> {
  const { o } = ctx;
  const rand = rng(o.seed * 104_729 + 3);
  const frameMs = 1000 / o.fps;
  const base = Math.max(2, Math.round(o.fps * o.segmentSeconds));
  const videoIds = Array.from({ length: o.segmentVideos }, (_, i) => `chaos-seg-${String(firstVideoIndex + i + 1).padStart(2, '0')}`);
  const encoded = new Map<number, Uint8Array>();
  const encode = (k: number) => {
    let b = encoded.get(k);
    if (!b) {
      b = encodeSegment({ width: SEGMENT_WIDTH, height: SEGMENT_HEIGHT, fps: o.fps, frames: k });
      encoded.set(k, b);
    }
    return b;
  };
  // The cut: segments of varying length, the last one ending at o.frames.
  const cuts: { videoId: string; frame: number; frames: number; startMs: number }[] = [];
  for (const [v, videoId] of videoIds.entries()) {
    const startMs = ((firstVideoIndex + v) * frameMs) / (firstVideoIndex + videoIds.length) + (firstVideoIndex + v) * 137;
    for (let n = 1; n <= o.frames; ) {
      const k = Math.min(o.frames - n + 1, Math.max(2, Math.round(base * (0.7 + 0.6 * rand()))));
      cuts.push({ videoId, frame: n, frames: k, startMs });
      n += k;
    }
  }
  // Each fault kind to segmentFaultsEach distinct segments, never a video's first.
  const pool = cuts.filter((c) => c.frame !== 1);
  const faultOf = new Map<(typeof cuts)[number], SegmentFault>();
  for (const fault of SEGMENT_FAULTS) {
    for (let i = 0; i < o.segmentFaultsEach; i++) {
      const free = pool.filter((c) => !faultOf.has(c));
      if (free.length === 0) break;
      faultOf.set(free[Math.floor(rand() * free.length)]!, fault);
    }
  }
  const uploads: PlannedUpload[] = [];
  const lost = new Map<string, Set<number>>(videoIds.map((id) => [id, new Set<number>()]));
  const segments = new Map<string, Map<number, PlannedSegment>>(videoIds.map((id) => [id, new Map()]));
  const lastFrame = new Map<string, number>(videoIds.map((id) => [id, o.frames]));
  for (const c of cuts) {
    const fault = faultOf.get(c);
    const detail = fault?.draw?.(rand);
    const full = encode(c.frames);
    const bytes = detail?.keepShare !== undefined ? full.slice(0, Math.max(1, Math.floor(full.byteLength * detail.keepShare))) : full;
    const decoded = bytes === full ? undefined : await framesDecoded(bytes, c.frames);
    segments.get(c.videoId)!.set(c.frame, { frames: c.frames, bytes, yields: decoded?.length ?? c.frames, ...(decoded ? { decoded } : {}) });
    if (fault?.neverUploaded) {
      for (let f = c.frame; f < c.frame + c.frames; f++) lost.get(c.videoId)!.add(f);
      continue;
    }
    let x = c.frame === 1 ? 1 : rand();
    const note = NOTIFICATION_FAULTS.find((k) => (x -= SEGMENT_NOTIFICATION_SHARES[k.kind] ?? 0) < 0);
    const notification = note?.make(rand, ctx);
    // Closed once its last frame is captured, then a short upload delay.
    const dueMs = c.startMs + (c.frame + c.frames - 1) * frameMs + Math.min(ctx.reorderWaitMs / 2, o.delayP50Ms * (0.5 + rand()));
    uploads.push({
      videoId: c.videoId,
      frame: c.frame,
      dueMs: Math.max(0, dueMs + (fault?.holdBackMs?.(rand, ctx) ?? 0)),
      segment: { frames: c.frames },
      ...(fault ? { frameFault: fault.kind } : {}),
      ...(detail ? { detail } : {}),
      ...(note && notification ? { notificationFault: note.kind, notification } : {}),
    });
  }
  return { videoIds, uploads, lost, segments, lastFrame };
}

/** Frames the worker's decoder yields from a segment's bytes, `k` declared (what it will do with them: the same decoder, the same bytes). */
async function framesDecoded(bytes: Uint8Array, declared: number): Promise<number[]> {
  const indexes: number[] = [];
  for await (const item of decodeSegment(bytes, { firstFrame: 0, container: 'mpegts', declaredFrames: declared })) if (item.kind === 'frame') indexes.push(item.index);
  return indexes;
}

/** Puts a planned segment (and for `segment uploaded twice`, puts it again later, in `pending`). */
export async function putPlannedSegment(stack: LocalStack, u: PlannedUpload, seg: PlannedSegment, reorderWaitMs: number, pending: Promise<unknown>[]): Promise<string> {
  const key = await putSegmentObject(stack, u.videoId, u.frame, seg.bytes, seg.frames);
  if (u.frameFault === SEGMENT_TWICE) pending.push(sleep(u.detail!.againAfterShare! * reorderWaitMs).then(() => putSegmentObject(stack, u.videoId, u.frame, seg.bytes, seg.frames)));
  return key;
}
