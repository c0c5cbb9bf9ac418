/**
 * The real Ultralytics YOLO graphs with random weights in `../shared/models/` (see its
 * README), and the thresholds that make them useful: one place for the benchmarks and
 * the tests that run them.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_TUNABLES, type Tunables } from '../core/config.ts';
import { visionOptionsFromTunables } from '../gpu-worker/vision/index.ts';

/** Outside the repository: the graphs are AGPL fixtures, absent on some machines. */
export const SHARED_MODELS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'shared', 'models');
export const YOLOV8N_PATH = join(SHARED_MODELS_DIR, 'yolov8n-random.onnx');
export const YOLO11N_PATH = join(SHARED_MODELS_DIR, 'yolo11n-random.onnx');

/**
 * Random weights score ~1e-5..1.6e-4: decoding and tracking at these thresholds sends
 * ~20 boxes per frame through NMS and the tracker, as a trained model on a busy scene
 * would (ByteTrack's defaults are 0.1 / 0.5 / 0.6).
 */
export const RANDOM_WEIGHT_THRESHOLDS = Object.freeze({
  detectionScoreThreshold: 1e-4,
  trackHighScoreThreshold: 1e-4,
  trackLowScoreThreshold: 5e-5,
  newTrackScoreThreshold: 1.2e-4,
} satisfies Partial<Tunables>);

/** The same thresholds as processor options. */
export const RANDOM_WEIGHT_PROCESSOR_OPTIONS = (({ scoreThreshold, tracker }) => ({ scoreThreshold, tracker }))(
  visionOptionsFromTunables({ ...DEFAULT_TUNABLES, ...RANDOM_WEIGHT_THRESHOLDS }),
);
