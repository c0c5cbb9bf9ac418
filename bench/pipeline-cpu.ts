/**
 * CPU per frame of the vision pipeline around the model, by thread: how many core-ms a
 * frame costs outside `session.run` (decode, letterbox, batching, YOLO decoding, NMS,
 * tracking, and the garbage collection all that allocation brings), next to the model's
 * own. This is the arithmetic behind the worker-throughput target with the model on both
 * cores: whatever the pipeline and the emulators take per frame comes out of the model's
 * two cores (bench/README.md, worker throughput). Without AWS: the processor is fed like
 * the worker feeds it, 8 videos in chunks of 2, JPEG frames of each `--sizes` entry.
 *
 * Two preprocessing paths (docs/decisions.md 32), run alternately for each size and batch:
 * - `graph` (the default): uint8 letterbox in sharp, float conversion and best-class
 *   reduction inside the rewritten ONNX graph, so they run where the model runs (on the
 *   GPU with CUDA; here, on the inference thread, counted in the model's column);
 * - `cpu`: the path before decision 32 (`preprocessInGraph: false`), float32 NCHW made in JS.
 *
 * Per-thread CPU comes from /proc/self/task (Linux only): the main thread, the inference
 * thread (a Node worker thread running onnxruntime with one intra-op thread, so the
 * model's work is all there), V8's platform workers (concurrent GC), libvips' workers and
 * libuv's pool (sharp). The pipeline's total is the process's CPU (getrusage) less the
 * model's thread: libvips lets idle pool threads end, and a thread that ended during the
 * run is missing from /proc/self/task, so the per-thread split alone undercounts (shown
 * as "threads ended"). Core-ms are robust to other load on the machine; wall-clock
 * frames/s are not, so the load average is recorded next to them.
 *
 * Steady state, as in a long-running worker: the first `--warmup` frames of every video
 * are processed untimed (V8 compiles the tracker, NMS and decoding code while they run;
 * with frame 0 alone as warm-up, those compiles and the slower code before them landed
 * in the timed window). Also recorded: V8 garbage collections by kind in the window (main
 * thread), minor page faults per frame, and how many input buffers the processor reused
 * (decision 37).
 *
 * `--decode main` (the default, as the processor's since decision 40) decodes on the main
 * thread's libuv pool (`decodeInThread: false`); `--decode thread` in the decode thread
 * (decode-thread.ts; the uint8 path only).
 *
 * `--model` (decision 43): `cpu` runs YOLOv8n on the inference thread, as before; `replay`
 * (the uint8 path only) records its outputs for every frame in an untimed pass, then
 * answers from them after a simulated GPU's batch time (bench/harness/replay-session.ts):
 * the CPU around the model as it is beside a GPU, where the model's work is off the cores
 * and frames come tens of times faster, with the timed frames fed `--replay-rounds` times.
 * `--jpeg-quality` / `--chroma` re-encode the clips (default 95 / 4:4:4, as generated;
 * most cameras' frames are 4:2:0 at quality 75-90, cheaper to decode).
 *
 * Run: npx node bench/pipeline-cpu.ts [--frames 12] [--warmup 6] [--decode main|thread] [--batches 1,8] [--sizes 640x480,1920x1080] [--paths graph,cpu] [--model cpu,replay] [--replay-rounds 10] [--jpeg-quality 95] [--chroma 4:4:4|4:2:0] [--out bench/results/pipeline-cpu.json]
 * Skipped with a message without the YOLOv8n graph.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { PerformanceObserver, constants as perfConstants } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { createVisionProcessor, type VisionProcessorOptions } from '../gpu-worker/vision/index.ts';
import { threadedSession } from '../gpu-worker/vision/model.ts';
import { ModelRecording } from './harness/replay-session.ts';
import { generateClip } from '../gpu-worker/vision/synthetic/generate.ts';
import { parseProcStat, TICKS_PER_SECOND } from './cpu-accounting.ts';
import { numberOption } from './support.ts';
import { RANDOM_WEIGHT_PROCESSOR_OPTIONS, YOLOV8N_PATH } from '../harness/yolo-fixtures.ts';

const VIDEOS = 8;
const CHUNK_FRAMES = 2;
/**
 * The thread that runs the model: Node names its unnamed worker threads so. The decode
 * thread is named (`vision-decode`), so its CPU counts as the pipeline's, not the model's.
 */
const INFERENCE_THREAD = 'WorkerThread';
const PATHS = ['graph', 'cpu'] as const;
type PreprocessPath = (typeof PATHS)[number];

const { values } = parseArgs({
  options: {
    frames: { type: 'string', default: '12' },
    warmup: { type: 'string', default: '6' },
    decode: { type: 'string', default: 'main' },
    batches: { type: 'string', default: '1,8' },
    sizes: { type: 'string', default: '640x480,1920x1080' },
    paths: { type: 'string', default: 'graph,cpu' },
    model: { type: 'string', default: 'cpu,replay' },
    'jpeg-quality': { type: 'string', default: '95' },
    chroma: { type: 'string', default: '4:4:4' },
    'replay-rounds': { type: 'string', default: '10' },
    out: { type: 'string' },
  },
});
const framesPerVideo = numberOption(values, 'frames', 3, 1000);
const warmupFrames = numberOption(values, 'warmup', 1, 1000);
if (values.decode !== 'thread' && values.decode !== 'main') throw new Error(`--decode: ${values.decode} is not thread or main`);
const decodeInThread = values.decode === 'thread';
const batches = values.batches.split(',').map(Number);
const sizes = values.sizes.split(',').map((s) => {
  const [w, h] = s.split('x').map(Number);
  if (!w || !h) throw new Error(`--sizes: ${s} is not WIDTHxHEIGHT`);
  return { width: w, height: h };
});
const MODELS = ['cpu', 'replay'] as const;
type ModelKind = (typeof MODELS)[number];
const models = values.model.split(',').map((m) => {
  if (!(MODELS as readonly string[]).includes(m)) throw new Error(`--model: ${m} is not one of ${MODELS.join(', ')}`);
  return m as ModelKind;
});
const replayRounds = numberOption(values, 'replay-rounds', 1, 1000);
const jpegQuality = numberOption(values, 'jpeg-quality', 1, 100);
if (values.chroma !== '4:4:4' && values.chroma !== '4:2:0') throw new Error(`--chroma: ${values.chroma} is not 4:4:4 or 4:2:0`);
const chroma = values.chroma;
const paths = values.paths.split(',').map((p) => {
  if (!(PATHS as readonly string[]).includes(p)) throw new Error(`--paths: ${p} is not one of ${PATHS.join(', ')}`);
  return p as PreprocessPath;
});

if (!existsSync(YOLOV8N_PATH)) {
  console.log(`SKIPPED: ${YOLOV8N_PATH} is absent (see shared/models/README.md)`);
  process.exit(0);
}
if (!existsSync('/proc/self/task')) {
  console.log('SKIPPED: per-thread CPU needs Linux /proc');
  process.exit(0);
}

/** CPU ms so far by thread name, summed over threads of one name. */
function cpuMsByThread(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended between the listing and the read
    }
    const { comm, ticks } = parseProcStat(stat);
    out.set(comm, (out.get(comm) ?? 0) + (ticks * 1000) / TICKS_PER_SECOND);
  }
  return out;
}

interface Row {
  readonly size: string;
  readonly path: PreprocessPath;
  /** `cpu`: the model on the inference thread; `replay`: its recorded outputs on a simulated GPU (bench/harness/replay-session.ts). */
  readonly model: ModelKind;
  readonly layout: string;
  readonly batchSize: number;
  readonly frames: number;
  readonly framesPerSecond: number;
  /** Core-ms per frame by thread name (the model's thread included). */
  readonly coreMsPerFrameByThread: Record<string, number>;
  readonly modelCoreMsPerFrame: number;
  /** The whole process (getrusage, which keeps the CPU of threads that ended) less the model's thread. */
  readonly pipelineCoreMsPerFrame: number;
  /** CPU of threads that ended during the run (libvips' pool lets idle workers go), absent from the per-thread split. */
  readonly endedThreadsCoreMsPerFrame: number;
  readonly loadAverage1m: number;
  /** Whether the processor was asked to decode in its decode thread (the uint8 path only has one). */
  readonly decodeInThread: boolean;
  /** Main-thread V8 collections in the timed window. */
  readonly gcInWindow: { readonly major: number; readonly minor: number };
  readonly minorPageFaultsPerFrame: number;
  /** The processor's input buffers (decision 37): made new and reused, over the whole run; absent where the processor has none. */
  readonly inputBuffers?: { readonly allocated: number; readonly reused: number };
}

/**
 * How the model runs: on the inference thread (`cpu`), on it while recording every
 * frame's outputs (`record`, untimed), or replayed from that recording on a simulated GPU
 * (`replay`), the timed frames fed `rounds` times over.
 */
type ModelMode = { readonly kind: 'cpu' } | { readonly kind: 'record'; readonly recording: ModelRecording } | { readonly kind: 'replay'; readonly recording: ModelRecording; readonly rounds: number };

function sessionFactory(mode: ModelMode): VisionProcessorOptions['createSession'] {
  if (mode.kind === 'cpu') return undefined;
  return async (bytes, providers) => {
    // The processor's own factory at one inference thread (measure() asks for 1).
    const session = await threadedSession(1)(bytes, providers);
    return mode.kind === 'record' ? mode.recording.record(session) : mode.recording.replay(session);
  };
}

async function measure(width: number, height: number, path: PreprocessPath, batchSize: number, clips: Awaited<ReturnType<typeof generateClip>>[], mode: ModelMode): Promise<Row> {
  const processor = createVisionProcessor({
    createSession: sessionFactory(mode),
    modelUri: YOLOV8N_PATH,
    batchSize,
    maxBatchWaitMs: 10,
    inferenceThreads: 1,
    preferCuda: false,
    preprocessInGraph: path === 'graph',
    decodeInThread: decodeInThread,
    ...RANDOM_WEIGHT_PROCESSOR_OPTIONS,
  });
  await processor.start();
  clips.forEach((_, v) => processor.openVideo(`v${v}`, undefined));
  const feed = (from: number, to: number, onDone: (n: number) => void, rounds = 1) =>
    Promise.all(
      clips.map(async (clip, v) => {
        // A replayed round feeds the same images again as later frames: the recording knows them.
        for (let round = 0; round < rounds; round++) for (let i = from; i < to; i += CHUNK_FRAMES) {
          const chunk = clip.frames.slice(i, Math.min(i + CHUNK_FRAMES, to)).map((f) => ({ videoId: `v${v}`, frame: f.frame + round * clip.frames.length, image: f.image }));
          const outcomes = await processor.process(chunk);
          if (outcomes.some((o) => o.status !== 'ok')) throw new Error(`a frame failed: ${JSON.stringify(outcomes)}`);
          onDone(chunk.length);
        }
      }),
    );
  // The first `warmupFrames` of every video, untimed: warms sharp, the thread pools, the trackers and V8's compiled code.
  await feed(0, warmupFrames, () => undefined);
  const gc = { major: 0, minor: 0 };
  const gcObserver = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as unknown as { detail?: { kind?: number } }).detail?.kind;
      if (kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR) gc.major++;
      else if (kind === perfConstants.NODE_PERFORMANCE_GC_MINOR) gc.minor++;
    }
  });
  gcObserver.observe({ entryTypes: ['gc'] });
  const before = cpuMsByThread();
  const processBefore = process.cpuUsage();
  const faultsBefore = process.resourceUsage().minorPageFault;
  const startedMs = performance.now();
  let frames = 0;
  await feed(warmupFrames, warmupFrames + framesPerVideo, (n) => (frames += n), mode.kind === 'replay' ? mode.rounds : 1);
  const wallMs = performance.now() - startedMs;
  const after = cpuMsByThread();
  const processUsage = process.cpuUsage(processBefore);
  const faults = process.resourceUsage().minorPageFault - faultsBefore;
  gcObserver.disconnect();
  const layout = processor.layout;
  // Optional: a processor from before decision 37 has no pool (for before/after runs of this script on older code).
  const inputBuffers = (processor as { inputBuffers?: Row['inputBuffers'] }).inputBuffers;
  await processor.stop();
  const perFrame = [...after]
    .map(([name, ms]) => [name, (ms - (before.get(name) ?? 0)) / frames] as const)
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1]);
  // A replayed model has no thread: its time is the simulated GPU's, not this CPU's.
  const model = perFrame.find(([name]) => name === INFERENCE_THREAD)?.[1] ?? (mode.kind === 'replay' ? 0 : NaN);
  const listed = perFrame.reduce((sum, [, ms]) => sum + ms, 0);
  const processMs = (processUsage.user + processUsage.system) / 1000 / frames;
  // Threads that ended between the two listings are missing from them, not from getrusage.
  const pipeline = processMs - model;
  return {
    size: `${width}x${height}`,
    path,
    model: mode.kind === 'replay' ? 'replay' : 'cpu',
    layout,
    batchSize,
    frames,
    framesPerSecond: (frames / wallMs) * 1000,
    coreMsPerFrameByThread: Object.fromEntries(perFrame),
    modelCoreMsPerFrame: model,
    pipelineCoreMsPerFrame: pipeline,
    endedThreadsCoreMsPerFrame: Math.max(0, processMs - listed),
    loadAverage1m: loadavg()[0]!,
    decodeInThread,
    gcInWindow: gc,
    minorPageFaultsPerFrame: faults / frames,
    ...(inputBuffers ? { inputBuffers: { ...inputBuffers } } : {}),
  };
}

const rows: Row[] = [];
console.log(`pipeline CPU per frame: YOLOv8n (640), one inference thread, ${VIDEOS} videos x ${framesPerVideo} JPEG frames timed after ${warmupFrames} untimed, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`);
for (const { width, height } of sizes) {
  const clips = await Promise.all(
    Array.from({ length: VIDEOS }, (_, v) => generateClip({ seed: 500 + v, frames: warmupFrames + framesPerVideo, width, height, format: 'jpeg', objects: 6 })).map(async (made) => {
      // The clip is quality 95, 4:4:4: heavier to decode than most cameras' frames (4:2:0, quality 75-90), so other encodings are re-encoded from it.
      const clip = await made;
      if (jpegQuality === 95 && chroma === '4:4:4') return clip;
      const frames = await Promise.all(clip.frames.map(async (f) => ({ ...f, image: new Uint8Array(await sharp(f.image).jpeg({ quality: jpegQuality, chromaSubsampling: chroma }).toBuffer()) })));
      return { ...clip, frames };
    }),
  );
  const jpegKiB = clips.flatMap((c) => c.frames).reduce((s, f) => s + f.image.length, 0) / clips.length / clips[0]!.frames.length / 1024;
  for (const batchSize of batches) {
    for (const path of paths) for (const model of models) {
      // Replayed on the uint8 path only: the float path's raw output (2.8 MB a frame) is not worth recording.
      if (model === 'replay' && path !== 'graph') continue;
      let mode: ModelMode = { kind: 'cpu' };
      if (model === 'replay') {
        const recording = new ModelRecording();
        await measure(width, height, path, batchSize, clips, { kind: 'record', recording });
        mode = { kind: 'replay', recording, rounds: replayRounds };
      }
      const row = await measure(width, height, path, batchSize, clips, mode);
      rows.push(row);
      const modelLine = model === 'replay' ? `model replayed on a simulated GPU, timed frames x ${replayRounds}` : 'model on the CPU';
      console.log(`${row.size} (JPEG ${jpegKiB.toFixed(0)} KiB, quality ${jpegQuality}, ${chroma}) ${path} (${row.layout}) batch ${batchSize}, ${modelLine}${decodeInThread && path === 'graph' ? ', decode thread' : ''}: ${row.frames} frames, ${row.framesPerSecond.toFixed(1)} frames/s, load ${row.loadAverage1m.toFixed(2)}`);
      for (const [name, ms] of Object.entries(row.coreMsPerFrameByThread)) {
        console.log(`  ${name.padEnd(16)} ${ms.toFixed(2).padStart(7)} core-ms per frame${name === INFERENCE_THREAD ? ' (the model)' : ''}`);
      }
      console.log(`  ${'(threads ended)'.padEnd(16)} ${row.endedThreadsCoreMsPerFrame.toFixed(2).padStart(7)} core-ms per frame`);
      console.log(`  pipeline outside the model (process less the model's thread): ${row.pipelineCoreMsPerFrame.toFixed(2)} core-ms per frame`);
      console.log(
        `  main-thread GCs in the window: ${row.gcInWindow.major} major, ${row.gcInWindow.minor} minor; ${row.minorPageFaultsPerFrame.toFixed(0)} minor page faults per frame` +
          (row.inputBuffers ? `; input buffers ${row.inputBuffers.allocated} made, ${row.inputBuffers.reused} reused` : ''),
      );
    }
  }
}
if (values.out) {
  const command = `npx node bench/pipeline-cpu.ts ${process.argv.slice(2).join(' ')}`.trim();
  writeFileSync(
    values.out,
    `${JSON.stringify({ command, date: new Date().toISOString(), cpu: cpus()[0]?.model ?? '?', cores: availableParallelism(), videos: VIDEOS, framesPerVideo, warmupFramesPerVideo: warmupFrames, jpegQuality, chroma, replayRounds, rows }, null, 2)}\n`,
  );
  console.log(`wrote ${values.out}`);
}
