import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrameInput, FrameOutcome } from '../../core/ports.ts';
import { buildDemoModelBytes, DEMO_SIDECAR, ensureDemoModel } from '../../gpu-worker/vision/demo-model/build-model.ts';
import { evaluateMot, type MotFrame } from '../../gpu-worker/vision/eval/mot.ts';
import { createVisionProcessor, type VisionProcessor } from '../../gpu-worker/vision/index.ts';
import { generateClip, type Clip } from '../../gpu-worker/vision/synthetic/generate.ts';

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

  it('refuses frames of a video that is not open, without throwing', async () => {
    const outcomes = await processor.process(inputs('never-opened', plainClip, 0, 1));
    expect(outcomes).toEqual([{ status: 'failed', reason: 'video-not-open' }]);
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
