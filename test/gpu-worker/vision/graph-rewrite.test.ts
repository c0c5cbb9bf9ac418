/**
 * The load-time graph rewrite (graph-rewrite.ts, decision 32): on a tiny graph whose
 * output is its input reshaped, so every float the model sees can be checked exactly;
 * the models it refuses, with their reasons; and the real YOLOv8n / YOLO11n exports
 * (random weights, `../shared/models/`), whose rewritten outputs must equal the exported
 * graph's, decoded, bit for bit. Where those graphs are absent, their block is skipped
 * with a message (shared/models/README.md asks that).
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import ort from 'onnxruntime-node';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARED_MODELS_DIR, YOLO11N_PATH, YOLOV8N_PATH } from '../../../harness/yolo-fixtures.ts';
import { BEST_CLASS_ROWS, rewriteForUint8Input, UINT8_INPUT_NAME } from '../../../gpu-worker/vision/graph-rewrite.ts';
import { loadModel } from '../../../gpu-worker/vision/model.ts';
import { decodeBestClass, decodeYolo } from '../../../gpu-worker/vision/postprocess.ts';
import { prepareFrame, prepareFrameUint8 } from '../../../gpu-worker/vision/preprocess.ts';

const { onnx } = onnxProto;
const FLOAT = onnx.TensorProto.DataType.FLOAT;

/** The CPU path's byte -> float table (preprocess.ts): what the graph must reproduce. */
const UNIT = Float32Array.from({ length: 256 }, (_, i) => i / 255);

interface TinyOptions {
  readonly opset?: number;
  readonly inputType?: number;
  readonly channels?: number;
  readonly extraInput?: boolean;
  readonly name?: string;
}

/**
 * `images` float [batch, 3, 16, 16] -> `output0` = Reshape to [batch, 6, 128]: 4 box rows
 * and 2 class rows of 128 anchors. Rows 0-1 are channel 0, rows 2-3 channel 1, rows 4-5
 * (the class scores) channel 2.
 */
function tinyGraph(options: TinyOptions = {}): Uint8Array {
  const channels = options.channels ?? 3;
  const name = options.name ?? 'images';
  const model: OnnxTypes.IModelProto = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: options.opset ?? 17 }],
    graph: {
      name: 'tiny',
      node: [{ opType: 'Reshape', input: [name, 'shape'], output: ['output0'], name: 'reshape' }],
      initializer: [{ name: 'shape', dims: [3], dataType: onnx.TensorProto.DataType.INT64, int64Data: [0, 6, (channels * 256) / 6] }],
      input: [
        { name, type: { tensorType: { elemType: options.inputType ?? FLOAT, shape: { dim: [{ dimParam: 'batch' }, { dimValue: channels }, { dimValue: 16 }, { dimValue: 16 }] } } } },
        ...(options.extraInput ? [{ name: 'other', type: { tensorType: { elemType: FLOAT, shape: { dim: [{ dimValue: 1 }] } } } }] : []),
      ],
      output: [{ name: 'output0', type: { tensorType: { elemType: FLOAT, shape: { dim: [{ dimParam: 'batch' }, { dimValue: 6 }, { dimValue: 128 }] } } } }],
    },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.create(model)).finish();
}

async function run(bytes: Uint8Array, hwc: Uint8Array, batch: number): Promise<{ best: Float32Array; shape: bigint[] }> {
  const session = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'all' });
  try {
    const out = await session.run({ [UINT8_INPUT_NAME]: new ort.Tensor('uint8', hwc, [batch, 16, 16, 3]) });
    return { best: out[session.outputNames[0]!]!.data as Float32Array, shape: [...(out[session.outputNames[1]!]!.data as BigInt64Array)] };
  } finally {
    await session.release();
  }
}

describe('rewriteForUint8Input on a tiny graph', () => {
  it.each([13, 17, 18])('at opset %i, the graph divides every byte value into exactly the CPU path float and reduces the classes as decodeYolo does', async (opset) => {
    // Prepare: image 0 has channel 0 = 0..255 over its 256 pixels; channel 1 and 2 are
    // patterned, with ties between the two class rows at every 4th anchor. Image 1 reversed.
    const batch = 2;
    const hwc = new Uint8Array(batch * 256 * 3);
    for (let b = 0; b < batch; b++) {
      for (let p = 0; p < 256; p++) {
        const v = b === 0 ? p : 255 - p;
        hwc.set([v, (v * 7) % 256, p % 4 === 0 ? 9 : (v * 13) % 256], (b * 256 + p) * 3);
      }
    }
    // Channel 2 at pixel p and p + 128 are the two class scores of anchor p: make every 4th a tie.
    for (let b = 0; b < batch; b++) for (let p = 0; p < 128; p += 4) hwc[(b * 256 + p + 128) * 3 + 2] = hwc[(b * 256 + p) * 3 + 2]!;
    const rewrite = rewriteForUint8Input(tinyGraph({ opset }), { inputWidth: 16, inputHeight: 16 });
    if (!rewrite.rewritten) throw new Error(rewrite.reason);
    // Act
    const { best, shape } = await run(rewrite.bytes, hwc, batch);
    // Assess: the exported graph's output, computed here from the CPU path's floats.
    expect(shape).toEqual([2n, 6n, 128n]);
    for (let b = 0; b < batch; b++) {
      const chw = new Float32Array(768);
      for (let p = 0; p < 256; p++) for (let c = 0; c < 3; c++) chw[c * 256 + p] = UNIT[hwc[(b * 256 + p) * 3 + c]!]!;
      const base = b * BEST_CLASS_ROWS * 128;
      expect(best.subarray(base, base + 512)).toEqual(chw.subarray(0, 512));
      for (let n = 0; n < 128; n++) {
        const s0 = chw[512 + n]!;
        const s1 = chw[640 + n]!;
        expect([best[base + 512 + n], best[base + 640 + n]]).toEqual([Math.max(s0, s1), s1 > s0 ? 1 : 0]);
      }
      // And decoding it finds exactly what decodeYolo finds in the raw output.
      const raw = new Float32Array(768 * batch);
      raw.set(chw, b * 768);
      expect(decodeBestClass(best, b, 128, 0.1)).toEqual(decodeYolo(raw, b, 2, 128, 0.1));
    }
  });

  it('gives the 256 byte values the same float32 bits as the CPU table, i / 255', async () => {
    // Prepare: channel 0 of the 256 pixels holds 0..255; it comes back as rows 0-1.
    const hwc = new Uint8Array(256 * 3);
    for (let p = 0; p < 256; p++) hwc[p * 3] = p;
    const rewrite = rewriteForUint8Input(tinyGraph(), { inputWidth: 16, inputHeight: 16 });
    if (!rewrite.rewritten) throw new Error(rewrite.reason);
    // Act
    const { best } = await run(rewrite.bytes, hwc, 1);
    // Assess: bitwise, not to a tolerance.
    expect(new Uint32Array(best.slice(0, 256).buffer)).toEqual(new Uint32Array(UNIT.buffer));
  });

  it('takes the input size from the graph when none is declared', () => {
    const rewrite = rewriteForUint8Input(tinyGraph());
    expect(rewrite.rewritten && [rewrite.inputWidth, rewrite.inputHeight, rewrite.originalInputName, rewrite.originalOutputName]).toEqual([16, 16, 'images', 'output0']);
  });

  it.each([
    ['bytes that are not ONNX', new TextEncoder().encode('not a model at all'), undefined, /not a parseable ONNX model|no graph/],
    ['an opset below 13', tinyGraph({ opset: 12 }), undefined, /opset 12 is below 13/],
    ['a uint8 input', tinyGraph({ inputType: onnx.TensorProto.DataType.UINT8 }), undefined, /not float32/],
    ['six channels', tinyGraph({ channels: 6 }), undefined, /6 channels, not 3/],
    ['two inputs', tinyGraph({ extraInput: true }), undefined, /2 inputs, not one/],
    ['names the rewrite would add', tinyGraph({ name: 'frameaffinity_images' }), undefined, /already uses names/],
    ['a declared size other than the graph', tinyGraph(), { inputWidth: 32, inputHeight: 32 }, /16x16, not the 32x32/],
  ])('leaves %s as it is, and says why', (_label, bytes, declared, reason) => {
    const rewrite = rewriteForUint8Input(bytes, declared);
    expect(rewrite.rewritten).toBe(false);
    expect(!rewrite.rewritten && rewrite.reason).toMatch(reason);
  });
});

describe('loadModel', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'graph-rewrite-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const onMainThread = (bytes: Uint8Array) => ort.InferenceSession.create(bytes);

  it('runs the rewritten graph by default', async () => {
    const uri = join(dir, 'tiny.onnx');
    await writeFile(uri, tinyGraph());
    const model = await loadModel({ uri, preferCuda: false, createSession: onMainThread });
    await model.session.release();
    expect(model.info).toMatchObject({ layout: 'uint8-nhwc', inputName: UINT8_INPUT_NAME, inputWidth: 16, classNames: ['class0', 'class1'] });
  });

  it('runs a model the rewrite does not fit as exported, and says why', async () => {
    const uri = join(dir, 'opset12.onnx');
    await writeFile(uri, tinyGraph({ opset: 12 }));
    const model = await loadModel({ uri, preferCuda: false, createSession: onMainThread });
    await model.session.release();
    expect(model.info).toMatchObject({ layout: 'float32-nchw', inputName: 'images', classNames: ['class0', 'class1'] });
    expect(model.info.layoutReason).toBe('not rewritten: default-domain opset 12 is below 13; running the model as exported');
  });

  it('falls back to the model as exported when the rewritten graph fails to load, with the error as the reason', async () => {
    const uri = join(dir, 'refused.onnx');
    const original = tinyGraph();
    await writeFile(uri, original);
    const picky = (bytes: Uint8Array) => (bytes.length === original.length ? onMainThread(bytes) : Promise.reject(new Error('provider refused the graph\nstack')));
    const model = await loadModel({ uri, preferCuda: false, createSession: picky });
    await model.session.release();
    expect(model.info.layout).toBe('float32-nchw');
    expect(model.info.layoutReason).toBe('the rewritten graph failed to load (provider refused the graph); running the model as exported');
  });
});

const present = existsSync(YOLOV8N_PATH) && existsSync(YOLO11N_PATH);
if (!present) console.warn(`SKIPPED the YOLO blocks of test/gpu-worker/vision/graph-rewrite.test.ts: the fixtures are not at ${SHARED_MODELS_DIR} (see shared/models/README.md)`);

describe.skipIf(!present).each([YOLOV8N_PATH, YOLO11N_PATH])('%s rewritten', (graph) => {
  it('returns, for a letterboxed 1080p JPEG handed over as uint8, the exported graph\'s boxes, best scores and classes bit for bit', async () => {
    // Prepare: one frame, prepared both ways; the exported graph on the CPU path's floats.
    const jpeg = await sharp({ create: { width: 1920, height: 1080, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 120, sigma: 60 } } }).jpeg().toBuffer();
    const floats = await prepareFrame(jpeg, 640, 640);
    const bytes = await prepareFrameUint8(jpeg, 640, 640);
    const model = readFileSync(graph);
    const rewrite = rewriteForUint8Input(model, { inputWidth: 640, inputHeight: 640 });
    if (!rewrite.rewritten) throw new Error(rewrite.reason);
    const exported = await ort.InferenceSession.create(model);
    const rewritten = await ort.InferenceSession.create(rewrite.bytes);
    // Act
    const raw = (await exported.run({ images: new ort.Tensor('float32', floats.chw, [1, 3, 640, 640]) })).output0!;
    const out = await rewritten.run({ [UINT8_INPUT_NAME]: new ort.Tensor('uint8', new Uint8Array(bytes.hwc), [1, 640, 640, 3]) });
    await exported.release();
    await rewritten.release();
    // Assess
    const anchors = raw.dims[2]!;
    const best = out[rewritten.outputNames[0]!]!;
    expect(best.dims).toEqual([1, BEST_CLASS_ROWS, anchors]);
    expect([...(out[rewritten.outputNames[1]!]!.data as BigInt64Array)]).toEqual([1n, 84n, BigInt(anchors)]);
    const rawData = raw.data as Float32Array;
    const bestData = best.data as Float32Array;
    expect(bestData.subarray(0, 4 * anchors)).toEqual(rawData.subarray(0, 4 * anchors));
    // At a threshold that keeps every anchor, the candidates are the same, scores and classes included.
    expect(decodeBestClass(bestData, 0, anchors, -1)).toEqual(decodeYolo(rawData, 0, 80, anchors, -1));
  });
});
