/**
 * Loads a YOLO-format ONNX detector from a local path or S3, reads its input
 * size and class names (sidecar JSON, else Ultralytics ONNX metadata), picks an
 * execution provider (CUDA when it really loads, CPU otherwise) and warms up.
 */
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { verifyModelSha256 } from './model-pin.ts';
import ort from 'onnxruntime-node';
import { parseClassNames } from './class-names.ts';
import { rewriteForUint8Input } from './graph-rewrite.ts';
import { createThreadedSession, type InferenceSessionLike, type ThreadOptions } from './inference-thread.ts';

/** What the processor needs to know about a model. */
export interface ModelInfo {
  readonly inputName: string;
  readonly outputName: string;
  readonly inputWidth: number;
  readonly inputHeight: number;
  readonly classNames: readonly string[];
  /** False when the model's batch dimension is fixed at 1: frames then run one per call. */
  readonly dynamicBatch: boolean;
  /** Where the input size and class names came from. */
  readonly metadataSource: 'sidecar' | 'onnx-metadata' | 'input-shape';
  /** Where the class names came from, in words, for messages ("the classes file names.txt"). */
  readonly classNamesSource: string;
  /** The project's own demo detector (it finds the demo's coloured squares only): its ONNX producer says so. */
  readonly demoModel: boolean;
  /** What the session takes and returns (decision 32). */
  readonly layout: ModelLayout;
  /** Why that layout: the rewrite applied, or why the model runs as exported. */
  readonly layoutReason: string;
}

/**
 * How frames are handed to the session and what comes back (docs/decisions.md 32).
 * - `uint8-nhwc`: the graph rewritten at load (graph-rewrite.ts): letterboxed uint8
 *   `[B, H, W, 3]` in, the best class per anchor `[B, 6, N]` out;
 * - `float32-nchw`: the model as exported: float32 `[B, 3, H, W]` in [0, 1], the raw
 *   `[B, 4 + C, N]` out. The fallback, for a model the rewrite does not fit.
 */
export type ModelLayout = 'uint8-nhwc' | 'float32-nchw';

/** Warm-up input value: the letterbox grey, so warm-up exercises the same path as padding. */
const LETTERBOX_GREY_BYTE = 114;

export type ExecutionProvider = 'cuda' | 'cpu';

export interface LoadedModel {
  readonly session: InferenceSessionLike;
  readonly info: ModelInfo;
  readonly provider: ExecutionProvider;
  readonly providerReason: string;
  /** The URI the model came from, for logs. */
  readonly uri: string;
}

export interface LoadModelOptions {
  /** Local path or s3://bucket/key.onnx. */
  readonly uri: string;
  /** Class names from a file of their own (`modelClassesUri`; class-names.ts); wins over the sidecar and the metadata. */
  readonly classesUri?: string;
  readonly s3Client?: S3Client;
  /** Try CUDA first (default true). */
  readonly preferCuda?: boolean;
  /** Expected SHA-256 (hex) of the model bytes (`modelSha256`); absent or empty = not checked. */
  readonly sha256?: string;
  /** onnxruntime intra-op threads; 0 or absent = its default (one per physical core). */
  readonly inferenceThreads?: number;
  /** How the inference thread is created (heap limits; a test fault). */
  readonly thread?: ThreadOptions;
  /**
   * Rewrite the graph to take uint8 frames and return the best class per anchor (default
   * true; decision 32). False runs the model as exported, with the CPU preprocessing.
   */
  readonly preprocessInGraph?: boolean;
  /** Test seam: creates a session for a provider list (defaults to onnxruntime-node). */
  readonly createSession?: (bytes: Uint8Array, providers: string[]) => Promise<InferenceSessionLike>;
}

/** Parses `s3://bucket/key`; undefined for anything else. */
export function parseS3Uri(uri: string): { bucket: string; key: string } | undefined {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri);
  return m ? { bucket: m[1], key: m[2] } : undefined;
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; code?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.code === 'ENOENT' || e?.$metadata?.httpStatusCode === 404;
}

/** Reads a local file or an S3 object; undefined when it does not exist and `optional`. */
async function fetchBytes(uri: string, s3Client: S3Client | undefined, optional: boolean): Promise<Uint8Array | undefined> {
  try {
    const s3 = parseS3Uri(uri);
    if (!s3) return new Uint8Array(await readFile(uri));
    if (!s3Client) throw new Error(`an S3 client is needed to load ${uri}`);
    const res = await s3Client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: s3.key }));
    if (!res.Body) throw new Error(`empty body for ${uri}`);
    return await res.Body.transformToByteArray();
  } catch (error) {
    if (optional && isNotFound(error)) return undefined;
    throw error;
  }
}

interface SidecarJson {
  inputWidth?: number;
  inputHeight?: number;
  classNames?: string[];
}

/**
 * Reads Ultralytics' `names` ("{0: 'person', 1: 'car'}") and `imgsz` ("[640, 640]")
 * metadata props from ONNX bytes. onnx-proto is only needed here; without it,
 * or without those props, returns undefined.
 */
export async function readUltralyticsMetadata(bytes: Uint8Array): Promise<{ classNames?: string[]; imgsz?: [number, number]; producerName?: string } | undefined> {
  try {
    const { default: onnxProto } = await import('onnx-proto');
    const model = onnxProto.onnx.ModelProto.decode(bytes);
    const props = new Map((model.metadataProps ?? []).map((p) => [p.key ?? '', p.value ?? '']));
    const out: { classNames?: string[]; imgsz?: [number, number]; producerName?: string } = {};
    if (model.producerName) out.producerName = model.producerName;
    const names = props.get('names');
    if (names) {
      const pairs = [...names.matchAll(/(\d+)\s*:\s*['"]([^'"]*)['"]/g)].map((m) => [Number(m[1]), m[2]] as const);
      pairs.sort((a, b) => a[0] - b[0]);
      if (pairs.length > 0) out.classNames = pairs.map((p) => p[1]);
    }
    const imgsz = props.get('imgsz');
    if (imgsz) {
      const nums = [...imgsz.matchAll(/\d+/g)].map((m) => Number(m[0]));
      if (nums.length === 1) out.imgsz = [nums[0], nums[0]];
      else if (nums.length >= 2) out.imgsz = [nums[0], nums[1]];
    }
    return out;
  } catch {
    return undefined;
  }
}

/**
 * onnxruntime's own defaults, with full graph optimisation; what a script that only
 * runs the model would use (the bench's bare timing does).
 */
export const BARE_SESSION_OPTIONS: ort.InferenceSession.SessionOptions = Object.freeze({
  // Level 3 keeps onnxruntime's own warnings out of the log; the one provider line says what happened.
  logSeverityLevel: 3,
  graphOptimizationLevel: 'all',
});

/**
 * The worker's: the bare options, and intra-op threads that sleep when they run out of
 * work instead of spinning. A spinning thread holds its core between operators and after
 * each run, which a lone `session.run` does not mind but the worker does: its decodes,
 * NMS, tracking and AWS calls need those cores between and beside the runs. On the
 * 2-core bench machine the model ran 55 ms per YOLOv8n frame inside the worker without
 * spinning against 72 ms with it (decision 20).
 */
export const WORKER_SESSION_OPTIONS: ort.InferenceSession.SessionOptions = Object.freeze({
  ...BARE_SESSION_OPTIONS,
  extra: { session: { intra_op: { allow_spinning: '0' } } },
});

/** `options` with `inferenceThreads` intra-op threads (0 = onnxruntime's default, one per physical core). */
export function withInferenceThreads(options: ort.InferenceSession.SessionOptions, inferenceThreads = 0): ort.InferenceSession.SessionOptions {
  return inferenceThreads > 0 ? { ...options, intraOpNumThreads: inferenceThreads } : options;
}

/** Off the main thread, so the event loop runs while the model does (inference-thread.ts): `loadModel`'s default session factory. */
export const threadedSession =
  (inferenceThreads = 0, thread: ThreadOptions = {}) =>
  (bytes: Uint8Array, providers: string[]) =>
    createThreadedSession(bytes, providers, withInferenceThreads(WORKER_SESSION_OPTIONS, inferenceThreads), thread);

/**
 * Whether onnxruntime-node's CUDA provider library is installed (it is
 * downloaded at install time only with ONNXRUNTIME_NODE_INSTALL=cuda12). Knowing
 * it is absent gives a clearer reason than the load error, and spares the
 * error onnxruntime prints when it fails to load it. Undefined where unknown
 * (non-Linux, unexpected layout): then the load is simply tried.
 */
export function cudaProviderInstalled(): boolean | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const binRoot = join(dirname(createRequire(import.meta.url).resolve('onnxruntime-node')), '..', 'bin');
    const napiDirs = readdirSync(binRoot).filter((d) => d.startsWith('napi-v'));
    if (napiDirs.length === 0) return undefined;
    return napiDirs.some((d) => existsSync(join(binRoot, d, 'linux', process.arch, 'libonnxruntime_providers_cuda.so')));
  } catch {
    return undefined;
  }
}

/**
 * Creates the session on CUDA when possible and says why it did or did not.
 * onnxruntime can fall back silently, so CUDA is requested alone: if it cannot
 * load, creation throws and CPU is used with the error as the reason.
 */
export async function createSessionWithProvider(
  bytes: Uint8Array,
  preferCuda: boolean,
  createSession: (bytes: Uint8Array, providers: string[]) => Promise<InferenceSessionLike> = threadedSession(),
  cudaInstalled: boolean | undefined = cudaProviderInstalled(),
): Promise<{ session: InferenceSessionLike; provider: ExecutionProvider; providerReason: string }> {
  if (!preferCuda) {
    return { session: await createSession(bytes, ['cpu']), provider: 'cpu', providerReason: 'CUDA not requested (preferCuda=false)' };
  }
  if (cudaInstalled === false) {
    return {
      session: await createSession(bytes, ['cpu']),
      provider: 'cpu',
      providerReason: 'onnxruntime-node has no CUDA provider library (install with ONNXRUNTIME_NODE_INSTALL=cuda12); using CPU',
    };
  }
  try {
    const session = await createSession(bytes, ['cuda']);
    return { session, provider: 'cuda', providerReason: 'CUDA execution provider loaded' };
  } catch (error) {
    const message = (error instanceof Error ? error.message : String(error)).split('\n')[0].slice(0, 200);
    return { session: await createSession(bytes, ['cpu']), provider: 'cpu', providerReason: `CUDA execution provider unavailable (${message}); using CPU` };
  }
}

function tensorShape(meta: readonly ort.InferenceSession.ValueMetadata[], index: number): readonly (number | string)[] {
  const m = meta[index];
  return m && m.isTensor ? m.shape : [];
}

/**
 * A model whose settings do not fit it (class names, input size, output layout): the
 * user's to fix, said in words. Never a reason to retry the model another way.
 */
export class ModelSettingsError extends Error {
  override name = 'ModelSettingsError';
}

/** The `producerName` of the demo detector's graph (demo-model/build-model.ts); how a loaded model is known to be it. */
export const DEMO_MODEL_PRODUCER = 'frame-affinity demo-model';

/** What the model's sidecar or ONNX metadata declares, before any session exists. */
interface Declared {
  readonly inputWidth?: number;
  readonly inputHeight?: number;
  readonly classNames?: string[];
  readonly metadataSource: ModelInfo['metadataSource'];
  /** Where `classNames` came from, in words. */
  readonly classNamesSource: string;
  /** Where the input size came from, in words. */
  readonly sizeSource: string;
  readonly demoModel: boolean;
}

async function declaredMetadata(uri: string, bytes: Uint8Array, sidecarBytes: Uint8Array | undefined): Promise<Declared> {
  const meta = await readUltralyticsMetadata(bytes);
  const demoModel = meta?.producerName === DEMO_MODEL_PRODUCER;
  if (sidecarBytes) {
    let sidecar: SidecarJson;
    try {
      sidecar = JSON.parse(new TextDecoder().decode(sidecarBytes)) as SidecarJson;
    } catch (e) {
      throw new ModelSettingsError(`model ${uri}: its sidecar ${uri}.json is not JSON (${e instanceof Error ? e.message : String(e)}); fix or remove it`);
    }
    const source = `its sidecar ${uri}.json`;
    return { inputWidth: sidecar.inputWidth, inputHeight: sidecar.inputHeight, classNames: sidecar.classNames, metadataSource: 'sidecar', classNamesSource: source, sizeSource: source, demoModel };
  }
  if (!meta?.classNames && !meta?.imgsz) return { metadataSource: 'input-shape', classNamesSource: 'the output channels (no names given)', sizeSource: 'its input shape', demoModel };
  const source = 'the names its export embedded (ONNX metadata)';
  return { inputHeight: meta.imgsz?.[0], inputWidth: meta.imgsz?.[1], classNames: meta.classNames, metadataSource: 'onnx-metadata', classNamesSource: source, sizeSource: "its export's imgsz (ONNX metadata)", demoModel };
}

/** `declared` with the class names of the classes file at `classesUri`, when one is given. */
async function withClassesFile(declared: Declared, classesUri: string | undefined, s3Client: S3Client | undefined): Promise<Declared> {
  if (!classesUri) return declared;
  let bytes: Uint8Array | undefined;
  try {
    bytes = await fetchBytes(classesUri, s3Client, true);
  } catch (e) {
    throw new Error(`class names ${classesUri} cannot be read: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!bytes) throw new ModelSettingsError(`class names ${classesUri} do not exist (modelClassesUri / --classes): give a file with one class name per line`);
  return { ...declared, classNames: parseClassNames(new TextDecoder().decode(bytes), classesUri), classNamesSource: `the classes file ${classesUri}` };
}

/**
 * Loads, inspects and warms up a model. Unless `preprocessInGraph` is false, the graph is
 * first rewritten to take uint8 frames (graph-rewrite.ts); a model the rewrite does not
 * fit, or whose rewritten graph fails to load or to warm up, runs as exported, and
 * `info.layoutReason` says why (the processor logs it).
 */
export async function loadModel(options: LoadModelOptions): Promise<LoadedModel> {
  const bytes = await fetchBytes(options.uri, options.s3Client, true);
  if (!bytes) throw new ModelSettingsError(`model ${options.uri} does not exist (modelUri / npm start -- --model PATH)`);
  verifyModelSha256(options.uri, bytes, options.sha256);
  const sidecarBytes = await fetchBytes(`${options.uri}.json`, options.s3Client, true);
  const declared = await withClassesFile(await declaredMetadata(options.uri, bytes, sidecarBytes), options.classesUri, options.s3Client);
  const size = declared.inputWidth && declared.inputHeight ? { inputWidth: declared.inputWidth, inputHeight: declared.inputHeight } : undefined;
  const rewrite = options.preprocessInGraph === false ? ({ rewritten: false, reason: 'preprocessInGraph=false' } as const) : rewriteForUint8Input(bytes, size);
  if (rewrite.rewritten) {
    try {
      return await openModel(options, rewrite.bytes, declared, 'uint8-nhwc', `graph rewritten: uint8 NHWC in, best class out (input ${rewrite.originalInputName}, output ${rewrite.originalOutputName})`);
    } catch (error) {
      // A model whose settings do not fit fails the same way as exported: say it once.
      if (error instanceof ModelSettingsError) throw error;
      const message = (error instanceof Error ? error.message : String(error)).split('\n')[0]!.slice(0, 200);
      return openModel(options, bytes, declared, 'float32-nchw', `the rewritten graph failed to load (${message}); running the model as exported`);
    }
  }
  return openModel(options, bytes, declared, 'float32-nchw', `not rewritten: ${rewrite.reason}; running the model as exported`);
}

/** Creates the session for `bytes` in `layout`, completes the model's description and warms it up. */
async function openModel(options: LoadModelOptions, bytes: Uint8Array, declared: Declared, layout: ModelLayout, layoutReason: string): Promise<LoadedModel> {
  const { session, provider, providerReason } = await createSessionWithProvider(
    bytes,
    options.preferCuda ?? true,
    options.createSession ?? threadedSession(options.inferenceThreads, options.thread),
  );
  try {
    const info = await inspectAndWarm(options.uri, session, declared, layout, layoutReason);
    return { session, info, provider, providerReason, uri: options.uri };
  } catch (error) {
    await session.release();
    throw error;
  }
}

/**
 * What is wrong with a model whose raw output is `dims` (`[B, channels, anchors]` for the
 * Ultralytics v8/11 layout) given `classNames` (from `classNamesSource`), in words that say
 * what to do; undefined when it fits. Pure.
 */
export function outputLayoutProblem(uri: string, dims: readonly number[], classNames: readonly string[] | undefined, classNamesSource: string): string | undefined {
  const export8 = 'export it with Ultralytics 8 or later as it comes: `yolo export model=best.pt format=onnx` (no nms, no end2end)';
  if (dims.length !== 3) return `model ${uri}: its output has shape [${dims.join(', ')}], not [batch, 4 + classes, anchors] (the YOLOv8/11 layout); ${export8}`;
  const [, channels, anchors] = dims as [number, number, number];
  if (anchors <= 7 && channels > anchors) {
    return `model ${uri}: its output is [${dims.join(', ')}], boxes already reduced by NMS (an export with nms=True, or YOLOv10/end2end); FrameAffinity runs its own NMS on the raw output: ${export8}`;
  }
  if (channels > anchors) {
    return `model ${uri}: its output is [${dims.join(', ')}], anchors before channels (a YOLOv5/v7-style or transposed export); FrameAffinity reads the YOLOv8/11 layout [batch, 4 + classes, anchors]: ${export8}`;
  }
  if (channels <= 4) return `model ${uri}: its output has ${channels} channels, no room for class scores after the 4 box values; ${export8}`;
  if (classNames && channels !== 4 + classNames.length) {
    return (
      `model ${uri}: its output has ${channels} channels, which is ${channels - 4} classes (4 box values, then one score per class), ` +
      `but ${classNamesSource} gives ${classNames.length} class name(s); give exactly ${channels - 4}, one per class in the order of training (modelClassesUri / npm start -- --classes FILE)`
    );
  }
  return undefined;
}

async function inspectAndWarm(uri: string, session: InferenceSessionLike, declared: Declared, layout: ModelLayout, layoutReason: string): Promise<ModelInfo> {
  const inputName = session.inputNames[0]!;
  const outputName = session.outputNames[0]!;
  const inShape = tensorShape(session.inputMetadata, 0);
  const dynamicBatch = typeof inShape[0] !== 'number' || inShape[0] !== 1;
  const [hAxis, wAxis] = layout === 'uint8-nhwc' ? [1, 2] : [2, 3];
  const graphHeight = typeof inShape[hAxis] === 'number' ? inShape[hAxis] : undefined;
  const graphWidth = typeof inShape[wAxis] === 'number' ? inShape[wAxis] : undefined;
  const inputHeight = declared.inputHeight ?? graphHeight;
  const inputWidth = declared.inputWidth ?? graphWidth;
  if (!inputWidth || !inputHeight) {
    throw new ModelSettingsError(`model ${uri}: input size unknown: its input has no fixed height and width, and neither a sidecar (${uri}.json with inputWidth and inputHeight) nor its export's imgsz metadata gives one`);
  }
  if ((graphHeight !== undefined && graphHeight !== inputHeight) || (graphWidth !== undefined && graphWidth !== inputWidth)) {
    throw new ModelSettingsError(
      `model ${uri}: ${declared.sizeSource} says its input is ${inputWidth}x${inputHeight} (width x height), but the graph's input is fixed at ${String(graphWidth)}x${String(graphHeight)}; ` +
        'fix the declaration, or export the model again at the size you want (yolo export ... imgsz=H,W)',
    );
  }

  // Warm-up: the first run allocates and plans; do it before the first real frame. The
  // raw output's shape [B, 4 + C, N] comes from it: the rewritten graph reports the
  // shape it reduced, the exported one its output itself.
  let dims: number[];
  if (layout === 'uint8-nhwc') {
    const warm = new ort.Tensor('uint8', new Uint8Array(3 * inputWidth * inputHeight).fill(LETTERBOX_GREY_BYTE), [1, inputHeight, inputWidth, 3]);
    const out = await session.run({ [inputName]: warm });
    const shape = out[session.outputNames[1]!]?.data as BigInt64Array | undefined;
    if (!shape || shape.length !== 3) throw new Error(`model ${uri}: the rewritten graph did not report its raw output shape`);
    dims = [...shape].map(Number);
  } else {
    const warm = new ort.Tensor('float32', new Float32Array(3 * inputWidth * inputHeight).fill(LETTERBOX_GREY_BYTE / 255), [1, 3, inputHeight, inputWidth]);
    dims = [...(await session.run({ [inputName]: warm }))[outputName]!.dims];
  }
  const problem = outputLayoutProblem(uri, dims, declared.classNames, declared.classNamesSource);
  if (problem) throw new ModelSettingsError(problem);
  const classNames = declared.classNames ?? Array.from({ length: dims[1]! - 4 }, (_, i) => `class${i}`);
  return {
    inputName,
    outputName,
    inputWidth,
    inputHeight,
    classNames,
    dynamicBatch,
    metadataSource: declared.metadataSource,
    classNamesSource: declared.classNamesSource,
    demoModel: declared.demoModel,
    layout,
    layoutReason,
  };
}
