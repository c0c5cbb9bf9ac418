/**
 * Builds the project's own demo detector: a tiny hand-designed ONNX graph (no
 * training, no download) that finds solid, saturated-colour rectangles on a dark
 * background and reports them in the Ultralytics v8/11 export format
 * `[B, 4 + C, N]` (cx, cy, w, h in input pixels, then C class scores, no objectness).
 *
 * The math, on the letterboxed input x in [0,1]^{3 x S x S}:
 *
 * 1. Colour match maps. For class c with target colour t_c in {0,1}^3 let
 *    s_c = 2 t_c - 1 (+1 where the channel should be on, -1 where off) and
 *    n_c = |t_c| (channels on). For any colour v in [0,1]^3, s_c . v <= n_c with
 *    equality only at v = t_c, and every other saturated colour, black, the
 *    114-grey letterbox padding and white give s_c . v <= n_c - 1. So
 *      M_c = sigmoid(k (s_c . x - (n_c - 0.5)))
 *    is ~1 on the class colour and ~0 elsewhere: a 1x1 Conv + Sigmoid. On an
 *    anti-aliased edge pixel half covered by the colour, s_c . x ~ n_c - 0.5 and
 *    M_c ~ 0.5, so sums of M_c measure covered area, not just pixel counts.
 *
 * 2. Cells. One anchor-free cell per grid point (8i, 8j) (stride 8, so 40 x 40
 *    cells at S = 320). Every rectangle with sides >= 8 model pixels contains at
 *    least one grid point. The class score of a cell is M_c at its grid point: a
 *    1x1 depthwise Conv with stride 8 (a subsample).
 *
 * 3. Extents. Inside a solid rectangle covering pixel columns [a, b), the number
 *    of class pixels in the row of a grid point x = 8j, counted over a one-sided
 *    window of K pixels, is
 *      L = sum_{t=0}^{K-1} M_c(y, x - t) = x - a + 1   (to the left, x included)
 *      R = sum_{t=0}^{K-1} M_c(y, x + t) = b - x       (to the right, x included)
 *    provided the rectangle is narrower than K and no other rectangle of the same
 *    colour lies within K pixels on that row. Each is a depthwise Conv with a
 *    1 x K kernel of ones, stride 8, padded K-1 on one side, so only the 1600
 *    grid points are computed. Then a = x - L + 1, b = x + R, i.e.
 *      cx = x + (R - L + 1) / 2,   w = L + R - 1,
 *    and the same vertically with K x 1 kernels (U, D) for cy and h.
 *
 * 4. Classes are mutually exclusive per pixel, so one box per cell is the
 *    score-weighted mean of the per-class extents: L = sum_c p_c L_c with
 *    p_c = score_c / (sum_c score_c + eps); background cells get score ~0 and are
 *    dropped by the confidence threshold.
 *
 * Every cell inside an object predicts the same box with the same score, and
 * class-aware NMS keeps one. The model's batch dimension is symbolic, so frames
 * of several videos go through one call.
 *
 * Run `npm run model` to write `.local/models/demo-detector.onnx` and its
 * sidecar `demo-detector.onnx.json`.
 */
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';

const { onnx } = onnxProto;

/** Class names in output order, with the colour each one matches (0/1 per RGB channel). */
export const DEMO_CLASSES: readonly { readonly name: string; readonly rgb: readonly [number, number, number] }[] = [
  { name: 'red', rgb: [1, 0, 0] },
  { name: 'green', rgb: [0, 1, 0] },
  { name: 'blue', rgb: [0, 0, 1] },
  { name: 'yellow', rgb: [1, 1, 0] },
  { name: 'cyan', rgb: [0, 1, 1] },
  { name: 'magenta', rgb: [1, 0, 1] },
];

/** Model input side in pixels (square). */
export const DEMO_INPUT_SIZE = 320;
/** Cell stride in model pixels. */
export const DEMO_STRIDE = 8;
/** Extent window: largest object side, in model pixels, the demo model measures exactly. */
export const DEMO_MAX_OBJECT_PX = 160;
/** Sigmoid gain of the colour match; large enough that a full match gives ~1 - 5e-5. */
const MATCH_GAIN = 20;

/** Sidecar metadata written next to a model (`x.onnx.json`). */
export interface ModelSidecar {
  readonly inputWidth: number;
  readonly inputHeight: number;
  readonly classNames: readonly string[];
  /** Output layout; only Ultralytics-style `yolov8` is supported. */
  readonly format: 'yolov8';
}

export const DEMO_SIDECAR: ModelSidecar = Object.freeze({
  inputWidth: DEMO_INPUT_SIZE,
  inputHeight: DEMO_INPUT_SIZE,
  classNames: DEMO_CLASSES.map((c) => c.name),
  format: 'yolov8',
});

const FLOAT = onnx.TensorProto.DataType.FLOAT;
const INT64 = onnx.TensorProto.DataType.INT64;

function floatTensor(name: string, dims: number[], values: ArrayLike<number>): OnnxTypes.ITensorProto {
  return { name, dims, dataType: FLOAT, rawData: new Uint8Array(Float32Array.from(values).buffer) };
}

function int64Tensor(name: string, values: number[]): OnnxTypes.ITensorProto {
  return { name, dims: [values.length], dataType: INT64, int64Data: values };
}

function ints(name: string, values: number[]): OnnxTypes.IAttributeProto {
  return { name, type: onnx.AttributeProto.AttributeType.INTS, ints: values };
}

function int(name: string, value: number): OnnxTypes.IAttributeProto {
  return { name, type: onnx.AttributeProto.AttributeType.INT, i: value };
}

function node(opType: string, inputs: string[], output: string, attribute: OnnxTypes.IAttributeProto[] = []): OnnxTypes.INodeProto {
  return { opType, input: inputs, output: [output], name: output, attribute };
}

function tensorValueInfo(name: string, dims: (number | string)[]): OnnxTypes.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType: FLOAT,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

export interface BuildDemoModelOptions {
  /** Fixed batch size; default symbolic ('batch'), which lets frames of several videos share a call. */
  readonly batch?: number;
}

/** Serialises the demo detector to ONNX bytes (opset 13, dynamic batch unless `batch` is given). */
export function buildDemoModelBytes(options: BuildDemoModelOptions = {}): Uint8Array {
  const batchDim: number | string = options.batch ?? 'batch';
  const classCount = DEMO_CLASSES.length;
  const size = DEMO_INPUT_SIZE;
  const stride = DEMO_STRIDE;
  const windowPx = DEMO_MAX_OBJECT_PX;
  const cells = Math.floor((size - 1) / stride) + 1;

  const matchWeights: number[] = [];
  const matchBias: number[] = [];
  for (const c of DEMO_CLASSES) {
    const on = c.rgb.reduce((a, b) => a + b, 0);
    for (const v of c.rgb) matchWeights.push(MATCH_GAIN * (2 * v - 1));
    matchBias.push(-MATCH_GAIN * (on - 0.5));
  }
  const gridX: number[] = [];
  const gridY: number[] = [];
  for (let i = 0; i < cells; i++) {
    for (let j = 0; j < cells; j++) {
      gridX.push(j * stride);
      gridY.push(i * stride);
    }
  }
  const ones = (n: number) => new Array<number>(n).fill(1);
  const initializer: OnnxTypes.ITensorProto[] = [
    floatTensor('match_w', [classCount, 3, 1, 1], matchWeights),
    floatTensor('match_b', [classCount], matchBias),
    floatTensor('sample_w', [classCount, 1, 1, 1], ones(classCount)),
    floatTensor('row_w', [classCount, 1, 1, windowPx], ones(classCount * windowPx)),
    floatTensor('col_w', [classCount, 1, windowPx, 1], ones(classCount * windowPx)),
    floatTensor('grid_x', [1, 1, cells, cells], gridX),
    floatTensor('grid_y', [1, 1, cells, cells], gridY),
    floatTensor('eps', [], [1e-3]),
    floatTensor('one', [], [1]),
    floatTensor('half', [], [0.5]),
    int64Tensor('class_axis', [1]),
    int64Tensor('out_shape', [0, 4 + classCount, -1]),
  ];
  const depthwise = (kernel: number[], pads: number[]) => [
    int('group', classCount),
    ints('kernel_shape', kernel),
    ints('strides', [stride, stride]),
    ints('pads', pads),
  ];
  const k1 = windowPx - 1;
  const nodes: OnnxTypes.INodeProto[] = [
    node('Conv', ['images', 'match_w', 'match_b'], 'match_logit', [ints('kernel_shape', [1, 1])]),
    node('Sigmoid', ['match_logit'], 'mask'),
    node('Conv', ['mask', 'sample_w'], 'score', depthwise([1, 1], [0, 0, 0, 0])),
    // Pads are [top, left, bottom, right].
    node('Conv', ['mask', 'row_w'], 'left_c', depthwise([1, windowPx], [0, k1, 0, 0])),
    node('Conv', ['mask', 'row_w'], 'right_c', depthwise([1, windowPx], [0, 0, 0, k1])),
    node('Conv', ['mask', 'col_w'], 'up_c', depthwise([windowPx, 1], [k1, 0, 0, 0])),
    node('Conv', ['mask', 'col_w'], 'down_c', depthwise([windowPx, 1], [0, 0, k1, 0])),
    node('ReduceSum', ['score', 'class_axis'], 'score_sum', [int('keepdims', 1)]),
    node('Add', ['score_sum', 'eps'], 'score_norm'),
    node('Div', ['score', 'score_norm'], 'class_weight'),
  ];
  for (const side of ['left', 'right', 'up', 'down']) {
    nodes.push(node('Mul', [`${side}_c`, 'class_weight'], `${side}_w`));
    nodes.push(node('ReduceSum', [`${side}_w`, 'class_axis'], side, [int('keepdims', 1)]));
  }
  // w = L + R - 1; cx = x + (R - L + 1) / 2; likewise h, cy from U, D.
  nodes.push(
    node('Add', ['left', 'right'], 'lr'),
    node('Sub', ['lr', 'one'], 'w'),
    node('Sub', ['right', 'left'], 'r_minus_l'),
    node('Add', ['r_minus_l', 'one'], 'dx2'),
    node('Mul', ['dx2', 'half'], 'dx'),
    node('Add', ['grid_x', 'dx'], 'cx'),
    node('Add', ['up', 'down'], 'ud'),
    node('Sub', ['ud', 'one'], 'h'),
    node('Sub', ['down', 'up'], 'd_minus_u'),
    node('Add', ['d_minus_u', 'one'], 'dy2'),
    node('Mul', ['dy2', 'half'], 'dy'),
    node('Add', ['grid_y', 'dy'], 'cy'),
    node('Concat', ['cx', 'cy', 'w', 'h', 'score'], 'grid_out', [int('axis', 1)]),
    node('Reshape', ['grid_out', 'out_shape'], 'output0'),
  );
  const model: OnnxTypes.IModelProto = {
    irVersion: 7,
    producerName: 'frame-affinity demo-model',
    opsetImport: [{ domain: '', version: 13 }],
    metadataProps: [
      // Same keys and formatting as an Ultralytics export, so one metadata reader serves both.
      { key: 'names', value: `{${DEMO_CLASSES.map((c, i) => `${i}: '${c.name}'`).join(', ')}}` },
      { key: 'imgsz', value: `[${size}, ${size}]` },
      { key: 'stride', value: String(stride) },
    ],
    graph: {
      name: 'demo-detector',
      node: nodes,
      initializer,
      input: [tensorValueInfo('images', [batchDim, 3, size, size])],
      output: [tensorValueInfo('output0', [batchDim, 4 + classCount, cells * cells])],
    },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
}

/** Where `npm run model` and `ensureDemoModel()` put the demo model by default. */
export const DEFAULT_DEMO_MODEL_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../../.local/models');

/**
 * Returns the path of the demo model in `dir`, building it (and its sidecar) first
 * when missing. Writes go through a temporary name so concurrent callers never
 * read a half-written file.
 */
export async function ensureDemoModel(dir: string = DEFAULT_DEMO_MODEL_DIR): Promise<string> {
  const modelPath = join(dir, 'demo-detector.onnx');
  const sidecarPath = `${modelPath}.json`;
  if (existsSync(modelPath) && existsSync(sidecarPath)) return modelPath;
  await mkdir(dir, { recursive: true });
  const tmpSuffix = `.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  await writeFile(sidecarPath + tmpSuffix, `${JSON.stringify(DEMO_SIDECAR, null, 2)}\n`);
  await rename(sidecarPath + tmpSuffix, sidecarPath);
  await writeFile(modelPath + tmpSuffix, buildDemoModelBytes());
  await rename(modelPath + tmpSuffix, modelPath);
  return modelPath;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2] ? resolve(process.argv[2]) : DEFAULT_DEMO_MODEL_DIR;
  const modelPath = join(dir, 'demo-detector.onnx');
  await mkdir(dir, { recursive: true });
  await writeFile(`${modelPath}.json`, `${JSON.stringify(DEMO_SIDECAR, null, 2)}\n`);
  await writeFile(modelPath, buildDemoModelBytes());
  console.log(`wrote ${modelPath} (+ .json sidecar)`);
}
