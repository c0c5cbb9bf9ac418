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
 *    M_c ~ 0.5, so M_c measures how much of a pixel the colour covers.
 *
 * 2. Cells. One anchor-free cell per grid point (8i, 8j) (stride 8, so 40 x 40
 *    cells at S = 320). Every rectangle with sides >= 8 model pixels contains at
 *    least one grid point. The class score of a cell is M_c at its grid point: a
 *    1x1 depthwise Conv with stride 8 (a subsample).
 *
 * 3. Extents, of the object as a whole. A partly hidden object is still one object:
 *    the square behind another one shows as an L, a U or two separate pieces, and a
 *    real detector reports one box for it, not one per piece. So a cell measures the
 *    extent of its class's pixels over a window around it, not along its own row:
 *    - Occupancy. P_c(y, x) = max of M_c over the rows of the blocks of 8 rows within
 *      24 blocks (192 >= K rows) of grid row y (MaxPools: 8 x 1 with stride 8 down to
 *      one row of blocks per grid row, then over the blocks, in two steps of 7 taps,
 *      the second dilated). P_c is ~1 in every column
 *      that the object occupies in any of its rows, whatever hides the rest of it;
 *      Q_c(y, x), the same over columns, marks the rows.
 *    - Edges. A column x' occupied with coverage p (an anti-aliased edge column has
 *      p < 1) that is the leftmost one has its left edge at x' + 1 - p, so
 *        a = BIG - max_{x' in [x - K + 1, x]} g(P) (BIG - x' - 1 + P)
 *        b = max_{x' in [x, x + K - 1]} g(P) (BIG + x' + P) - BIG
 *      (MaxPools: per block of 8 columns, then over the K / 8 + 1 blocks on that side), with the
 *      gate g(P) = clip(4 P, 0, 1): columns with no class pixel (P ~ 0) weigh nothing,
 *      and BIG (1000) is large enough that a column with g < 0.7 never beats an
 *      occupied one. Gaps inside the object (the occluder's columns) do not shorten
 *      it: only its outermost occupied columns count. Then, per class,
 *        L = clip(x - a + 1, 0, K),   R = clip(b - x, 0, K)
 *      (0 for a class with no pixel in the window), and
 *        cx = x + (R - L + 1) / 2,   w = L + R - 1,
 *      and the same vertically from Q_c for cy and h. Valid when the object's side is
 *      at most K and no other object of the same colour lies within K pixels of it (the
 *      synthetic clips give every object its own colour, up to 6 objects).
 *
 * 4. Classes are mutually exclusive per pixel, so one box per cell is the
 *    score-weighted mean of the per-class extents: L = sum_c p_c L_c with
 *    p_c = score_c / (sum_c score_c + eps); background cells get score ~0 and are
 *    dropped by the confidence threshold.
 *
 * Every cell inside an object, hidden in part or not, predicts the same box with the
 * same score, and class-aware NMS keeps one. The model's batch dimension is symbolic,
 * so frames of several videos go through one call.
 *
 * Run `npm run model` to write `.local/models/demo-detector.onnx` and its
 * sidecar `demo-detector.onnx.json`.
 */
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
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
/** Offset of the edge candidates (step 3): larger than the input side, so a column gated below 0.7 never wins. */
const EDGE_BIG = 1000;
/** Gate gain of the edge candidates: a column counts fully from a quarter covered. */
const EDGE_GATE_GAIN = 4;
/** Occupancy window (step 3) in blocks of 8: a first MaxPool over 2 * OCC_INNER_HALF + 1 blocks, then OCC_OUTER taps that far apart. */
const OCC_INNER_HALF = 3;
const OCC_OUTER = 7;

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
  const blocks = Math.ceil(windowPx / stride);
  const positions = Array.from({ length: size }, (_, i) => i);
  const initializer: OnnxTypes.ITensorProto[] = [
    floatTensor('match_w', [classCount, 3, 1, 1], matchWeights),
    floatTensor('match_b', [classCount], matchBias),
    floatTensor('sample_w', [classCount, 1, 1, 1], new Array<number>(classCount).fill(1)),
    floatTensor('grid_x', [1, 1, cells, cells], gridX),
    floatTensor('grid_y', [1, 1, cells, cells], gridY),
    // BIG - 1 - x' and BIG + x' per column (and row) position x', broadcast over batch, class and the other axis.
    floatTensor('before_x', [1, 1, 1, size], positions.map((x) => EDGE_BIG - 1 - x)),
    floatTensor('after_x', [1, 1, 1, size], positions.map((x) => EDGE_BIG + x)),
    floatTensor('before_y', [1, 1, size, 1], positions.map((y) => EDGE_BIG - 1 - y)),
    floatTensor('after_y', [1, 1, size, 1], positions.map((y) => EDGE_BIG + y)),
    floatTensor('gate_gain', [], [EDGE_GATE_GAIN]),
    floatTensor('big', [], [EDGE_BIG]),
    floatTensor('big_minus_one', [], [EDGE_BIG - 1]),
    floatTensor('zero', [], [0]),
    floatTensor('window', [], [windowPx]),
    floatTensor('eps', [], [1e-3]),
    floatTensor('one', [], [1]),
    floatTensor('half', [], [0.5]),
    int64Tensor('class_axis', [1]),
    int64Tensor('out_shape', [0, 4 + classCount, -1]),
  ];
  const pool = (kernel: number[], strides: number[], pads: number[], dilations: number[] = [1, 1]) => [
    ints('kernel_shape', kernel),
    ints('strides', strides),
    ints('pads', pads),
    ints('dilations', dilations),
  ];
  // A window of 2 * OCC_INNER_HALF + 1 blocks, then OCC_OUTER taps that far apart: +-(3 + 7 * 3) = +-24 blocks, at least K / 8 either side.
  const inner = 2 * OCC_INNER_HALF + 1;
  const reach = OCC_INNER_HALF + inner * ((OCC_OUTER - 1) / 2);
  if (reach < blocks) throw new Error(`demo model: occupancy window reaches ${reach} blocks, needs ${blocks}`);
  const outerPad = reach - OCC_INNER_HALF;
  // Pad's pads: [begin per axis..., end per axis...] over [B, C, H, W].
  initializer.push(int64Tensor('col_pads', [0, 0, outerPad, 0, 0, 0, outerPad, 0]), int64Tensor('row_pads', [0, 0, 0, outerPad, 0, 0, 0, outerPad]));
  const nodes: OnnxTypes.INodeProto[] = [
    node('Conv', ['images', 'match_w', 'match_b'], 'match_logit', [ints('kernel_shape', [1, 1])]),
    node('Sigmoid', ['match_logit'], 'mask'),
    node('Conv', ['mask', 'sample_w'], 'score', [int('group', classCount), ints('kernel_shape', [1, 1]), ints('strides', [stride, stride]), ints('pads', [0, 0, 0, 0])]),
    // Occupancy (pads are [top, left, bottom, right]): columns near each grid row [B, C, cells, S], rows near each grid column [B, C, S, cells].
    // Blocks of 8, then the max over +-24 blocks in two steps, the second dilated (7 + 7 taps instead of 49).
    node('MaxPool', ['mask'], 'col_blocks', pool([stride, 1], [stride, 1], [0, 0, 0, 0])),
    node('MaxPool', ['col_blocks'], 'col_near', pool([inner, 1], [1, 1], [OCC_INNER_HALF, 0, OCC_INNER_HALF, 0])),
    // onnxruntime wants pads smaller than the (undilated) kernel, so the dilated step pads with zeros first (every value here is >= 0),
    // and a Relu (the identity here) keeps its optimizer from folding the Pad back into the MaxPool's pads.
    node('Pad', ['col_near', 'col_pads', 'zero'], 'col_near_pad'),
    node('Relu', ['col_near_pad'], 'col_near_padded'),
    node('MaxPool', ['col_near_padded'], 'col_occ', pool([OCC_OUTER, 1], [1, 1], [0, 0, 0, 0], [inner, 1])),
    node('MaxPool', ['mask'], 'row_blocks', pool([1, stride], [1, stride], [0, 0, 0, 0])),
    node('MaxPool', ['row_blocks'], 'row_near', pool([1, inner], [1, 1], [0, OCC_INNER_HALF, 0, OCC_INNER_HALF])),
    node('Pad', ['row_near', 'row_pads', 'zero'], 'row_near_pad'),
    node('Relu', ['row_near_pad'], 'row_near_padded'),
    node('MaxPool', ['row_near_padded'], 'row_occ', pool([1, OCC_OUTER], [1, 1], [0, 0, 0, 0], [1, inner])),
  ];
  // Per side: the gated edge candidates at every column (row), their max per block of 8,
  // the max over the blocks that hold the K positions on that side of the grid point
  // (the left side's blocks reach 1 column further and the grid point's block 7 columns
  // the other way, which never wins: the grid point itself is occupied and beats them),
  // and the per-class extent L, R, U or D clipped to [0, K].
  const sides = [
    { side: 'left', occ: 'col_occ', pos: 'before_x', block: [1, stride], window: [1, blocks + 1], pads: [0, blocks, 0, 0], grid: 'grid_x', before: true },
    { side: 'right', occ: 'col_occ', pos: 'after_x', block: [1, stride], window: [1, blocks], pads: [0, 0, 0, blocks - 1], grid: 'grid_x', before: false },
    { side: 'up', occ: 'row_occ', pos: 'before_y', block: [stride, 1], window: [blocks + 1, 1], pads: [blocks, 0, 0, 0], grid: 'grid_y', before: true },
    { side: 'down', occ: 'row_occ', pos: 'after_y', block: [stride, 1], window: [blocks, 1], pads: [0, 0, blocks - 1, 0], grid: 'grid_y', before: false },
  ] as const;
  for (const o of ['col_occ', 'row_occ']) {
    nodes.push(node('Mul', [o, 'gate_gain'], `${o}_gain`), node('Clip', [`${o}_gain`, 'zero', 'one'], `${o}_gate`));
  }
  for (const s of sides) {
    const n = s.side;
    nodes.push(
      node('Add', [s.pos, s.occ], `${n}_value`),
      node('Mul', [`${n}_value`, `${s.occ}_gate`], `${n}_cand`),
      node('MaxPool', [`${n}_cand`], `${n}_blocks`, pool([...s.block], [...s.block], [0, 0, 0, 0])),
      node('MaxPool', [`${n}_blocks`], `${n}_max`, pool([...s.window], [1, 1], [...s.pads])),
    );
    if (s.before) {
      // L = x - a + 1 with a = BIG - max: x + 1 - BIG + max = (x - (BIG - 1)) + max.
      nodes.push(node('Sub', [s.grid, 'big_minus_one'], `${n}_base`), node('Add', [`${n}_base`, `${n}_max`], `${n}_raw`));
    } else {
      // R = b - x with b = max - BIG.
      nodes.push(node('Sub', [`${n}_max`, 'big'], `${n}_edge`), node('Sub', [`${n}_edge`, s.grid], `${n}_raw`));
    }
    nodes.push(node('Clip', [`${n}_raw`, 'zero', 'window'], `${n}_c`));
  }
  nodes.push(
    node('ReduceSum', ['score', 'class_axis'], 'score_sum', [int('keepdims', 1)]),
    node('Add', ['score_sum', 'eps'], 'score_norm'),
    node('Div', ['score', 'score_norm'], 'class_weight'),
  );
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
 * when missing or when the file there is another build of it (the graph changed since
 * it was written). Writes go through a temporary name so concurrent callers never
 * read a half-written file.
 */
export async function ensureDemoModel(dir: string = DEFAULT_DEMO_MODEL_DIR): Promise<string> {
  const modelPath = join(dir, 'demo-detector.onnx');
  const sidecarPath = `${modelPath}.json`;
  const bytes = buildDemoModelBytes();
  if (existsSync(modelPath) && existsSync(sidecarPath) && Buffer.from(bytes).equals(await readFile(modelPath))) return modelPath;
  await mkdir(dir, { recursive: true });
  const tmpSuffix = `.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`;
  await writeFile(sidecarPath + tmpSuffix, `${JSON.stringify(DEMO_SIDECAR, null, 2)}\n`);
  await rename(sidecarPath + tmpSuffix, sidecarPath);
  await writeFile(modelPath + tmpSuffix, bytes);
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
