/**
 * The soak's report: per video, what became of each uploaded, never-uploaded, stray and
 * duplicated frame, latency from upload to commit, tracking against ground truth; then
 * totals, the printed table and the JSON. Also the tracking baseline (the same frames in
 * order through one in-process VisionProcessor).
 */
import type { LocalStack } from '../../local/stack.ts';
import { failoverSeconds } from '../../cli/demo-lib.ts';
import { evaluateMot, type MotFrame } from '../../gpu-worker/vision/eval/mot.ts';
import { createVisionProcessor, visionOptionsFromTunables } from '../../gpu-worker/vision/index.ts';
import { gapFrames, statusCounts, type VideoLeft } from '../harness/collect.ts';
import type { Kill } from '../harness/watch.ts';
import { percentile } from '../support.ts';
import type { SyntheticVideo } from '../workload.ts';
import type { SoakOptions } from '../soak.ts';
import type { SoakPlan } from './plan.ts';

/** `video:frame` keys. */
export const frameId = (videoId: string, frame: number): string => `${videoId}:${frame}`;

/** A latency's p50 / p99 / max; NaN when empty. */
export function spread(values: readonly number[]): { p50: number; p99: number; max: number } {
  return { p50: percentile(values, 50), p99: percentile(values, 99), max: values.length ? Math.max(...values) : Number.NaN };
}

/** One video's outcome, as the report and the JSON show it. */
export function videoReport(opts: SoakOptions, plan: SoakPlan, video: SyntheticVideo, left: VideoLeft, putDoneMs: ReadonlyMap<string, number>, kill: Kill | undefined) {
  const { videoId, records: results, summary } = left;
  const byFrame = new Map(results.map((r) => [r.frame, r]));
  const putFrames = plan.uploads.filter((u) => u.videoId === videoId && putDoneMs.has(frameId(videoId, u.frame))).map((u) => u.frame);
  const lost = plan.lost.get(videoId)!;
  const gaps = gapFrames(results);
  const latency = (status: string) => results.filter((r) => String(r.status) === status && putDoneMs.has(frameId(videoId, r.frame))).map((r) => r.committedAtMs - putDoneMs.get(frameId(videoId, r.frame))!);
  const okLatency = latency('ok');
  const lateLatency = latency('late');

  // Tracking: ground truth of uploaded frames vs. ok + late detections (trackId 0 left out).
  const gtFrames = new Set(putFrames);
  const gt: MotFrame[] = video.groundTruth.filter((g) => gtFrames.has(g.frame)).map((g) => ({ frame: g.frame, objects: g.objects.map((o) => ({ id: o.id, box: o.box })) }));
  let lateUnassociated = 0;
  const predictions = (withLate: boolean): MotFrame[] =>
    results
      .filter((r) => String(r.status) === 'ok' || (withLate && String(r.status) === 'late'))
      .map((r) => ({
        frame: r.frame,
        objects: r.detections
          .filter((d) => {
            if (d.trackId !== 0) return true;
            if (withLate) lateUnassociated++;
            return false;
          })
          .map((d) => ({ id: d.trackId, box: d.box })),
      }));
  const mot = evaluateMot(gt, predictions(true));
  const motOk = evaluateMot(
    gt.filter((g) => String(byFrame.get(g.frame)?.status) === 'ok'),
    predictions(false),
  );
  const fo = kill ? failoverSeconds(results, kill.atMs, kill.workerId) : undefined;
  return {
    videoId,
    planned: opts.frames,
    uploaded: putFrames.length,
    neverUploaded: lost.length,
    strays: plan.uploads.filter((u) => u.videoId === videoId && u.stray).map((u) => ({ frame: u.frame, aheadBy: u.stray!.aheadBy, status: byFrame.get(u.frame)?.status ?? 'none' })),
    duplicated: plan.uploads.filter((u) => u.videoId === videoId && u.duplicateAfterMs !== undefined).length,
    records: results.length,
    status: statusCounts(results),
    existsButGap: [...left.inS3].filter((f) => gaps.has(f)).sort((a, b) => a - b),
    uploadedNoRecord: putFrames.filter((f) => !byFrame.has(f) && !gaps.has(f)),
    neverUploadedNotGap: lost.filter((f) => !gaps.has(f)).map((f) => `${f}:${byFrame.get(f)?.status ?? 'none'}`),
    unexpectedFrames: results.filter((r) => r.frame < 1 || r.frame > opts.frames).map((r) => r.frame),
    summary: summary
      ? {
          status: summary.status,
          framesOk: summary.framesOk,
          framesLate: summary.framesLate,
          framesFailed: summary.framesFailed,
          framesGap: summary.framesGap,
          firstFrame: summary.firstFrame,
          lastFrame: summary.lastFrame,
          endFrame: summary.endFrame,
          ownerChanges: summary.ownerChanges,
        }
      : null,
    latencyOkMs: spread(okLatency),
    latencyLateMs: { p50: percentile(lateLatency, 50), p99: percentile(lateLatency, 99) },
    okLatency,
    lateLatency,
    tracking: {
      idf1: mot.idf1,
      mota: mot.mota,
      idSwitches: mot.idSwitches,
      idSwitchesOkOnly: motOk.idSwitches,
      groundTruthTracks: new Set(gt.flatMap((g) => g.objects.map((o) => o.id))).size,
      predictedTracks: new Set(results.flatMap((r) => r.detections.map((d) => d.trackId)).filter((x) => x !== 0)).size,
      lateDetectionsWithoutTrack: lateUnassociated,
    },
    workers: [...new Set([...results].sort((a, b) => a.frame - b.frame).map((r) => r.worker))],
    failoverSeconds: fo ?? null,
  };
}

export type VideoReport = ReturnType<typeof videoReport>;

/** Totals over the videos. */
export function totalsOf(perVideo: readonly VideoReport[]) {
  const sum = (f: (v: VideoReport) => number) => perVideo.reduce((n, v) => n + f(v), 0);
  return {
    planned: sum((v) => v.planned),
    uploaded: sum((v) => v.uploaded),
    neverUploaded: sum((v) => v.neverUploaded),
    records: sum((v) => v.records),
    ok: sum((v) => v.status.ok),
    late: sum((v) => v.status.late),
    gap: sum((v) => v.status.gap),
    failed: sum((v) => v.status.failed),
    other: sum((v) => v.status.other),
    existsButGap: sum((v) => v.existsButGap.length),
    uploadedNoRecord: sum((v) => v.uploadedNoRecord.length),
    neverUploadedNotGap: sum((v) => v.neverUploadedNotGap.length),
    unexpectedFrames: sum((v) => v.unexpectedFrames.length),
    idSwitches: sum((v) => v.tracking.idSwitches),
    idSwitchesOkOnly: sum((v) => v.tracking.idSwitchesOkOnly),
    complete: perVideo.filter((v) => v.summary?.status === 'complete').length,
  };
}

/**
 * Tracking on the same clips without the pipeline: the frames that were uploaded, in
 * order, through one in-process VisionProcessor with the workers' settings. What the
 * tracker itself does on these clips, to set the soak's ID switches against.
 */
export async function trackingBaseline(
  tunables: LocalStack['tunables'],
  videos: readonly SyntheticVideo[],
  videoIds: readonly string[],
  uploaded: ReadonlyMap<string, number>,
): Promise<{ videoId: string; idf1: number; idSwitches: number; frames: number }[]> {
  const processor = createVisionProcessor({ ...visionOptionsFromTunables(tunables), preferCuda: false });
  await processor.start();
  try {
    const rows = [];
    for (const [i, videoId] of videoIds.entries()) {
      const frames = [...videos[i]!.images.entries()]
        .filter(([f]) => uploaded.has(frameId(videoId, f)))
        .sort((a, b) => a[0] - b[0])
        .map(([frame, image]) => ({ videoId, frame, image }));
      processor.openVideo(videoId, undefined);
      const outcomes = await processor.process(frames);
      processor.closeVideo(videoId);
      const predictions: MotFrame[] = frames.map((f, k) => {
        const o = outcomes[k]!;
        return { frame: f.frame, objects: o.status === 'ok' ? o.detections.map((d) => ({ id: d.trackId, box: d.box })) : [] };
      });
      const keep = new Set(frames.map((f) => f.frame));
      const gt = videos[i]!.groundTruth.filter((g) => keep.has(g.frame)).map((g) => ({ frame: g.frame, objects: g.objects.map((o) => ({ id: o.id, box: o.box })) }));
      const mot = evaluateMot(gt, predictions);
      rows.push({ videoId, idf1: mot.idf1, idSwitches: mot.idSwitches, frames: frames.length });
    }
    return rows;
  } finally {
    await processor.stop();
  }
}
