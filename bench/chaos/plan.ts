/**
 * The chaos run's plan: its options, and from a seed the uploads (each frame's due time
 * and the frame and notification faults drawn for it), the frames never uploaded and
 * the timed faults, drawn from the tables of ./faults.ts.
 */
import sharp from 'sharp';
import { rng } from '../../core/random.ts';
import { normal } from '../support.ts';
import { FRAME_FAULTS, NOTIFICATION_FAULTS, TIMED_FAULTS, type PlanContext, type PlannedUpload } from './faults.ts';
import { SEGMENT_FAULTS, type SegmentOptions, type SegmentPlan } from './segments.ts';

/** What one chaos run does; every share is of the frames (frame 1 of each video is left alone). */
export interface ChaosOptions extends SegmentOptions {
  readonly seed: number;
  readonly videos: number;
  readonly frames: number;
  readonly fps: number;
  readonly uploaders: number;
  /** Median of the ordinary upload delay (log-normal, capped under reorderWaitMs / 2). */
  readonly delayP50Ms: number;
  readonly kills: number;
  /** SIGSTOP for less than the slot lease. */
  readonly shortPauses: number;
  /** SIGSTOP for longer than the slot lease: the slot is taken over, the worker returns a zombie. */
  readonly longPauses: number;
  readonly janitorSkips: number;
  readonly dropShare: number;
  readonly duplicateShare: number;
  readonly delayShare: number;
  /** Share of frames that start a window of 3-6 frames whose upload order is permuted. */
  readonly shuffleShare: number;
  readonly lateShare: number;
  readonly corruptShare: number;
  readonly zeroShare: number;
  readonly unreadableShare: number;
  /** Share of frames never uploaded (the stream really lost them: they must end as `gap`). */
  readonly lostShare: number;
  /**
   * Share of frames uploaded late into an in-doubt window (issue 32): the commit of the
   * frame's gap fails unsent and the next reads of its video fail too
   * (`AWS_FAULT_INJECTION.doubtWindows`), and the frame is put as soon as its worker
   * reports the commit in doubt, so its notification arrives while the video's state may
   * still be rolled back. It must end `ok` or `late`, never without a record.
   */
  readonly doubtShare: number;
  /** Share of AWS request attempts (workers, router, janitor) failed with throttling or 5xx. */
  readonly awsFaultRate: number;
  /** Share of the workers' commit transactions applied with their answer lost (`AWS_FAULT_INJECTION.lostAnswerRate`). */
  readonly lostAnswerRate: number;
  /** Share of the workers' commits of 2+ videos whose later group fails after the first landed (`laterGroupRate`). */
  readonly laterGroupRate: number;
  /** DynamoDB outages (DynamoDB Local stopped for every process) longer than the slot queues' redrive window. */
  readonly outages: number;
  /**
   * Frames that crash the worker (`WORKER_CRASH_ON_KEY`): 0 or 1 (the variable names one
   * key). Such a frame must end `failed` with reason `crashed-worker`, or `ok` where the
   * worker does not know the variable.
   */
  readonly crashFrames: number;
  /** Run at the tunables users get (leases, heartbeat, visibility, launch grace, janitor period), not FAST_TUNABLES. */
  readonly defaultTunables: boolean;
  /**
   * Run each worker task as the product does with `hotSpare` (decision 75): the supervisor
   * forks a primary and a spare; kill -9 and SIGSTOP then hit the primary worker process.
   */
  readonly hotSpare: boolean;
  readonly slotCount: number;
  readonly timeoutMs: number;
  readonly quietMs: number;
  readonly out: string;
}

export const DEFAULTS: Omit<ChaosOptions, 'seed' | 'out'> = {
  videos: 6,
  frames: 200,
  fps: 5,
  uploaders: 6,
  delayP50Ms: 100,
  kills: 5,
  shortPauses: 4,
  longPauses: 3,
  janitorSkips: 3,
  dropShare: 0.02,
  duplicateShare: 0.02,
  delayShare: 0.01,
  shuffleShare: 0.01,
  lateShare: 0.01,
  corruptShare: 0.006,
  zeroShare: 0.006,
  unreadableShare: 0.006,
  lostShare: 0.005,
  doubtShare: 0.004,
  awsFaultRate: 0.02,
  lostAnswerRate: 0.03,
  laterGroupRate: 0.03,
  outages: 1,
  crashFrames: 1,
  defaultTunables: false,
  hotSpare: false,
  slotCount: 3,
  // Segment videos beside the JPEG cameras (bench/chaos/segments.ts); 0 runs the JPEG-only plan of before.
  segmentVideos: 2,
  segmentSeconds: 2,
  segmentFaultsEach: 2,
  timeoutMs: 220_000,
  quietMs: 40_000,
};

/** The report's label of the frame that crashes the worker. */
export const CRASH_FRAME_KIND = 'frame crashes the worker (WORKER_CRASH_ON_KEY)';

/** A timed fault at its planned time. */
export interface PlannedTimedFault {
  readonly kind: string;
  readonly atMs: number;
  readonly detail: Readonly<Record<string, number>>;
}

export interface ChaosPlan {
  readonly videoIds: readonly string[];
  /** Sorted by due time. */
  readonly uploads: readonly PlannedUpload[];
  /** Per video, the frames never uploaded. */
  readonly lost: ReadonlyMap<string, ReadonlySet<number>>;
  /** Sorted by time. */
  readonly timedFaults: readonly PlannedTimedFault[];
  /** The frame that crashes the worker, when `crashFrames` is 1. */
  readonly crashFrame?: { readonly videoId: string; readonly frame: number };
  /** The segment videos (their ids and uploads are in `videoIds` and `uploads` too; their lost frames only here). */
  readonly segments?: SegmentPlan;
}

/** The plan with the segment videos added (their uploads merged in due order). */
export function withSegments(plan: ChaosPlan, segments: SegmentPlan | undefined): ChaosPlan {
  if (!segments) return plan;
  return { ...plan, videoIds: [...plan.videoIds, ...segments.videoIds], uploads: [...plan.uploads, ...segments.uploads].sort((a, b) => a.dueMs - b.dueMs), segments };
}

/** Frames never uploaded of a video, JPEG or segment. */
export function neverUploaded(plan: ChaosPlan, videoId: string): ReadonlySet<number> {
  return plan.lost.get(videoId) ?? plan.segments?.lost.get(videoId) ?? new Set();
}

/** Draws the plan of a run from its seed. */
export function makePlan(ctx: PlanContext): ChaosPlan {
  const { o } = ctx;
  const rand = rng(o.seed * 7919 + 17);
  const videoIds = Array.from({ length: o.videos }, (_, i) => `chaos-${String(i + 1).padStart(2, '0')}`);
  const frameMs = 1000 / o.fps;
  const sigma = 0.6;
  const uploads: PlannedUpload[] = [];
  const lost = new Map<string, Set<number>>();
  for (const [v, videoId] of videoIds.entries()) {
    lost.set(videoId, new Set());
    const startMs = (v * frameMs) / videoIds.length + v * 137;
    const due: number[] = [];
    for (let f = 1; f <= o.frames; f++) due[f] = startMs + (f - 1) * frameMs + Math.min(ctx.reorderWaitMs / 2, o.delayP50Ms * Math.exp(sigma * normal(rand)));
    const shuffled = shuffleWindows(due, o, rand);
    for (let f = 1; f <= o.frames; f++) {
      // Frame 1 is left alone: it only moves the video's start.
      let x = f === 1 ? 1 : rand();
      const fault = FRAME_FAULTS.find((k) => (x -= k.share(o)) < 0);
      const detail = fault?.draw?.(rand, ctx);
      if (fault?.neverUploaded) {
        lost.get(videoId)!.add(f);
        continue;
      }
      let n = f === 1 ? 1 : rand();
      const note = NOTIFICATION_FAULTS.find((k) => (n -= k.share(o)) < 0);
      const notification = note?.make(rand, ctx);
      uploads.push({
        videoId,
        frame: f,
        dueMs: Math.max(0, due[f]! + (fault?.holdBackMs?.(rand, ctx) ?? 0)),
        ...(fault ? { frameFault: fault.kind } : {}),
        ...(detail ? { detail } : {}),
        ...(shuffled.has(f) ? { shuffled: true } : {}),
        ...(note && notification ? { notificationFault: note.kind, notification } : {}),
      });
    }
  }
  uploads.sort((a, b) => a.dueMs - b.dueMs);

  // Timed faults at random times over the middle of the upload span, so that each one
  // lands while videos are in flight and every pause has ended before the uploads do.
  const spanMs = o.frames * frameMs;
  const timedFaults: PlannedTimedFault[] = [];
  for (const k of TIMED_FAULTS) {
    for (let i = 0; i < k.count(o); i++) {
      const atMs = Math.round(spanMs * (0.08 + 0.72 * rand()));
      timedFaults.push({ kind: k.kind, atMs, detail: k.draw?.(rand, ctx) ?? {} });
    }
  }
  timedFaults.sort((a, b) => a.atMs - b.atMs);
  const crashFrame = o.crashFrames > 0 ? pickCrashFrame(uploads, o) : undefined;
  return { videoIds, uploads, lost, timedFaults, ...(crashFrame ? { crashFrame } : {}) };
}

/**
 * The frame that crashes the worker: an upload with no other fault, in the middle half of
 * its video, drawn from its own sequence so that the plan's other draws (and the documented
 * seeds' plans) stay as they were.
 */
function pickCrashFrame(uploads: readonly PlannedUpload[], o: ChaosOptions): { videoId: string; frame: number } | undefined {
  const pool = uploads.filter((u) => !u.frameFault && !u.notification && !u.shuffled && u.frame > o.frames / 4 && u.frame < (3 * o.frames) / 4);
  const u = pool[Math.floor(rng(o.seed * 131 + 7)() * pool.length)];
  return u ? { videoId: u.videoId, frame: u.frame } : undefined;
}

/** Shuffled windows: a few consecutive frames take each other's due times. Returns the frames moved. */
function shuffleWindows(due: number[], o: ChaosOptions, rand: () => number): Set<number> {
  const shuffled = new Set<number>();
  for (let f = 2; f <= o.frames - 6; f++) {
    if (rand() >= o.shuffleShare) continue;
    const w = 3 + Math.floor(rand() * 4);
    const frames = Array.from({ length: w }, (_, k) => f + k);
    const times = frames.map((x) => due[x]!);
    for (let i = times.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [times[i], times[j]] = [times[j]!, times[i]!];
    }
    frames.forEach((x, k) => {
      if (times[k] !== due[x]) shuffled.add(x);
      due[x] = times[k]!;
    });
    f += w;
  }
  return shuffled;
}

/** Planned counts by fault kind (frame and notification faults, shuffled uploads, frames never uploaded). */
export function plannedCounts(plan: ChaosPlan): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of NOTIFICATION_FAULTS) out[k.kind] = plan.uploads.filter((u) => !u.segment && u.notificationFault === k.kind).length;
  out['upload shuffled'] = plan.uploads.filter((u) => u.shuffled).length;
  for (const k of FRAME_FAULTS)
    out[k.kind] = k.neverUploaded ? [...plan.lost.values()].reduce((n, l) => n + l.size, 0) : plan.uploads.filter((u) => u.frameFault === k.kind).length;
  if (plan.crashFrame) out[CRASH_FRAME_KIND] = 1;
  if (plan.segments) {
    out['segments'] = [...plan.segments.segments.values()].reduce((n, m) => n + m.size, 0);
    for (const k of NOTIFICATION_FAULTS) out[`segment ${k.kind}`] = plan.uploads.filter((u) => u.segment && u.notificationFault === k.kind).length;
    for (const k of SEGMENT_FAULTS)
      out[k.kind] = k.neverUploaded ? countMissing(plan.segments) : plan.uploads.filter((u) => u.segment && u.frameFault === k.kind).length;
  }
  return out;
}

/** Segments never uploaded: the planned segments whose first frame is lost. */
function countMissing(s: SegmentPlan): number {
  let n = 0;
  for (const [videoId, segs] of s.segments) for (const first of segs.keys()) if (s.lost.get(videoId)?.has(first)) n++;
  return n;
}

/** A few distinct small JPEGs (the stats processor only decodes them). */
export async function jpegs(count: number): Promise<Buffer[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      sharp({ create: { width: 64, height: 48, channels: 3, background: { r: (i * 53) % 256, g: (i * 97) % 256, b: (i * 31) % 256 } } })
        .jpeg()
        .toBuffer(),
    ),
  );
}
