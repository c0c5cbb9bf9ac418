/**
 * Late frames: how often does a frame that arrives after the tracker moved past it
 * get the right track IDs from its neighbours?
 *
 * Per synthetic clip: 10% of the frames (chosen by a seeded draw) are held back.
 * The other 90% go in order through the real VisionProcessor (`process`, demo ONNX
 * model, CPU), and their committed detections are kept per frame. The held-back
 * frames then arrive one at a time in a seeded random order, each through
 * `processLate` with its nearest committed neighbours, below and above, as the
 * worker gives them: a late frame committed earlier is a neighbour too.
 *
 * "Right track ID": each predicted track ID of the in-order frames is mapped to the
 * ground-truth object it is IoU-matched with (>= 0.5, Hungarian per frame, as
 * eval/mot.ts matches) most often. A late detection is right when it is IoU-matched
 * to a ground-truth object in its frame and its trackId maps to that object. The
 * share is right / all late detections: unassociated (trackId 0) detections and
 * detections matching no ground truth count against it.
 *
 * Run: npx node bench/late-frames.ts
 * Writes bench/results/late-frames.json.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Detection, FrameInput, LateFrameInput, NeighbourFrame } from '../core/ports.ts';
import { assign } from '../gpu-worker/vision/assignment.ts';
import { evaluateMot } from '../gpu-worker/vision/eval/mot.ts';
import { createVisionProcessor, type VisionProcessor } from '../gpu-worker/vision/index.ts';
import { DEFAULT_LATE_MIN_IOU } from '../gpu-worker/vision/late-association.ts';
import { iou } from '../gpu-worker/vision/postprocess.ts';
import { generateClip, type GroundTruthFrame } from '../gpu-worker/vision/synthetic/generate.ts';
import { rng } from '../core/random.ts';

/** IoU at or above which a detection and a ground-truth object are the same object (as in eval/mot.ts). */
const GT_MATCH_IOU = 0.5;

export interface ClipSpec {
  readonly seed: number;
  readonly crossings: boolean;
}

export interface LateFramesOptions {
  readonly clips: readonly ClipSpec[];
  /** Frames per clip. */
  readonly frames: number;
  /** Moving objects per clip. */
  readonly objects: number;
  /** Share of each clip's frames delivered late (default 0.1). */
  readonly lateShare?: number;
}

export interface LateFramesCounts {
  /** Detections returned for late frames. */
  readonly lateDetections: number;
  /** ... whose trackId maps to the ground-truth object they overlap. */
  readonly correct: number;
  /** ... with trackId 0 (matched no neighbouring track). */
  readonly unassociated: number;
  /** ... with a non-zero trackId that maps to another object, or to none. */
  readonly wrongId: number;
  /** ... overlapping no ground-truth object (false positives of the detector). */
  readonly noGroundTruth: number;
  /** Ground-truth objects in the late frames, and how many of them no late detection matched. */
  readonly groundTruthObjects: number;
  readonly missedObjects: number;
}

export interface ClipResult extends LateFramesCounts {
  readonly seed: number;
  readonly crossings: boolean;
  readonly lateFrames: number[];
  /** Late detections that are right / late detections. */
  readonly share: number;
  /** Right / late detections that overlap a ground-truth object: the association alone, without detector misfires. */
  readonly associationShare: number;
  /** Tracking quality of the in-order 90%, for context. */
  readonly inOrder: { readonly idf1: number; readonly mota: number; readonly idSwitches: number };
}

export interface LateFramesResult {
  readonly clips: ClipResult[];
  readonly total: LateFramesCounts & { readonly share: number; readonly associationShare: number; readonly lateFrames: number };
  readonly provider: string;
}

function shares(c: LateFramesCounts): { share: number; associationShare: number } {
  const onGroundTruth = c.lateDetections - c.noGroundTruth;
  return { share: c.lateDetections > 0 ? c.correct / c.lateDetections : 1, associationShare: onGroundTruth > 0 ? c.correct / onGroundTruth : 1 };
}


function shuffled<T>(items: readonly T[], rand: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** One-to-one IoU matching of boxes to ground-truth objects (Hungarian, IoU >= 0.5): detection index -> GT id. */
function matchToGroundTruth(detections: readonly Detection[], gt: GroundTruthFrame | undefined): Map<number, number> {
  const objects = gt?.objects ?? [];
  const cost = detections.map((d) => objects.map((o) => 1 - iou(d.box, o.box)));
  const out = new Map<number, number>();
  for (const [di, oi] of assign(cost, 1 - GT_MATCH_IOU, objects.length).matches) out.set(di, objects[oi].id);
  return out;
}

/** Nearest committed frame strictly below / above `frame`. */
function neighbours(committed: ReadonlyMap<number, readonly Detection[]>, frame: number): { before?: NeighbourFrame; after?: NeighbourFrame } {
  let below: number | undefined;
  let above: number | undefined;
  for (const f of committed.keys()) {
    if (f < frame && (below === undefined || f > below)) below = f;
    if (f > frame && (above === undefined || f < above)) above = f;
  }
  return {
    before: below === undefined ? undefined : { frame: below, detections: committed.get(below)! },
    after: above === undefined ? undefined : { frame: above, detections: committed.get(above)! },
  };
}

async function runClip(processor: VisionProcessor, spec: ClipSpec, options: LateFramesOptions): Promise<ClipResult> {
  const clip = await generateClip({ seed: spec.seed, frames: options.frames, objects: options.objects, crossings: spec.crossings });
  const videoId = `late-${spec.seed}-${spec.crossings ? 'x' : 'p'}`;
  const rand = rng(spec.seed * 7919 + (spec.crossings ? 1 : 0));
  const lateCount = Math.max(1, Math.round(clip.frames.length * (options.lateShare ?? 0.1)));
  // Which frames are late, and the order they arrive in: both seeded.
  const arrival = shuffled(clip.frames, rand).slice(0, lateCount);
  const lateSet = new Set(arrival.map((f) => f.frame));
  const gtBy = new Map(clip.groundTruth.map((g) => [g.frame, g]));

  // In order: the 90%, through the live tracker.
  const live: FrameInput[] = clip.frames.filter((f) => !lateSet.has(f.frame)).map((f) => ({ videoId, frame: f.frame, image: f.image }));
  processor.openVideo(videoId, undefined);
  const liveOutcomes = await processor.process(live);
  processor.closeVideo(videoId);
  const committed = new Map<number, readonly Detection[]>();
  live.forEach((f, i) => {
    const o = liveOutcomes[i];
    if (o.status !== 'ok') throw new Error(`frame ${f.frame} failed: ${o.reason}`);
    committed.set(f.frame, o.detections);
  });

  // Predicted ID -> the ground-truth object it overlaps most often on the in-order frames.
  const pairCounts = new Map<number, Map<number, number>>();
  for (const [frame, detections] of committed) {
    for (const [di, gtId] of matchToGroundTruth(detections, gtBy.get(frame))) {
      const row = pairCounts.get(detections[di].trackId) ?? new Map<number, number>();
      row.set(gtId, (row.get(gtId) ?? 0) + 1);
      pairCounts.set(detections[di].trackId, row);
    }
  }
  const gtOfTrack = new Map<number, number>();
  for (const [trackId, row] of pairCounts) {
    // Ties go to the smaller ground-truth id, so the mapping is deterministic.
    const [best] = [...row].sort((a, b) => b[1] - a[1] || a[0] - b[0]);
    gtOfTrack.set(trackId, best[0]);
  }
  const inOrder = evaluateMot(
    clip.groundTruth.filter((g) => !lateSet.has(g.frame)),
    [...committed].map(([frame, ds]) => ({ frame, objects: ds.map((d) => ({ id: d.trackId, box: d.box })) })),
    GT_MATCH_IOU,
  );

  // Late: one at a time, in arrival order, each with its nearest committed neighbours.
  const counts = { lateDetections: 0, correct: 0, unassociated: 0, wrongId: 0, noGroundTruth: 0, groundTruthObjects: 0, missedObjects: 0 };
  for (const f of arrival) {
    const input: LateFrameInput = { videoId, frame: f.frame, image: f.image, ...neighbours(committed, f.frame) };
    const [outcome] = await processor.processLate([input]);
    if (outcome.status !== 'ok') throw new Error(`late frame ${f.frame} failed: ${outcome.reason}`);
    committed.set(f.frame, outcome.detections);
    const matched = matchToGroundTruth(outcome.detections, gtBy.get(f.frame));
    counts.lateDetections += outcome.detections.length;
    counts.groundTruthObjects += gtBy.get(f.frame)?.objects.length ?? 0;
    counts.missedObjects += (gtBy.get(f.frame)?.objects.length ?? 0) - matched.size;
    outcome.detections.forEach((d, i) => {
      const gtId = matched.get(i);
      if (gtId === undefined) counts.noGroundTruth++;
      else if (d.trackId === 0) counts.unassociated++;
      else if (gtOfTrack.get(d.trackId) === gtId) counts.correct++;
      else counts.wrongId++;
    });
  }
  return {
    seed: spec.seed,
    crossings: spec.crossings,
    lateFrames: [...lateSet].sort((a, b) => a - b),
    ...counts,
    ...shares(counts),
    inOrder: { idf1: inOrder.idf1, mota: inOrder.mota, idSwitches: inOrder.idSwitches },
  };
}

/** Runs the experiment on every clip with one processor (demo model, CPU). */
export async function runLateFrames(options: LateFramesOptions): Promise<LateFramesResult> {
  const processor = createVisionProcessor({ batchSize: 8, maxBatchWaitMs: 5, scoreThreshold: 0.25, preferCuda: false });
  await processor.start();
  try {
    const clips: ClipResult[] = [];
    for (const spec of options.clips) clips.push(await runClip(processor, spec, options));
    const sum = (k: keyof LateFramesCounts) => clips.reduce((a, c) => a + c[k], 0);
    const total = {
      lateFrames: clips.reduce((a, c) => a + c.lateFrames.length, 0),
      lateDetections: sum('lateDetections'),
      correct: sum('correct'),
      unassociated: sum('unassociated'),
      wrongId: sum('wrongId'),
      noGroundTruth: sum('noGroundTruth'),
      groundTruthObjects: sum('groundTruthObjects'),
      missedObjects: sum('missedObjects'),
    };
    return { clips, total: { ...total, ...shares(total) }, provider: processor.provider };
  } finally {
    await processor.stop();
  }
}

/** The figure for the issue: 4 seeds, each without and with crossings. */
export const BENCH_OPTIONS: LateFramesOptions = {
  clips: [1, 2, 3, 4].flatMap((seed) => [
    { seed, crossings: false },
    { seed, crossings: true },
  ]),
  frames: 120,
  objects: 6,
  lateShare: 0.1,
};

async function main(): Promise<void> {
  const t0 = performance.now();
  const result = await runLateFrames(BENCH_OPTIONS);
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `late frames: ${BENCH_OPTIONS.clips.length} clips x ${BENCH_OPTIONS.frames} frames, ${BENCH_OPTIONS.objects} objects, ${(BENCH_OPTIONS.lateShare ?? 0.1) * 100}% late, minIou ${DEFAULT_LATE_MIN_IOU}, provider ${result.provider}`,
  );
  console.log('seed | crossings | late frames | late dets | right | id 0 | wrong id | no GT | share  | assoc. | in-order IDF1 | IDSW');
  for (const c of [...result.clips, { ...result.total, seed: 'all', crossings: '', lateFrames: { length: result.total.lateFrames }, inOrder: undefined }]) {
    console.log(
      [
        String(c.seed).padStart(4),
        String(c.crossings).padEnd(9),
        String(c.lateFrames.length).padStart(11),
        String(c.lateDetections).padStart(9),
        String(c.correct).padStart(5),
        String(c.unassociated).padStart(4),
        String(c.wrongId).padStart(8),
        String(c.noGroundTruth).padStart(5),
        c.share.toFixed(4),
        c.associationShare.toFixed(4),
        (c.inOrder ? c.inOrder.idf1.toFixed(4) : '').padStart(13),
        c.inOrder ? String(c.inOrder.idSwitches) : '',
      ].join(' | '),
    );
  }
  console.log(
    `overall share ${result.total.share.toFixed(4)} (target >= 0.95); association share ${result.total.associationShare.toFixed(4)}; ${seconds.toFixed(1)} s`,
  );
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results', 'late-frames.json');
  await mkdir(dirname(out), { recursive: true });
  await writeFile(
    out,
    `${JSON.stringify(
      {
        bench: 'late-frames',
        measuredAt: new Date().toISOString(),
        machine: { cores: availableParallelism(), cpu: cpus()[0]?.model, node: process.version },
        options: { ...BENCH_OPTIONS, minIou: DEFAULT_LATE_MIN_IOU, gtMatchIou: GT_MATCH_IOU },
        provider: result.provider,
        seconds,
        total: result.total,
        clips: result.clips,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`wrote ${out}`);
}

// Runs only when executed directly, so the test can import runLateFrames.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main();
