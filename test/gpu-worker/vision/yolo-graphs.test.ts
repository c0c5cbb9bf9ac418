/**
 * Real Ultralytics YOLO graphs (random weights, `../shared/models/`, see its README)
 * through the unchanged VisionProcessor: metadata-driven loading (640 input, 80 class
 * names), letterboxing, `[N, 84, 8400]` decoding, NMS, tracking and batching. Their
 * scores are ~1e-5..1.6e-4, so thresholds near 1e-4 push real numbers of boxes through.
 * The graphs are AGPL fixtures that stay outside the repository: where the folder is
 * absent, these tests are skipped with a message saying so.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tunablesFromEnv } from '../../../core/config.ts';
import { createVisionProcessor, visionOptionsFromTunables, type VisionProcessor } from '../../../gpu-worker/vision/index.ts';
import { loadModel } from '../../../gpu-worker/vision/model.ts';
import { generateClip } from '../../../gpu-worker/vision/synthetic/generate.ts';
import { RANDOM_WEIGHT_PROCESSOR_OPTIONS as RANDOM_WEIGHTS, SHARED_MODELS_DIR as MODELS_DIR, YOLO11N_PATH, YOLOV8N_PATH } from '../../../harness/yolo-fixtures.ts';

const GRAPHS = [YOLOV8N_PATH, YOLO11N_PATH];
const present = GRAPHS.every((g) => existsSync(g));
if (!present) console.warn(`SKIPPED test/gpu-worker/vision/yolo-graphs.test.ts: the YOLO fixtures are not at ${MODELS_DIR} (see shared/models/README.md)`);

describe.skipIf(!present).each(GRAPHS)('%s through the VisionProcessor', (graph) => {
  let processor: VisionProcessor | undefined;
  afterAll(async () => {
    await processor?.stop();
  });

  it('loads from its metadata, batches 4 frames in one call, and reports tracked boxes in source pixels', async () => {
    // Prepare
    // A wait far longer than any decode: the batch goes when it is full, not when a loaded machine's slow decode lets the timer win.
    processor = createVisionProcessor({ modelUri: graph, batchSize: 4, maxBatchWaitMs: 60_000, preferCuda: false, ...RANDOM_WEIGHTS });
    await processor.start();
    const clip = await generateClip({ seed: 3, frames: 4 });
    processor.openVideo('yolo', undefined);
    // Act
    const outcomes = await processor.process(clip.frames.map((f) => ({ videoId: 'yolo', frame: f.frame, image: f.image })));
    // Assess
    expect(processor.provider).toBe('cpu');
    expect(processor.batchSizes).toEqual([4]);
    expect(outcomes.map((o) => o.status)).toEqual(['ok', 'ok', 'ok', 'ok']);
    const detections = outcomes.flatMap((o) => (o.status === 'ok' ? o.detections : []));
    expect(detections.length).toBeGreaterThan(0);
    for (const d of detections) {
      // COCO class names come from the graph's own metadata; boxes are mapped back to the 320x240 source.
      expect(typeof d.label).toBe('string');
      expect(d.label).not.toMatch(/^class/);
      expect(d.box[0]).toBeGreaterThanOrEqual(-1);
      expect(d.box[2]).toBeLessThanOrEqual(clip.width + 1);
      expect(d.box[3]).toBeLessThanOrEqual(clip.height + 1);
      expect(d.trackId).toBeGreaterThan(0);
    }
  });
});

describe.skipIf(!present)('tracker thresholds from the tunables', () => {
  it('tracks random-weight YOLOv8n boxes only with thresholds set on its score scale through the environment', async () => {
    // Prepare: the same decode threshold; ByteTrack's default tracker thresholds, then ones at the graph's scores.
    const clip = await generateClip({ seed: 3, frames: 3 });
    const detectionsWith = async (env: Record<string, string>) => {
      const p = createVisionProcessor({ ...visionOptionsFromTunables(tunablesFromEnv({ MODEL_URI: GRAPHS[0]!, INFERENCE_BATCH_SIZE: '1', DETECTION_SCORE_THRESHOLD: '0.0001', ...env })), preferCuda: false });
      await p.start();
      try {
        p.openVideo('v', undefined);
        const outcomes = await p.process(clip.frames.map((f) => ({ videoId: 'v', frame: f.frame, image: f.image })));
        return outcomes.flatMap((o) => (o.status === 'ok' ? o.detections : []));
      } finally {
        await p.stop();
      }
    };
    // Act
    const byDefault = await detectionsWith({});
    const tuned = await detectionsWith({ TRACK_HIGH_SCORE_THRESHOLD: '0.0001', TRACK_LOW_SCORE_THRESHOLD: '0.00005', NEW_TRACK_SCORE_THRESHOLD: '0.00012' });
    // Assess
    expect(byDefault).toEqual([]);
    expect(tuned.length).toBeGreaterThan(0);
  });
});

describe.skipIf(!present).each(GRAPHS)('%s: its settings, checked when it loads', (graph) => {
  const dir = mkdtempSync(join(tmpdir(), 'yolo-settings-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const load = async (o: { uri?: string; classesUri?: string }) => {
    const m = await loadModel({ uri: o.uri ?? graph, preferCuda: false, inferenceThreads: 1, ...(o.classesUri ? { classesUri: o.classesUri } : {}) });
    await m.session.release();
    return m.info;
  };

  it('takes its size and its 80 names from the export\'s metadata and runs rewritten for uint8 input; it is not the demo model', async () => {
    const info = await load({});
    expect(info).toMatchObject({ inputWidth: 640, inputHeight: 640, layout: 'uint8-nhwc', metadataSource: 'onnx-metadata', demoModel: false, dynamicBatch: true });
    expect(info.classNames).toHaveLength(80);
    // Built from the architecture's YAML without a dataset, the export names its classes '0'..'79'.
    expect(info.classNames.slice(0, 3)).toEqual(['0', '1', '2']);
    expect(info.classNamesSource).toMatch(/ONNX metadata/);
  });

  it('takes class names from a classes file, which wins over the metadata', async () => {
    const names = join(dir, 'names.txt');
    writeFileSync(names, Array.from({ length: 80 }, (_, i) => `thing-${i}`).join('\n'));
    const info = await load({ classesUri: names });
    expect(info.classNames[0]).toBe('thing-0');
    expect(info.classNames).toHaveLength(80);
    expect(info.classNamesSource).toBe(`the classes file ${names}`);
  });

  it('refuses a classes file whose count is not the output\'s class count, saying both counts and the file', async () => {
    const names = join(dir, 'three.txt');
    writeFileSync(names, 'person\ncar\ntruck\n');
    await expect(load({ classesUri: names })).rejects.toThrow(/84 channels, which is 80 classes .*the classes file .*three\.txt gives 3 class name\(s\); give exactly 80/);
  });

  it('refuses a declared input size the graph does not have, naming both sizes and where the wrong one came from', async () => {
    const copy = join(dir, 'copy.onnx');
    copyFileSync(graph, copy);
    writeFileSync(`${copy}.json`, JSON.stringify({ inputWidth: 320, inputHeight: 320 }));
    try {
      await expect(load({ uri: copy })).rejects.toThrow(/its sidecar .*copy\.onnx\.json says its input is 320x320 .*fixed at 640x640/);
    } finally {
      rmSync(copy);
      rmSync(`${copy}.json`);
    }
  });

  it('says a missing model or classes file does not exist', async () => {
    await expect(load({ uri: join(dir, 'nope.onnx') })).rejects.toThrow(/model .*nope\.onnx does not exist/);
    await expect(load({ classesUri: join(dir, 'nope.txt') })).rejects.toThrow(/class names .*nope\.txt do not exist/);
  });
});
