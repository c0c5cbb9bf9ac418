/**
 * Rewrites a YOLO-format detector at load time so that the work around the model runs
 * inside the graph (on the GPU with the CUDA provider) instead of on the CPU in JS
 * (docs/decisions.md 32):
 *
 * - **prepended**: the graph takes the letterboxed frame as sharp decodes it, uint8 RGB
 *   `[B, H, W, 3]` (NHWC), and converts it itself: `Transpose` to NCHW, `Cast` to float,
 *   `Div` by 255. The CPU hands over 1 byte per value instead of 4, and no longer runs
 *   the per-pixel conversion loop. `Div` (not `Mul` by 1/255) because float32 division
 *   is correctly rounded, like the `i / 255` table of the CPU path, so the model sees
 *   bit-identical floats (test/gpu-worker/vision/graph-rewrite.test.ts checks all 256);
 * - **appended**: the best class per anchor, `[B, 4 + C, N]` -> `[B, 6, N]` (cx, cy, w,
 *   h, best score, class index as float): `ReduceMax` and `ArgMax` over the class axis.
 *   ArgMax returns the first index of the maximum, the tie rule of `decodeYolo`, so
 *   decoding gives the same detections, while the output that crosses back to the CPU
 *   shrinks 14-fold for 80 classes (2.8 MB -> 0.2 MB per frame at 8400 anchors) and the
 *   80 x 8400 scan leaves the main thread. A second output, the original output's shape
 *   (`Shape`, 3 int64), keeps the load-time check of the `[B, 4 + C, N]` layout.
 *
 * The letterbox itself (resize + grey borders) stays in sharp: every frame of a batch
 * must reach the graph at one size, and a uint8 resize and border in libvips cost far
 * less than the float conversion did (decision 32; bench/pipeline-cpu.ts).
 *
 * A model that does not fit (input not float `[B, 3, H, W]`, several inputs or outputs,
 * an opset below 13) is not rewritten: {@link rewriteForUint8Input} says why, and the
 * caller runs the model as it is with the CPU preprocessing.
 */
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';

const { onnx } = onnxProto;

/** Name of the rewritten graph's input: uint8 `[B, H, W, 3]`. */
export const UINT8_INPUT_NAME = 'frameaffinity_images_u8';
/** Name of the rewritten graph's output: float32 `[B, 6, N]` (cx, cy, w, h, score, class). */
export const BEST_CLASS_OUTPUT_NAME = 'frameaffinity_best_class';
/** Name of the output carrying the original output's shape, int64 `[3]`. */
export const RAW_SHAPE_OUTPUT_NAME = 'frameaffinity_raw_output_shape';
/** Rows of {@link BEST_CLASS_OUTPUT_NAME} per anchor. */
export const BEST_CLASS_ROWS = 6;
/** Prefix of every name the rewrite adds; a model already using it is refused. */
const PREFIX = 'frameaffinity_';
/** Lowest default-domain opset the added nodes are written for (Slice with inputs, ArgMax select_last_index). */
const MIN_OPSET = 13;
/** From opset 18 ReduceMax takes its axes as an input instead of an attribute. */
const REDUCE_AXES_INPUT_OPSET = 18;

/** The rewritten model, or why the model was left as it is. */
export type RewriteOutcome =
  | {
      readonly rewritten: true;
      readonly bytes: Uint8Array;
      /** The original graph's input and output names, now internal. */
      readonly originalInputName: string;
      readonly originalOutputName: string;
      /** The input size the uint8 input was given (declared, or the graph's static one). */
      readonly inputWidth: number;
      readonly inputHeight: number;
    }
  | { readonly rewritten: false; readonly reason: string };

const FLOAT = onnx.TensorProto.DataType.FLOAT;
const UINT8 = onnx.TensorProto.DataType.UINT8;
const INT64 = onnx.TensorProto.DataType.INT64;

function attrInt(name: string, value: number): OnnxTypes.IAttributeProto {
  return { name, type: onnx.AttributeProto.AttributeType.INT, i: value };
}

function attrInts(name: string, values: number[]): OnnxTypes.IAttributeProto {
  return { name, type: onnx.AttributeProto.AttributeType.INTS, ints: values };
}

function node(opType: string, inputs: string[], output: string, attribute: OnnxTypes.IAttributeProto[] = []): OnnxTypes.INodeProto {
  return { opType, input: inputs, output: [output], name: output, attribute };
}

function int64s(name: string, values: (number | bigint)[]): OnnxTypes.ITensorProto {
  const data = BigInt64Array.from(values.map((v) => BigInt(v)));
  return { name, dims: [values.length], dataType: INT64, rawData: new Uint8Array(data.buffer) };
}

function floatScalar(name: string, value: number): OnnxTypes.ITensorProto {
  return { name, dims: [], dataType: FLOAT, rawData: new Uint8Array(Float32Array.of(value).buffer) };
}

/** A dimension as ONNX writes it: a number, a symbolic name, or undefined when unknown. */
function dimOf(d: OnnxTypes.TensorShapeProto.IDimension | undefined): number | string | undefined {
  if (!d) return undefined;
  if (d.dimValue !== undefined && d.dimValue !== null && String(d.dimValue) !== '0') return Number(d.dimValue);
  return d.dimParam ? d.dimParam : undefined;
}

function dimProto(d: number | string | undefined): OnnxTypes.TensorShapeProto.IDimension {
  return typeof d === 'number' ? { dimValue: d } : d ? { dimParam: d } : {};
}

/** Every name a graph already uses (values, nodes, initializers), so added names cannot collide. */
function namesIn(graph: OnnxTypes.IGraphProto): string[] {
  const names: string[] = [];
  for (const v of [...(graph.input ?? []), ...(graph.output ?? []), ...(graph.valueInfo ?? [])]) names.push(v.name ?? '');
  for (const t of graph.initializer ?? []) names.push(t.name ?? '');
  for (const n of graph.node ?? []) names.push(n.name ?? '', ...(n.input ?? []), ...(n.output ?? []));
  return names;
}

/**
 * Returns the model with the uint8 input and the best-class output described in this
 * file's header, for a model whose input is `declared` (from its sidecar or metadata;
 * absent = the graph's own static input size); or, for a model this cannot be done to,
 * why not. Never throws for a model it cannot parse: that is a reason too, and the
 * caller decides.
 */
export function rewriteForUint8Input(bytes: Uint8Array, declared?: { readonly inputWidth: number; readonly inputHeight: number }): RewriteOutcome {
  let model: OnnxTypes.ModelProto;
  try {
    model = onnx.ModelProto.decode(bytes);
  } catch (error) {
    return { rewritten: false, reason: `not a parseable ONNX model (${error instanceof Error ? error.message : String(error)})` };
  }
  const graph = model.graph;
  if (!graph) return { rewritten: false, reason: 'the model has no graph' };
  const opset = (model.opsetImport ?? []).find((o) => !o.domain || o.domain === 'ai.onnx');
  const opsetVersion = opset ? Number(opset.version) : 0;
  if (opsetVersion < MIN_OPSET) return { rewritten: false, reason: `default-domain opset ${opsetVersion} is below ${MIN_OPSET}` };
  if (namesIn(graph).some((n) => n.startsWith(PREFIX))) return { rewritten: false, reason: `the graph already uses names starting with ${PREFIX}` };

  // Older exports list initializers among the inputs too; the image input is the one that is not one.
  const initializers = new Set((graph.initializer ?? []).map((t) => t.name));
  const inputs = (graph.input ?? []).filter((i) => !initializers.has(i.name));
  if (inputs.length !== 1) return { rewritten: false, reason: `the graph has ${inputs.length} inputs, not one` };
  if ((graph.output ?? []).length !== 1) return { rewritten: false, reason: `the graph has ${(graph.output ?? []).length} outputs, not one` };
  const input = inputs[0]!;
  const output = graph.output![0]!;
  const tensorType = input.type?.tensorType;
  if (tensorType?.elemType !== FLOAT) return { rewritten: false, reason: `input ${input.name} is not float32` };
  const dims = (tensorType.shape?.dim ?? []).map(dimOf);
  if (dims.length !== 4) return { rewritten: false, reason: `input ${input.name} has rank ${dims.length}, not 4 (NCHW)` };
  if (dims[1] !== 3) return { rewritten: false, reason: `input ${input.name} has ${String(dims[1])} channels, not 3` };
  const inputHeight = declared?.inputHeight ?? (typeof dims[2] === 'number' ? dims[2] : undefined);
  const inputWidth = declared?.inputWidth ?? (typeof dims[3] === 'number' ? dims[3] : undefined);
  if (!inputWidth || !inputHeight) return { rewritten: false, reason: `input ${input.name} has no static size and none is declared` };
  if ((typeof dims[2] === 'number' && dims[2] !== inputHeight) || (typeof dims[3] === 'number' && dims[3] !== inputWidth)) {
    return { rewritten: false, reason: `input ${input.name} is ${String(dims[2])}x${String(dims[3])}, not the ${inputHeight}x${inputWidth} the model declares` };
  }
  const inputName = input.name!;
  const outputName = output.name!;
  const batchDim = dims[0] ?? 'batch';

  const n = (suffix: string) => `${PREFIX}${suffix}`;
  const pre: OnnxTypes.INodeProto[] = [
    // Transpose first: moving uint8 is a quarter of the bytes of moving float32.
    node('Transpose', [UINT8_INPUT_NAME], n('nchw_u8'), [attrInts('perm', [0, 3, 1, 2])]),
    node('Cast', [n('nchw_u8')], n('nchw_float'), [attrInt('to', FLOAT)]),
    node('Div', [n('nchw_float'), n('255')], inputName),
  ];
  const reduceMax =
    opsetVersion >= REDUCE_AXES_INPUT_OPSET
      ? node('ReduceMax', [n('scores'), n('axis1')], n('best_score'), [attrInt('keepdims', 1)])
      : node('ReduceMax', [n('scores')], n('best_score'), [attrInts('axes', [1]), attrInt('keepdims', 1)]);
  const post: OnnxTypes.INodeProto[] = [
    node('Slice', [outputName, n('zero'), n('four'), n('axis1')], n('boxes')),
    node('Slice', [outputName, n('four'), n('int64_max'), n('axis1')], n('scores')),
    reduceMax,
    node('ArgMax', [n('scores')], n('best_class_i64'), [attrInt('axis', 1), attrInt('keepdims', 1), attrInt('select_last_index', 0)]),
    node('Cast', [n('best_class_i64')], n('best_class_f32'), [attrInt('to', FLOAT)]),
    node('Concat', [n('boxes'), n('best_score'), n('best_class_f32')], BEST_CLASS_OUTPUT_NAME, [attrInt('axis', 1)]),
    node('Shape', [outputName], RAW_SHAPE_OUTPUT_NAME),
  ];
  const anchors = dimOf(output.type?.tensorType?.shape?.dim?.[2]);

  graph.node = [...pre, ...(graph.node ?? []), ...post];
  graph.initializer = [
    ...(graph.initializer ?? []),
    floatScalar(n('255'), 255),
    int64s(n('zero'), [0]),
    int64s(n('four'), [4]),
    int64s(n('int64_max'), [0x7fffffffffffffffn]),
    int64s(n('axis1'), [1]),
  ];
  graph.input = [
    ...(graph.input ?? []).filter((i) => i !== input),
    { name: UINT8_INPUT_NAME, type: { tensorType: { elemType: UINT8, shape: { dim: [dimProto(batchDim), { dimValue: inputHeight }, { dimValue: inputWidth }, { dimValue: 3 }] } } } },
  ];
  graph.output = [
    { name: BEST_CLASS_OUTPUT_NAME, type: { tensorType: { elemType: FLOAT, shape: { dim: [dimProto(batchDim), { dimValue: BEST_CLASS_ROWS }, dimProto(anchors)] } } } },
    { name: RAW_SHAPE_OUTPUT_NAME, type: { tensorType: { elemType: INT64, shape: { dim: [{ dimValue: 3 }] } } } },
  ];
  // The old input and output are internal values now; shape inference re-derives them.
  graph.valueInfo = (graph.valueInfo ?? []).filter((v) => v.name !== inputName);
  return { rewritten: true, bytes: onnx.ModelProto.encode(model).finish(), originalInputName: inputName, originalOutputName: outputName, inputWidth, inputHeight };
}
