/**
 * The demo's pure parts: the camera-like upload schedule, the failover measurement
 * and the per-video score. demo.ts wires them to a running local stack.
 */
import type { FrameResultItem } from '../core/commit/results.ts';
import { evaluateMot, type MotFrame } from '../gpu-worker/vision/eval/mot.ts';
import { table } from './format.ts';

/** One upload in the schedule. */
export interface ScheduledUpload {
  readonly videoId: string;
  readonly frame: number;
}

/**
 * Frames of several videos interleaved in time, as cameras deliver them (frame i of
 * every video before frame i+1 of any), then locally shuffled: each item moves at
 * most `jitter` places, deterministically from `seed`, so arrival is slightly out of
 * order the way S3 notifications are. Pure.
 */
export function cameraSchedule(videos: readonly { videoId: string; frames: readonly number[] }[], seed: number, jitter = 3): ScheduledUpload[] {
  const longest = Math.max(0, ...videos.map((v) => v.frames.length));
  const out: ScheduledUpload[] = [];
  for (let i = 0; i < longest; i++) for (const v of videos) if (i < v.frames.length) out.push({ videoId: v.videoId, frame: v.frames[i]! });
  let s = seed >>> 0 || 1;
  const rand = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
  // Sorting by (index + bounded noise) displaces each item by less than `jitter` places.
  const keyed = out.map((u, i) => ({ u, k: i + rand() * jitter }));
  keyed.sort((a, b) => a.k - b.k);
  return keyed.map((x) => x.u);
}

/**
 * Seconds from the kill to the first result the new owner committed for a video the
 * killed worker held; undefined when the video was not affected or nothing was
 * committed after the kill. Pure.
 */
export function failoverSeconds(results: readonly FrameResultItem[], killAtMs: number, killedWorker: string): number | undefined {
  const held = results.some((r) => r.worker === killedWorker);
  if (!held) return undefined;
  let first: number | undefined;
  for (const r of results) {
    if (r.worker !== killedWorker && r.committedAtMs >= killAtMs) first = Math.min(first ?? Infinity, r.committedAtMs);
  }
  return first === undefined ? undefined : (first - killAtMs) / 1000;
}

/** Results as MOT predictions: one object per detection, id = track id. Pure. */
export function predictionsOf(results: readonly FrameResultItem[]): MotFrame[] {
  return results
    .filter((r) => r.status === 'ok')
    .map((r) => ({ frame: r.frame, objects: r.detections.map((d) => ({ id: d.trackId, box: d.box })) }));
}

export interface DemoRow {
  readonly videoId: string;
  readonly frames: number;
  readonly framesOk: number;
  readonly tracks: number;
  readonly groundTruthTracks: number;
  readonly idf1: number;
  readonly mota: number;
  readonly idSwitches: number;
  readonly ownerChanges: number;
  readonly workers: readonly string[];
  readonly failoverSeconds?: number;
}

/** Scores one video against its ground truth. Pure. */
export function scoreVideo(
  videoId: string,
  results: readonly FrameResultItem[],
  groundTruth: readonly MotFrame[],
  o: { ownerChanges: number; killAtMs?: number; killedWorker?: string },
): DemoRow {
  const mot = evaluateMot(groundTruth, predictionsOf(results));
  const workers = [...new Set([...results].sort((a, b) => a.frame - b.frame).map((r) => r.worker))];
  const fo = o.killAtMs !== undefined && o.killedWorker ? failoverSeconds(results, o.killAtMs, o.killedWorker) : undefined;
  return {
    videoId,
    frames: results.reduce((n, r) => n + (r.throughFrame !== undefined ? r.throughFrame - r.frame + 1 : 1), 0),
    framesOk: results.filter((r) => r.status === 'ok').length,
    tracks: new Set(results.flatMap((r) => r.detections.map((d) => d.trackId))).size,
    groundTruthTracks: new Set(groundTruth.flatMap((f) => f.objects.map((x) => x.id))).size,
    idf1: mot.idf1,
    mota: mot.mota,
    idSwitches: mot.idSwitches,
    ownerChanges: o.ownerChanges,
    workers,
    ...(fo !== undefined ? { failoverSeconds: fo } : {}),
  };
}

/** The summary table the demo prints. Pure. */
export function summaryTable(rows: readonly DemoRow[]): string[] {
  return table(
    ['video', 'frames', 'ok', 'tracks (truth)', 'IDF1', 'MOTA', 'ID switches', 'owner changes', 'failover'],
    rows.map((r) => [
      r.videoId,
      r.frames,
      r.framesOk,
      `${r.tracks} (${r.groundTruthTracks})`,
      r.idf1.toFixed(3),
      r.mota.toFixed(3),
      r.idSwitches,
      r.ownerChanges,
      r.failoverSeconds !== undefined ? `${r.failoverSeconds.toFixed(1)} s` : '-',
    ]),
  );
}
