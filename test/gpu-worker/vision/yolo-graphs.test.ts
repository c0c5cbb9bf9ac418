/**
 * Real Ultralytics YOLO graphs (random weights, `../shared/models/`, see its README)
 * through the unchanged VisionProcessor: metadata-driven loading (640 input, 80 class
 * names), letterboxing, `[N, 84, 8400]` decoding, NMS, tracking and batching. Their
 * scores are ~1e-5..1.6e-4, so thresholds near 1e-4 push real numbers of boxes through.
 * The graphs are AGPL fixtures that stay outside the repository: where the folder is
 * absent, these tests are skipped with a message saying so.
 */
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { tunablesFromEnv } from '../../../core/config.ts';
import { createVisionProcessor, visionOptionsFromTunables, type VisionProcessor } from '../../../gpu-worker/vision/index.ts';
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
