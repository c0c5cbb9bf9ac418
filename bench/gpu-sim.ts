/**
 * Feed the GPU (issue 20): can one worker keep a GPU busy? Measures the DESIGN, not this
 * laptop: the real worker runtime with AWS-like latency on every call and a simulated GPU
 * that sleeps per batch (2 ms + 1 ms per frame by default: ~333 frames/s at batch 1, ~800
 * at batch 8), so the figures come from the pipeline's structure and the injected
 * latencies, not from this machine's CPU. What ran on what: bench/harness/sim-rig.ts
 * (SQS = the in-process SQS FIFO model with real FIFO semantics, DynamoDB = DynamoDB
 * Local through the production clients, S3 = frames in memory; all behind the latency
 * model of lab/aws/latency-model.ts, whose numbers and sources are in its header and in
 * bench/README.md).
 *
 * Scenarios:
 *  - backlog: `--videos` videos with `--frames` frames each queued before the worker
 *    starts; sustained frames/s (frames tracked between 10% and 90% of the total, over
 *    that time) against the simulated GPU's capacity, per batch size in `--batches`;
 *  - live: `--live-videos` videos at `--fps` each, sent as the router would, for
 *    `--seconds`, each frame put into the in-memory S3 as it is sent (a read ahead finds
 *    no frame the camera has not sent yet); every frame must get its record; p50/p99 of
 *    send -> record landed (the commit that carried it answered; the S3 notification and
 *    router in front of the slot queue are not in it), and the GPU's idle share.
 * `--source segments` (issue 34) feeds both from encoded segments instead of one JPEG per
 * frame: H.264 in MPEG-TS of `--segment-seconds` at `--fps` (k frames), `--segment-size`
 * (640x480 by default), made at run time by the `ffmpeg` binary and shared by every video
 * (bench/harness/segments.ts), each put into the in-memory S3 with `x-amz-meta-frames: k`
 * and sent as the router does (one message per segment). The worker HEADs it and decodes
 * it with FFmpeg (node-av) on this machine's CPU: the simulated GPU reads each frame's size
 * from its decoded pixels. The backlog is whole segments per video (`--frames` rounded up);
 * the live scenario closes each camera's segment every `--segment-seconds` and measures
 * segment upload (put + send) -> its last frame's record landed. The decode's CPU is
 * measured alone first (`--decode-rounds`) and reported with each scenario: the cores it
 * needs at the measured rate and at the GPU's capacity, against this machine's.
 * Per scenario: the per-stage table (busy share, concurrency, items, queueing) from the
 * worker's StageClock, the bounding stage, the bench process's CPU per frame (the worker,
 * the in-process SQS model and the driver; an upper bound on the worker's own), and
 * DynamoDB Local's CPU share.
 *
 * Run: npx node bench/gpu-sim.ts [--scenario all|backlog|live] [--label before] [--source frames|segments --segment-seconds 2 --segment-size 640x480] ...
 * Writes bench/results/gpu-sim[-label].json.
 */
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { allResults } from '../core/commit/dynamodb/results-reader.ts';
import { METRIC_NAMES } from '../core/metric-names.ts';
import { boundingStage, STAGES, type StageReport } from '../gpu-worker/runtime/stage-clock.ts';
import { simulatedGpuCapacityFps } from '../lab/worker/simulated-gpu.ts';
import { CpuSampler } from './cpu-accounting.ts';
import { benchMain, commandLine, machine, RESULTS_DIR, sleep, writeResult, type Bench } from './harness/main.ts';
import { parseFlags } from './harness/options.ts';
import { SimRig } from './harness/sim-rig.ts';
import { encodeSegment, measureDecode, parseSize, type DecodeCost, type SegmentSpec } from './harness/segments.ts';
import { percentile } from './support.ts';

const FLAGS = {
  scenario: { choice: ['all', 'backlog', 'live'], fallback: 'all' },
  label: { text: undefined },
  videos: { num: [16, 1, 100], int: true },
  frames: { num: [150, 10, 100_000], int: true },
  batches: { text: '1,8' },
  'live-videos': { num: [16, 1, 100], int: true },
  fps: { num: [30, 1, 120] },
  seconds: { num: [40, 5, 600] },
  'batch-fixed-ms': { num: [2, 0, 1000] },
  'per-frame-ms': { num: [1, 0, 1000] },
  'latency-scale': { num: [1, 0, 100] },
  seed: { num: [1, 0, 1e9], int: true },
  commits: { choice: ['dynamodb-local', 'model'], fallback: 'dynamodb-local' },
  'receive-concurrency': { num: [undefined, 1, 64], int: true },
  'fetch-concurrency': { num: [undefined, 1, 256], int: true },
  'fetch-hedge-ms': { num: [undefined, 0, 10_000], int: true },
  'receive-gather-ms': { num: [undefined, 0, 1_000], int: true },
  'read-ahead-frames': { num: [undefined, 0, 10], int: true },
  'detect-ahead-frames': { num: [undefined, 0, 1_000], int: true },
  source: { choice: ['frames', 'segments'], fallback: 'frames' },
  'segment-seconds': { num: [2, 0.1, 60] },
  'segment-size': { text: '640x480' },
  'segment-kbps': { num: [undefined, 50, 50_000] },
  'decode-rounds': { num: [5, 1, 100], int: true },
} as const;

type Options = NonNullable<ReturnType<typeof parseFlags<typeof FLAGS>>>;

const latencyJson = (o: Options) => JSON.stringify({ seed: o.seed, scale: o.latencyScale });
/** Tunables the flags override (the defaults otherwise); `--receive-concurrency 1 --fetch-concurrency 8` is the worker before decision 30. */
const tunablesOf = (o: Options) => ({
  ...(o.receiveConcurrency !== undefined ? { receiveConcurrency: o.receiveConcurrency } : {}),
  ...(o.fetchConcurrency !== undefined ? { fetchConcurrency: o.fetchConcurrency } : {}),
  ...(o.fetchHedgeMs !== undefined ? { fetchHedgeMs: o.fetchHedgeMs } : {}),
  ...(o.receiveGatherMs !== undefined ? { receiveGatherMs: o.receiveGatherMs } : {}),
  ...(o.readAheadFrames !== undefined ? { readAheadFrames: o.readAheadFrames } : {}),
  ...(o.detectAheadFrames !== undefined ? { detectAheadFrames: o.detectAheadFrames } : {}),
});

/** The per-stage table as printed lines. */
function stageLines(r: StageReport): string[] {
  const lines = ['stage   | busy share | in flight | ops    | items  | mean op ms | queued ms/item'];
  for (const s of STAGES) {
    const t = r.stages[s];
    lines.push(
      `${s.padEnd(7)} | ${(t.busyShare * 100).toFixed(1).padStart(9)}% | ${t.concurrency.toFixed(2).padStart(9)} | ${String(t.ops).padStart(6)} | ${String(t.items).padStart(6)} | ${(t.ops ? t.opMs / t.ops : 0).toFixed(1).padStart(10)} | ${t.items && t.queuedMs ? (t.queuedMs / t.items).toFixed(1) : '-'}`,
    );
  }
  return lines;
}

/** Frames tracked for their round since the GPU started (frames detected ahead count once their round uses them; the clock's counts restart at each reset). */
const trackedFrames = (rig: SimRig) => rig.gpu.framesTracked;

async function backlog(o: Options, batchSize: number, bench: Bench): Promise<Record<string, unknown>> {
  const gpu = { batchFixedMs: o.batchFixedMs, perFrameMs: o.perFrameMs };
  const rig = await SimRig.start({ videos: o.videos, tunables: { ...tunablesOf(o), inferenceBatchSize: batchSize }, gpu, latencyModel: latencyJson(o), width: 640, height: 480, commits: o.commits as 'model' });
  try {
    const seg = segmentsOf(o);
    // With segments, each video is whole segments of k frames (frames rounded up to them).
    const perVideo = seg ? Math.ceil(o.frames / seg.k) * seg.k : o.frames;
    const total = o.videos * perVideo;
    const frames = Array.from({ length: perVideo }, (_, i) => i);
    if (seg) {
      const firsts = frames.filter((f) => f % seg.k === 0);
      for (const v of rig.videoIds) for (const n of firsts) rig.putSegment(v, n, seg.bytes, seg.k);
      await Promise.all(rig.videoIds.map(async (v) => {
        for (const n of firsts) await rig.sendSegment(v, n, seg.bytes.byteLength);
      }));
    } else {
      for (const v of rig.videoIds) rig.putFrames(v, frames);
      await Promise.all(rig.videoIds.map((v) => rig.send(v, frames)));
    }
    const sampler = new CpuSampler(availableParallelism());
    rig.worker.start();
    const lo = Math.round(total * 0.1);
    const hi = Math.round(total * 0.9);
    const deadline = Date.now() + 600_000;
    while (trackedFrames(rig) < lo) {
      if (Date.now() > deadline || bench.interrupted()) throw new Error('backlog: no progress');
      await sleep(20);
    }
    rig.clock.reset();
    const t0 = Date.now();
    const cpu0 = process.cpuUsage();
    const from = trackedFrames(rig);
    let nextSay = Date.now() + 5000;
    while (trackedFrames(rig) < hi) {
      if (Date.now() > deadline || bench.interrupted()) throw new Error(`backlog: stalled at ${trackedFrames(rig)} of ${total} frames`);
      if (Date.now() > nextSay) {
        nextSay += 5000;
        bench.say(`${bench.clock()} ${trackedFrames(rig)} of ${total} frames tracked`);
      }
      await sleep(20);
    }
    const report = rig.clock.report();
    const t1 = Date.now();
    const cpu = process.cpuUsage(cpu0);
    const done = report.stages.track.items;
    sampler.stop();
    const window = sampler.window(t0, t1);
    const fps = (done / (t1 - t0)) * 1000;
    const capacity = simulatedGpuCapacityFps({ ...gpu, batchSize });
    const loadAverage = loadavg();
    const batches = rig.gpu.batchSizes;
    const meanBatch = batches.reduce((a, b) => a + b, 0) / Math.max(1, batches.length);
    const row = {
      scenario: 'backlog',
      source: o.source,
      ...(seg ? { segment: segmentFacts(o, seg) } : {}),
      commits: o.commits,
      batchSize,
      videos: o.videos,
      framesPerVideo: perVideo,
      framesTimed: done,
      framesBefore: from,
      seconds: (t1 - t0) / 1000,
      fps,
      gpuCapacityFps: capacity,
      ratio: fps / capacity,
      meanBatchFrames: meanBatch,
      gpuIdleShare: 1 - report.stages.infer.busyShare,
      bound: boundingStage(report),
      stages: report.stages,
      readAhead: rig.worker.worker.prefetchedFrames.readAhead,
      ...(seg ? { segmentsReadAhead: rig.worker.worker.prefetchedFrames.segments } : {}),
      detectedAhead: { ...rig.gpu.detectedAhead, gpuFramesRun: rig.gpu.framesRun, framesTracked: rig.gpu.framesTracked },
      benchProcessCoreMsPerFrame: (cpu.user + cpu.system) / 1000 / done,
      cpu: window,
      dynamodbLocalShareOfMachine: window.byRole['dynamodb-local'] / window.capacityCoreSeconds,
      ...(seg ? { decodeCpu: decodeCpuFacts(seg, fps, capacity, window) } : {}),
      loadAverageAtEnd: loadAverage,
    };
    bench.say(`${bench.clock()} backlog batch ${batchSize}: ${fps.toFixed(0)} frames/s of ${capacity.toFixed(0)} (${(row.ratio * 100).toFixed(0)}%), mean batch ${meanBatch.toFixed(1)}, GPU idle ${(row.gpuIdleShare * 100).toFixed(0)}%, bound: ${row.bound.stage} (${row.bound.why})`);
    for (const l of stageLines(report)) bench.say(`      ${l}`);
    bench.say(`      read ahead: ${row.readAhead.started} GETs, ${row.readAhead.used} used, ${row.readAhead.missed} missed; GETs per frame ${(row.stages.fetch.ops / Math.max(1, row.stages.track.items)).toFixed(3)}`);
    if (row.segmentsReadAhead) bench.say(`      segments read ahead: ${row.segmentsReadAhead.started} GETs, ${row.segmentsReadAhead.used} used, ${row.segmentsReadAhead.failed} failed, ${row.segmentsReadAhead.dropped} dropped`);
    bench.say(`      detected ahead: ${row.detectedAhead.started} started, ${row.detectedAhead.used} used, ${row.detectedAhead.takenQueued} taken before their turn, ${row.detectedAhead.dropped} dropped, ${row.detectedAhead.held} held; GPU ran ${row.detectedAhead.gpuFramesRun} frames for ${row.detectedAhead.framesTracked} tracked`);
    bench.say(`      bench process ${row.benchProcessCoreMsPerFrame.toFixed(2)} core-ms/frame; DynamoDB Local ${(row.dynamodbLocalShareOfMachine * 100).toFixed(0)}% of the machine; load average ${loadAverage.map((l) => l.toFixed(2)).join(' ')}`);
    if (seg) sayDecodeCpu(bench, decodeCpuFacts(seg, fps, capacity, window));
    await rig.worker.stop();
    return row;
  } finally {
    await rig.stop();
  }
}

async function live(o: Options, bench: Bench): Promise<Record<string, unknown>> {
  const gpu = { batchFixedMs: o.batchFixedMs, perFrameMs: o.perFrameMs };
  const rig = await SimRig.start({ videos: o.liveVideos, tunables: tunablesOf(o), gpu, latencyModel: latencyJson(o), width: 640, height: 480, commits: o.commits as 'model' });
  try {
    const seg = segmentsOf(o);
    const perVideo = seg ? Math.max(1, Math.round((o.fps * o.seconds) / seg.k)) * seg.k : Math.round(o.fps * o.seconds);
    const frames = Array.from({ length: perVideo }, (_, i) => i);
    rig.worker.start();
    await sleep(1000);
    const sentAt = new Map<string, number>();
    const sampler = new CpuSampler(availableParallelism());
    rig.clock.reset();
    const cpu0 = process.cpuUsage();
    const t0 = Date.now();
    const periodMs = 1000 / o.fps;
    // With segments: each camera closes segment s (frames [s k, (s + 1) k)) at t0 + phase +
    // (s + 1) k period, then uploads it (put + send, as the edge segmenter and the router).
    if (seg) await Promise.all(
      rig.videoIds.map(async (v, c) => {
        const phase = (c / rig.videoIds.length) * seg.k * periodMs;
        for (let n = 0; n < perVideo; n += seg.k) {
          const due = t0 + phase + (n + seg.k) * periodMs;
          const wait = due - Date.now();
          if (wait > 0) await sleep(wait);
          if (bench.interrupted()) return;
          sentAt.set(`${v}:${n}`, Date.now());
          rig.putSegment(v, n, seg.bytes, seg.k);
          await rig.sendSegment(v, n, seg.bytes.byteLength);
        }
      }),
    );
    // Each camera sends frame n at t0 + phase + n * period (its own phase), one message per frame.
    else await Promise.all(
      rig.videoIds.map(async (v, k) => {
        const phase = (k / rig.videoIds.length) * periodMs;
        for (const f of frames) {
          const due = t0 + phase + f * periodMs;
          const wait = due - Date.now();
          if (wait > 0) await sleep(wait);
          if (bench.interrupted()) return;
          // Uploaded as it is sent: a read ahead (decision 39) of a frame the camera has not
          // sent yet finds no object, as in S3, instead of a frame from the future.
          rig.putFrames(v, [f]);
          sentAt.set(`${v}:${f}`, Date.now());
          await rig.send(v, [f]);
        }
      }),
    );
    const sendEnd = Date.now();
    const total = perVideo * rig.videoIds.length;
    const deadline = Date.now() + 120_000;
    while (trackedFrames(rig) < total && Date.now() < deadline) await sleep(100);
    const report = rig.clock.report();
    const cpu = process.cpuUsage(cpu0);
    const t1 = Date.now();
    sampler.stop();
    // Drain the worker first: reading thousands of records while it commits can outlast DynamoDB Local's answers.
    await rig.worker.stop();
    const records: { videoId: string; frame: number; status: string; committedAtMs: number }[] = [];
    if (o.commits === 'model') records.push(...rig.modelRecords.values());
    else for (const v of rig.videoIds) records.push(...(await retry(() => allResults(rig.h.results, v))));
    const latencies: number[] = [];
    let notOk = 0;
    for (const r of records) {
      if (r.status !== 'ok') notOk++;
      // With segments: from the segment's upload (put + send) to its last frame's record landed.
      const s = seg ? ((r.frame + 1) % seg.k === 0 ? sentAt.get(`${r.videoId}:${r.frame + 1 - seg.k}`) : undefined) : sentAt.get(`${r.videoId}:${r.frame}`);
      const landed = rig.landedAt.get(r.committedAtMs);
      if (s !== undefined && landed !== undefined) latencies.push(landed - s);
    }
    const workerLatencies = rig.worker.metrics.filter((m) => m.name === METRIC_NAMES.worker.uploadToRecordMs).map((m) => m.value);
    const window = sampler.window(t0, t1);
    const row = {
      scenario: 'live',
      source: o.source,
      ...(seg ? { segment: segmentFacts(o, seg) } : {}),
      commits: o.commits,
      videos: o.liveVideos,
      fps: o.fps,
      seconds: o.seconds,
      framesSent: seg ? sentAt.size * seg.k : sentAt.size,
      ...(seg ? { segmentsSent: sentAt.size, latencyIs: "segment upload (put + send) -> its last frame's record landed" } : { latencyIs: 'frame send -> record landed' }),
      latencySamples: latencies.length,
      framesRecorded: records.length,
      recordsNotOk: notOk,
      everyFrameRecorded: records.length === total && notOk === 0,
      recordsWrittenTwice: rig.doubledRecords,
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
      latencyMaxMs: Math.max(...latencies),
      // The worker's own UploadToRecordMs (decision 44; every sample, as the harness keeps
      // them): here eventTime is the send, so it should agree with the figures above.
      workerUploadToRecordP50Ms: percentile(workerLatencies, 50),
      workerUploadToRecordP99Ms: percentile(workerLatencies, 99),
      workerUploadToRecordSamples: workerLatencies.length,
      sendSpreadMs: sendEnd - t0,
      gpuIdleShare: 1 - report.stages.infer.busyShare,
      meanBatchFrames: rig.gpu.batchSizes.reduce((a, b) => a + b, 0) / Math.max(1, rig.gpu.batchSizes.length),
      bound: boundingStage(report),
      stages: report.stages,
      readAhead: rig.worker.worker.prefetchedFrames.readAhead,
      ...(seg ? { segmentsReadAhead: rig.worker.worker.prefetchedFrames.segments } : {}),
      detectedAhead: { ...rig.gpu.detectedAhead, gpuFramesRun: rig.gpu.framesRun, framesTracked: rig.gpu.framesTracked },
      benchProcessCoreMsPerFrame: (cpu.user + cpu.system) / 1000 / Math.max(1, report.stages.track.items),
      cpu: window,
      dynamodbLocalShareOfMachine: window.byRole['dynamodb-local'] / window.capacityCoreSeconds,
      ...(seg ? { decodeCpu: decodeCpuFacts(seg, (report.stages.track.items / Math.max(1, t1 - t0)) * 1000, simulatedGpuCapacityFps({ ...gpu, batchSize: rig.h.tunables.inferenceBatchSize }), window) } : {}),
      loadAverageAtEnd: loadavg(),
    };
    bench.say(
      `${bench.clock()} live ${o.liveVideos} x ${o.fps} fps for ${o.seconds} s${seg ? ` in ${seg.k}-frame segments` : ''}: ${records.length}/${total} recorded (${notOk} not ok), ${seg ? 'segment upload -> last record' : 'send -> record'} p50 ${row.latencyP50Ms.toFixed(0)} ms, p99 ${row.latencyP99Ms.toFixed(0)} ms, max ${row.latencyMaxMs.toFixed(0)} ms; GPU idle ${(row.gpuIdleShare * 100).toFixed(0)}%, mean batch ${row.meanBatchFrames.toFixed(1)}`,
    );
    for (const l of stageLines(report)) bench.say(`      ${l}`);
    bench.say(`      read ahead: ${row.readAhead.started} GETs, ${row.readAhead.used} used, ${row.readAhead.missed} missed; GETs per frame ${(row.stages.fetch.ops / Math.max(1, row.stages.track.items)).toFixed(3)}`);
    if (row.segmentsReadAhead) bench.say(`      segments read ahead: ${row.segmentsReadAhead.started} GETs, ${row.segmentsReadAhead.used} used, ${row.segmentsReadAhead.failed} failed, ${row.segmentsReadAhead.dropped} dropped`);
    bench.say(`      detected ahead: ${row.detectedAhead.started} started, ${row.detectedAhead.used} used, ${row.detectedAhead.takenQueued} taken before their turn, ${row.detectedAhead.dropped} dropped, ${row.detectedAhead.held} held; GPU ran ${row.detectedAhead.gpuFramesRun} frames for ${row.detectedAhead.framesTracked} tracked`);
    bench.say(`      worker's UploadToRecordMs: p50 ${row.workerUploadToRecordP50Ms.toFixed(0)} ms, p99 ${row.workerUploadToRecordP99Ms.toFixed(0)} ms over ${row.workerUploadToRecordSamples} samples`);
    bench.say(`      bench process ${row.benchProcessCoreMsPerFrame.toFixed(2)} core-ms/frame; DynamoDB Local ${(row.dynamodbLocalShareOfMachine * 100).toFixed(0)}% of the machine; load average ${row.loadAverageAtEnd.map((l) => l.toFixed(2)).join(' ')}`);
    if (seg) {
      const f = segmentFacts(o, seg);
      bench.say(`      segment of ${seg.k} frames: processing time ${f.processingTimeMs.toFixed(0)} ms (k at the simulated GPU's per-frame time at full batches), target p99 <= ${(1000 + f.processingTimeMs).toFixed(0)} ms; p99 ${row.latencyP99Ms.toFixed(0)} ms; decode alone ${seg.decode.wallMsPerSegment.toFixed(0)} ms wall per segment on this machine`);
      sayDecodeCpu(bench, row.decodeCpu!);
    }
    return row;
  } finally {
    await rig.stop();
  }
}

/** The bench's segment (with `--source segments`): made and measured once per run, shared by every video (as every frame shares one JPEG). */
interface BenchSegment {
  readonly k: number;
  readonly spec: SegmentSpec;
  readonly bytes: Uint8Array;
  /** This machine's decode of it, alone, before the scenarios. */
  readonly decode: DecodeCost;
}
let benchSegment: BenchSegment | undefined;
const segmentsOf = (o: Options): BenchSegment | undefined => (o.source === 'segments' ? benchSegment : undefined);

/** The segment, and the processing time the latency target adds to 1 s: k frames at the simulated GPU's per-frame time at full batches. */
function segmentFacts(o: Options, seg: BenchSegment) {
  const capacity = simulatedGpuCapacityFps({ batchFixedMs: o.batchFixedMs, perFrameMs: o.perFrameMs, batchSize: 8 });
  return {
    frames: seg.k,
    seconds: o.segmentSeconds,
    width: seg.spec.width,
    height: seg.spec.height,
    container: 'mpegts',
    bytes: seg.bytes.byteLength,
    kbps: (seg.bytes.byteLength * 8) / o.segmentSeconds / 1000,
    processingTimeMs: (seg.k * 1000) / capacity,
    processingTimeIs: `k x the simulated GPU's per-frame time at batch 8 (${o.batchFixedMs} + 8 x ${o.perFrameMs} ms per 8 frames)`,
    decodeAlone: seg.decode,
  };
}

/**
 * What decoding costs this machine at the measured rate: the cores the decode alone needs
 * at `fps` (its core-ms per frame measured alone), and the rate this machine's cores could
 * decode at all, beside the simulated GPU's capacity: when that rate is below the capacity,
 * the machine's CPU, not the design, bounds the figure.
 */
function decodeCpuFacts(seg: BenchSegment, fps: number, capacity: number, window: ReturnType<CpuSampler['window']>) {
  const cores = availableParallelism();
  const coresForDecodeAtFps = (seg.decode.coreMsPerFrame * fps) / 1000;
  const coresForDecodeAtCapacity = (seg.decode.coreMsPerFrame * capacity) / 1000;
  const decodeOnlyMaxFps = (cores * 1000) / seg.decode.coreMsPerFrame;
  const machineBusyShare = window.machineBusyCoreSeconds / window.capacityCoreSeconds;
  return {
    coreMsPerFrameAlone: seg.decode.coreMsPerFrame,
    coresForDecodeAtMeasuredFps: coresForDecodeAtFps,
    coresForDecodeAtGpuCapacity: coresForDecodeAtCapacity,
    machineCores: cores,
    decodeOnlyMaxFpsOnThisMachine: decodeOnlyMaxFps,
    machineBusyShare,
    cpuBound: coresForDecodeAtCapacity > cores * 0.5 || machineBusyShare > 0.9,
  };
}

function sayDecodeCpu(bench: Bench, d: ReturnType<typeof decodeCpuFacts>): void {
  bench.say(
    `      decode CPU: ${d.coreMsPerFrameAlone.toFixed(2)} core-ms/frame alone -> ${d.coresForDecodeAtMeasuredFps.toFixed(2)} cores at the measured rate, ${d.coresForDecodeAtGpuCapacity.toFixed(2)} at the GPU's capacity, of ${d.machineCores}; ` +
      `this machine decodes at most ${d.decodeOnlyMaxFpsOnThisMachine.toFixed(0)} frames/s with nothing else; machine busy ${(d.machineBusyShare * 100).toFixed(0)}% -> ${d.cpuBound ? "the machine's CPU bounds the figure" : 'the CPU is not the bound'}`,
  );
}

/** A read retried a few times (DynamoDB Local on a loaded machine can time out). */
async function retry<T>(fn: () => Promise<T>, attempts = 5): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i >= attempts) throw e;
      await sleep(1000 * i);
    }
  }
}

/** Runs the scenarios; 0 when each ran. */
export async function runGpuSim(args: readonly string[], bench: Bench): Promise<number> {
  const o = parseFlags('gpu-sim.ts', FLAGS, args);
  if (!o) return 0;
  const rows: Record<string, unknown>[] = [];
  const load = loadavg();
  bench.say(`gpu-sim: simulated GPU ${o.batchFixedMs} ms + ${o.perFrameMs} ms/frame per batch; latency model scale ${o.latencyScale}; load average ${load.map((l) => l.toFixed(2)).join(' ')}`);
  const name = o.label ? `gpu-sim-${o.label}.json` : 'gpu-sim.json';
  bench.say(`commits on ${o.commits}; tunables ${JSON.stringify(tunablesOf(o))}`);
  if (o.source === 'segments') {
    const size = parseSize(o.segmentSize);
    const spec: SegmentSpec = { ...size, fps: o.fps, frames: Math.max(1, Math.round(o.fps * o.segmentSeconds)), ...(o.segmentKbps !== undefined ? { kbps: o.segmentKbps } : {}) };
    const bytes = encodeSegment(spec);
    const decode = await measureDecode(bytes, o.decodeRounds);
    benchSegment = { k: spec.frames, spec, bytes, decode };
    bench.say(
      `segments: ${spec.frames} frames (${o.segmentSeconds} s at ${o.fps} fps), ${spec.width}x${spec.height} H.264 in MPEG-TS, ${bytes.byteLength} bytes (${((bytes.byteLength * 8) / o.segmentSeconds / 1000).toFixed(0)} kbit/s); ` +
        `decoded alone (${decode.decoder}): ${decode.coreMsPerFrame.toFixed(2)} core-ms/frame, ${decode.wallMsPerSegment.toFixed(0)} ms per segment (median of ${decode.rounds}); load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
    );
  }
  // Written after every row, so a run cut short keeps what it measured.
  const save = () =>
    writeResult(join(RESULTS_DIR, name), { command: commandLine('gpu-sim.ts', args), date: new Date().toISOString(), machine: machine(), loadAverageAtStart: load, loadAverageAtEnd: loadavg(), latencyModel: latencyJson(o), tunables: tunablesOf(o), source: o.source, rows }, bench.say);
  if (o.scenario !== 'live') for (const b of o.batches.split(',').map(Number)) {
    rows.push(await backlog(o, b, bench));
    save();
  }
  if (o.scenario !== 'backlog') {
    rows.push(await live(o, bench));
    save();
  }
  return 0;
}

if (import.meta.main) await benchMain('gpu-sim', (bench) => runGpuSim(process.argv.slice(2), bench));
