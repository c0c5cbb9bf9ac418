import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Detection, FrameInput, FrameOutcome, NeighbourFrame } from '../../../core/ports.ts';
import { buildDemoModelBytes, DEMO_SIDECAR, ensureDemoModel } from '../../../gpu-worker/vision/demo-model/build-model.ts';
import { evaluateMot, type MotFrame } from '../../../gpu-worker/vision/eval/mot.ts';
import { createVisionProcessor, type VisionProcessor } from '../../../gpu-worker/vision/index.ts';
import { iou } from '../../../gpu-worker/vision/postprocess.ts';
import { PREPARED_AHEAD_MAX_FRAMES } from '../../../gpu-worker/vision/prepared-ahead.ts';
import { generateClip, type Clip } from '../../../gpu-worker/vision/synthetic/generate.ts';

const opts = { batchSize: 8, maxBatchWaitMs: 5, scoreThreshold: 0.25 };

function inputs(videoId: string, clip: Clip, from = 0, to = clip.frames.length): FrameInput[] {
  return clip.frames.slice(from, to).map((f) => ({ videoId, frame: f.frame, image: f.image }));
}

function toMot(frames: readonly FrameInput[], outcomes: readonly FrameOutcome[]): MotFrame[] {
  return outcomes.map((o, i) => ({
    frame: frames[i].frame,
    objects: o.status === 'ok' ? o.detections.map((d) => ({ id: d.trackId, box: d.box })) : [],
  }));
}

/**
 * Rounds boxes to 1/1000 px: onnxruntime may pick different kernels for
 * different batch sizes, which moves boxes by ~1e-5 px. Track ids, labels and
 * scores must match exactly.
 */
function rounded(outcomes: readonly FrameOutcome[]): unknown[] {
  return outcomes.map((o) =>
    o.status === 'ok' ? { ...o, detections: o.detections.map((d) => ({ ...d, box: d.box.map((v) => Math.round(v * 1000) / 1000) })) } : o,
  );
}

let processor: VisionProcessor;
const logLines: (string | object)[] = [];
let plainClip: Clip;
let crossingClip: Clip;

beforeAll(async () => {
  processor = createVisionProcessor({ ...opts, logger: (l) => logLines.push(l) });
  [plainClip, crossingClip] = await Promise.all([
    generateClip({ seed: 7, frames: 50, objects: 4 }),
    generateClip({ seed: 11, frames: 50, objects: 6, crossings: true }),
    processor.start(),
  ]);
});

afterAll(async () => {
  await processor.stop();
});

describe('vision processor with the demo model', () => {
  it('logs one line saying which provider runs and why', () => {
    expect(logLines).toHaveLength(1);
    expect(logLines[0]).toMatchObject({ provider: processor.provider, reason: processor.providerReason });
    expect(['cpu', 'cuda']).toContain(processor.provider);
    expect(processor.description).toContain(`provider=${processor.provider}`);
  });

  it('tracks a clip without crossings with IDF1 >= 0.95 and no id switches', async () => {
    // Prepare
    const frames = inputs('plain', plainClip);
    processor.openVideo('plain', undefined);
    // Act
    const outcomes = await processor.process(frames);
    // Assess
    const r = evaluateMot(plainClip.groundTruth, toMot(frames, outcomes));
    console.log(`no crossings: IDF1=${r.idf1.toFixed(4)} MOTA=${r.mota.toFixed(4)} IDSW=${r.idSwitches} meanIoU=${r.meanIou.toFixed(4)}`);
    expect(outcomes.every((o) => o.status === 'ok')).toBe(true);
    expect(r.idf1).toBeGreaterThanOrEqual(0.95);
    expect(r.idSwitches).toBe(0);
    expect(r.meanIou).toBeGreaterThan(0.9);
    processor.closeVideo('plain');
  });

  it('tracks a clip with crossings and occlusions reasonably', async () => {
    const frames = inputs('cross', crossingClip);
    processor.openVideo('cross', undefined);
    const outcomes = await processor.process(frames);
    const r = evaluateMot(crossingClip.groundTruth, toMot(frames, outcomes));
    console.log(`crossings: IDF1=${r.idf1.toFixed(4)} MOTA=${r.mota.toFixed(4)} IDSW=${r.idSwitches} FP=${r.falsePositives} FN=${r.falseNegatives}`);
    expect(r.mota).toBeGreaterThanOrEqual(0.8);
    expect(r.idf1).toBeGreaterThanOrEqual(0.75);
    processor.closeVideo('cross');
  });

  it('batches frames of several videos together without changing any video result', async () => {
    // Prepare: three videos, each alone through a batch-1 processor as the reference.
    const clips = [plainClip, crossingClip, await generateClip({ seed: 3, frames: 20, objects: 3 })];
    const solo = createVisionProcessor({ ...opts, batchSize: 1 });
    await solo.start();
    const expected: FrameOutcome[][] = [];
    for (const [v, clip] of clips.entries()) {
      solo.openVideo(`v${v}`, undefined);
      expected.push(await solo.process(inputs(`v${v}`, clip, 0, 20)));
    }
    await solo.stop();
    // Act: all three interleaved in one call.
    const mixed: FrameInput[] = [];
    for (let f = 0; f < 20; f++) for (const [v, clip] of clips.entries()) mixed.push(inputs(`v${v}`, clip, f, f + 1)[0]);
    for (let v = 0; v < 3; v++) processor.openVideo(`v${v}`, undefined);
    const before = processor.batchSizes.length;
    const outcomes = await processor.process(mixed);
    // Assess
    for (let v = 0; v < 3; v++) expect(rounded(outcomes.filter((_, i) => i % 3 === v))).toEqual(rounded(expected[v]));
    expect(Math.max(...processor.batchSizes.slice(before))).toBeGreaterThan(1);
    for (let v = 0; v < 3; v++) processor.closeVideo(`v${v}`);
  });

  it('fails a corrupt frame alone and treats it as a gap for the tracker', async () => {
    // Prepare: frame 10 of video "bad" is garbage; the reference run skips frame 10.
    const frames = inputs('bad', plainClip, 0, 25);
    const corrupted = frames.map((f) => (f.frame === 10 ? { ...f, image: plainClip.frames[10].image.slice(0, 100) } : f));
    const other = inputs('other', crossingClip, 0, 25);
    processor.openVideo('gap', undefined);
    const reference = await processor.process(frames.filter((f) => f.frame !== 10).map((f) => ({ ...f, videoId: 'gap' })));
    processor.openVideo('other-ref', undefined);
    const otherRef = await processor.process(other.map((f) => ({ ...f, videoId: 'other-ref' })));
    processor.openVideo('bad', undefined);
    processor.openVideo('other', undefined);
    // Act
    const outcomes = await processor.process([...corrupted, ...other]);
    // Assess
    expect(outcomes[10]).toMatchObject({ status: 'failed', reason: 'corrupt-image' });
    expect(rounded(outcomes.slice(0, 25).filter((_, i) => i !== 10))).toEqual(rounded(reference));
    expect(rounded(outcomes.slice(25))).toEqual(rounded(otherRef));
    for (const v of ['gap', 'other-ref', 'bad', 'other']) processor.closeVideo(v);
  });

  it('continues identically after snapshot, close and restore (failover)', async () => {
    // Prepare: the uninterrupted run.
    const frames = inputs('whole', crossingClip);
    processor.openVideo('whole', undefined);
    const expected = await processor.process(frames);
    // Act: first 23 frames, checkpoint, drop, restore in a fresh processor, rest.
    processor.openVideo('split', undefined);
    const first = await processor.process(inputs('split', crossingClip, 0, 23));
    const checkpoint = processor.snapshot('split');
    processor.closeVideo('split');
    const other = createVisionProcessor({ ...opts, batchSize: 4 });
    await other.start();
    other.openVideo('split', checkpoint);
    const rest = await other.process(inputs('split', crossingClip, 23));
    await other.stop();
    // Assess
    expect(rounded([...first, ...rest])).toEqual(rounded(expected));
    processor.closeVideo('whole');
  });

  it('uses frames decoded ahead, with the same results, and reports a corrupt one when its frame is processed', async () => {
    // Prepare: the reference run decodes as it goes.
    const frames = inputs('decoded-here', plainClip, 0, PREPARED_AHEAD_MAX_FRAMES);
    processor.openVideo('decoded-here', undefined);
    const reference = await processor.process(frames);
    const ahead = frames.map((f) => ({ ...f, videoId: 'decoded-ahead' }));
    ahead[5] = { ...ahead[5]!, image: plainClip.frames[5].image.slice(0, 100) };
    processor.openVideo('decoded-ahead', undefined);
    const before = processor.preparedAhead;

    // Act
    for (const f of ahead) processor.prepareAhead!(f.image);
    const outcomes = await processor.process(ahead);

    // Assess: every frame's decode came from ahead; frame 5 is a gap for the tracker.
    const after = processor.preparedAhead;
    expect(after.started - before.started).toBe(PREPARED_AHEAD_MAX_FRAMES);
    expect(after.used - before.used).toBe(PREPARED_AHEAD_MAX_FRAMES);
    expect(outcomes[5]).toMatchObject({ status: 'failed', reason: 'corrupt-image' });
    expect(rounded(outcomes.slice(0, 5))).toEqual(rounded(reference.slice(0, 5)));
    for (const v of ['decoded-here', 'decoded-ahead']) processor.closeVideo(v);
  });

  it('uses frames detected ahead (hinted in any order), with the same tracks, and reports a corrupt one in its round (decision 42)', async () => {
    // Prepare: a processor that detects ahead; the reference is the shared one's run
    const ahead = createVisionProcessor({ ...opts, detectAheadFrames: 64 });
    await ahead.start();
    const frames = inputs('hinted', plainClip, 0, 20);
    processor.openVideo('hinted', undefined);
    const reference = await processor.process(frames);
    processor.closeVideo('hinted');
    const hinted = frames.map((f) => ({ ...f }));
    hinted[7] = { ...hinted[7]!, image: plainClip.frames[7].image.slice(0, 100) };
    ahead.openVideo('hinted', undefined);

    // Act: hints arrive newest first (detection must not touch the tracker); frame 3's bytes are fetched afresh
    for (const f of [...hinted].reverse()) ahead.detectAhead!(f);
    // Every hint has started (at most two batches run at once; the rest wait their turn).
    for (let i = 0; i < 600 && ahead.detectedAhead.started < 20; i++) await new Promise((r) => setTimeout(r, 50));
    const fresh = hinted.map((f, i) => (i === 3 ? { ...f, image: f.image.slice() } : f));
    const first = await ahead.process(fresh.slice(0, 10));
    const rest = await ahead.process(fresh.slice(10));
    await ahead.stop();

    // Assess: 19 of 20 from ahead (not the re-fetched frame 3); frame 7 failed in its round; the others' tracks unchanged
    expect(ahead.detectedAhead).toEqual({ started: 20, used: 19 });
    const outcomes = [...first, ...rest];
    expect(outcomes[7]).toMatchObject({ status: 'failed', reason: 'corrupt-image' });
    expect(rounded(outcomes.slice(0, 7))).toEqual(rounded(reference.slice(0, 7)));
    expect(outcomes.filter((o) => o.status === 'ok')).toHaveLength(19);
  });

  it('ignores a detect-ahead hint before the model is loaded, or with detectAheadFrames 0', async () => {
    const unstarted = createVisionProcessor({ ...opts, detectAheadFrames: 64 });
    unstarted.detectAhead!(inputs('x', plainClip, 0, 1)[0]!);
    expect(unstarted.detectedAhead).toEqual({ started: 0, used: 0 });
    processor.detectAhead!(inputs('x', plainClip, 0, 1)[0]!);
    expect(processor.detectedAhead).toEqual({ started: 0, used: 0 });
  });

  it('ignores a decode-ahead hint before the model is loaded', async () => {
    const unstarted = createVisionProcessor(opts);
    unstarted.prepareAhead!(plainClip.frames[0].image);
    expect(unstarted.preparedAhead).toEqual({ started: 0, used: 0 });
  });

  it('refuses frames of a video that is not open, without throwing', async () => {
    const outcomes = await processor.process(inputs('never-opened', plainClip, 0, 1));
    expect(outcomes).toEqual([{ status: 'failed', reason: 'video-not-open' }]);
  });
});

function detectionsOf(outcome: FrameOutcome): readonly Detection[] {
  if (outcome.status !== 'ok') throw new Error(`expected ok, got ${JSON.stringify(outcome)}`);
  return outcome.detections;
}

function neighbourOf(frames: readonly FrameInput[], outcomes: readonly FrameOutcome[], frame: number): NeighbourFrame {
  const i = frames.findIndex((f) => f.frame === frame);
  return { frame, detections: detectionsOf(outcomes[i]) };
}

describe('late frames (processLate)', () => {
  it('gives a gapped frame the IDs of its neighbours and leaves the tracker untouched', async () => {
    // Prepare: the uninterrupted run as reference; then the same clip with frame 15 held back.
    const all = inputs('late-ref', plainClip, 0, 30);
    processor.openVideo('late-ref', undefined);
    const reference = await processor.process(all);
    const live = inputs('late', plainClip, 0, 30).filter((f) => f.frame !== 15);
    processor.openVideo('late', undefined);
    const outcomes = await processor.process(live);
    const before = processor.snapshot('late');
    // Act: frame 15 arrives after the tracker passed frame 29.
    const [late] = await processor.processLate([
      { ...inputs('late', plainClip, 15, 16)[0], before: neighbourOf(live, outcomes, 14), after: neighbourOf(live, outcomes, 16) },
    ]);
    // Assess: state unchanged; every detection has the ID the uninterrupted run gave that object.
    expect(processor.snapshot('late')).toBe(before);
    const got = detectionsOf(late);
    const expected = detectionsOf(reference[15]);
    expect(expected.length).toBeGreaterThanOrEqual(2);
    expect(got).toHaveLength(expected.length);
    for (const d of got) {
      const match = expected.find((e) => iou(e.box, d.box) > 0.9);
      expect(match?.trackId).toBe(d.trackId);
      expect(d.trackId).toBeGreaterThan(0);
    }
    processor.closeVideo('late-ref');
    processor.closeVideo('late');
  });

  it('shares an inference batch with live frames, for a video that is not open', async () => {
    // Prepare: batch 2 with a long wait, so the batch runs only when both frames are in it.
    const shared = createVisionProcessor({ ...opts, batchSize: 2, maxBatchWaitMs: 5_000 });
    await shared.start();
    processor.openVideo('ref', undefined);
    const [ref0] = await processor.process(inputs('ref', plainClip, 0, 1));
    processor.closeVideo('ref');
    shared.openVideo('live', undefined);
    // Act: a live frame of one video and a late frame of a released video, at once.
    const [[live0], [late1]] = await Promise.all([
      shared.process(inputs('live', plainClip, 0, 1)),
      shared.processLate([{ ...inputs('released', plainClip, 1, 2)[0], before: { frame: 0, detections: detectionsOf(ref0) } }]),
    ]);
    // Assess
    expect(shared.batchSizes).toEqual([2]);
    expect(rounded([live0])).toEqual(rounded([ref0]));
    const ids = detectionsOf(late1).map((d) => d.trackId);
    expect(ids.length).toBe(detectionsOf(ref0).length);
    expect([...ids].sort((a, b) => a - b)).toEqual(detectionsOf(ref0).map((d) => d.trackId).sort((a, b) => a - b));
    expect(() => shared.snapshot('released')).toThrow(/not open/);
    await shared.stop();
  });

  it('fails a corrupt late frame alone, without throwing', async () => {
    const [good, bad] = inputs('late-bad', plainClip, 3, 5);
    const outcomes = await processor.processLate([good, { ...bad, image: bad.image.slice(0, 100) }]);
    expect(outcomes[0].status).toBe('ok');
    // No neighbours: every detection is unassociated.
    expect(detectionsOf(outcomes[0]).every((d) => d.trackId === 0)).toBe(true);
    expect(outcomes[1]).toMatchObject({ status: 'failed', reason: 'corrupt-image' });
  });
});

describe('model variants', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'vision-model-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('ensureDemoModel builds the model and sidecar once and returns the path', async () => {
    const path = await ensureDemoModel(dir);
    expect(path).toBe(join(dir, 'demo-detector.onnx'));
    expect(await ensureDemoModel(dir)).toBe(path);
  });

  it('runs a fixed batch-1 model one frame per call with the same results', async () => {
    // Prepare
    const path = join(dir, 'fixed1.onnx');
    await writeFile(path, buildDemoModelBytes({ batch: 1 }));
    await writeFile(`${path}.json`, JSON.stringify(DEMO_SIDECAR));
    const fixed = createVisionProcessor({ ...opts, modelUri: path });
    await fixed.start();
    const frames = inputs('f', plainClip, 0, 12);
    processor.openVideo('f', undefined);
    fixed.openVideo('f', undefined);
    // Act
    const [a, b] = [await processor.process(frames), await fixed.process(frames)];
    // Assess
    expect(rounded(b)).toEqual(rounded(a));
    expect(fixed.batchSizes.some((n) => n > 1)).toBe(true);
    expect(fixed.description).toContain('batch=1');
    await fixed.stop();
    processor.closeVideo('f');
  });
});
