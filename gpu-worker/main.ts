/**
 * GPU worker entry point (ECS task, or a process spawned by the local stack).
 *
 * Environment: the wiring and tunables of core/config.ts, plus
 *   SLOT_ID           slot to claim (set by the TaskLauncher); unset = first free slot
 *   WORKER_ID         unique id for logs and the results' `worker` field (default host-pid-random)
 *   FRAME_PROCESSOR   `vision` (default: ONNX detector + tracker), or a kind a composition root
 *                     added through extensions.ts (the lab's `stats` and `simgpu`: lab/worker-main.ts)
 *   METRICS_FLUSH_INTERVAL_MS  how often EMF metric lines are written (default 10000)
 *   HEALTH_FILE       file touched on every confirmed heartbeat (container health check)
 *   MODEL_SHA256      SHA-256 (hex) the model at MODEL_URI must have (`modelSha256`); unset = not checked
 *   INFERENCE_THREAD_FAULT  test seam only: JSON {kind, onRun, onceFile?} making the inference
 *                     thread die (vision/inference-thread.ts InferenceThreadFault); with
 *                     onceFile, only the process that removes that file gets the fault
 *   AWS_CALL_LOG      bench call log (core/aws/instrumentation.ts)
 *   STAGE_REPORT_INTERVAL_MS  how often the per-stage accounting is logged (`stage accounting`,
 *                     runtime/stage-clock.ts; default 30000; also logged at exit)
 *
 * Exit codes (core/config.ts): EXIT_DONE (0) drained on SIGTERM/SIGINT, idle for
 * WORKER_IDLE_EXIT_SECONDS (slot released), or no slot to claim; EXIT_LEASE_LOST (3) slot
 * lease lost. Neither is a crash to the janitor; a slot left with work is relaunched.
 * EXIT_PROCESSOR_FAILED (4): the frame processor broke for good (its inference thread
 * died, `FrameProcessor.fatal`); the worker drained and exits so that another task takes
 * the slot, and the janitor treats the stop as a crash. 1: anything else that crashed it.
 *
 * The GPU image runs this module as it is. The local stack, benches and tests run it
 * through lab/worker-main.ts, which first adds the lab (extensions.ts): the `stats` and
 * `simgpu` processors, WORKER_CRASH_ON_KEY, AWS_FAULT_INJECTION and AWS_LATENCY_MODEL.
 */
import { DynamoDbResultsAdmin } from '../core/commit/dynamodb/results-admin.ts';
import { DynamoDbRecords } from '../core/commit/dynamodb/results-reader.ts';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { EXIT_DONE, EXIT_LEASE_LOST, EXIT_PROCESSOR_FAILED, WORKER_ENV, tunablesFromEnv, wiringFromEnv } from '../core/config.ts';
import { createAwsClients } from '../core/aws/clients.ts';
import { instrumentAwsClients } from '../core/aws/instrumentation.ts';
import { LeaseStore } from '../core/leases/dynamodb/lease-store.ts';
import { SlotQueues } from '../core/ingest/sqs/slot-queues.ts';
import { FrameStore } from '../core/ingest/s3/frame-store.ts';
import { MAX_POLL_WAIT_SECONDS, Worker } from './runtime/worker.ts';
import { EmfMetrics } from './runtime/emf-metrics.ts';
import { GpuSampler } from './runtime/gpu-sampler.ts';
import { describeDecoderChoice, type HardwarePreference } from './video/segment-decoder.ts';
import { METRIC_NAMES } from '../core/metric-names.ts';
import { StageClock, boundingStage } from './runtime/stage-clock.ts';
import { timeStages } from './runtime/stage-timing.ts';
import { RulesStore } from '../core/analytics/s3/rules-store.ts';
import { createProcessor, INFERENCE_THREAD_FAULT_ENV } from './processor-factory.ts';
import { MODEL_BUCKET_ENV, legacyModelWarning } from './vision/model-location.ts';
import { probeEntry, wrapPipeline } from './extensions.ts';
import { ProcessProbe } from './runtime/crash/probe-process.ts';
import { supervisedHooks } from './supervisor/child-ipc.ts';
import { isStandbySeat, StandbyWatch } from './supervisor/standby.ts';

/**
 * How long a worker whose processor broke may take to drain before it exits anyway: a
 * poll in progress (at most MAX_POLL_WAIT_SECONDS), the failing round, and the commit in
 * flight. Past it the slot lease runs out on its own, or the janitor expires it.
 */
const FATAL_DRAIN_BACKSTOP_SECONDS = MAX_POLL_WAIT_SECONDS + 40;

async function main(): Promise<number> {
  const env = process.env;
  const workerId = env[WORKER_ENV.workerId] || `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const slotText = env[WORKER_ENV.slotId];
  const slot = slotText !== undefined && slotText !== '' ? Number(slotText) : undefined;
  const log = new Logger({ serviceName: 'worker', persistentKeys: { workerId, slot } });
  const healthFile = env[WORKER_ENV.healthFile];
  const wiring = wiringFromEnv(env);
  const tunables = tunablesFromEnv(env);
  // The worker's composition root: the bench call log, and what an extension added (the lab's faults), when the environment asks for them.
  const clients = instrumentAwsClients(createAwsClients(env), env, 'worker');
  const metrics = new EmfMetrics(wiring.metricsNamespace, { service: 'worker' }, Number(env[WORKER_ENV.metricsFlushIntervalMs] ?? 10_000));
  let worker: Worker | undefined;
  // A broken processor fails every round: stop receiving, drain (the slot is handed off at
  // once) and exit, rather than keep a slot that heartbeats while nothing gets done.
  const onFatal = (reason: string) => {
    log.error('frame processor broken: draining, then exiting', { reason, exitCode: EXIT_PROCESSOR_FAILED });
    worker?.requestStop();
    setTimeout(() => process.exit(EXIT_PROCESSOR_FAILED), FATAL_DRAIN_BACKSTOP_SECONDS * 1000).unref();
  };
  // Per-stage accounting, always on (a few additions per call): where the time goes.
  const clock = new StageClock();
  // Where segments will decode (issue 43), said and counted at start as the provider is: the
  // expected choice (a CUDA device opened, or why not). Before the model loads: FFmpeg can take
  // the GPU's primary context (shared with ONNX Runtime) only if it activates it first. The
  // frames then tell the truth: the segment reader logs and counts every change, per video
  // with the reason.
  const decoderChoice = describeDecoderChoice(tunables.videoDecoder as HardwarePreference);
  const choiceFields = { videoDecoder: tunables.videoDecoder, decoder: decoderChoice.decoder, ...(decoderChoice.note ? { note: decoderChoice.note } : {}) };
  if (decoderChoice.decoder === 'cpu-fallback') log.warn('segment decoder choice: NVDEC asked for, no CUDA device', choiceFields);
  else log.info('segment decoder choice', choiceFields);
  metrics.count(METRIC_NAMES.worker.segmentDecoderInUse, 1, { Decoder: decoderChoice.decoder });
  // A model still under the frame bucket's old models/ (decision 78): said at every start, until it is moved.
  const legacyModel = legacyModelWarning(tunables.modelUri, wiring.bucket, env[MODEL_BUCKET_ENV]);
  if (legacyModel) log.warn(legacyModel.msg, { modelUri: legacyModel.modelUri, moveTo: legacyModel.moveTo, fix: legacyModel.fix });
  const created = await createProcessor(env[WORKER_ENV.frameProcessor] ?? 'vision', tunables, log, clients.s3, metrics, onFatal, clock);
  // What an extension wraps around them (the lab's crash-on-key seam); nothing in the image.
  const plain = wrapPipeline({ frames: new FrameStore(clients.s3), processor: created }, env);
  const { frames: timedFrames, processor, queues, leases } = timeStages(
    { ...plain, queues: new SlotQueues(clients.sqs, wiring.slotQueueUrlPrefix), leases: LeaseStore.forWiring(clients.ddb, wiring, tunables) },
    clock,
  );
  // The worker hedges its own GETs (fetchHedgeMs, decision 38).
  const frames = timedFrames;
  // A worker process under a hot spare's supervisor (decision 75) reports its claim,
  // heartbeats and receipt handles; a spare waits for its promotion.
  const supervised = supervisedHooks(env[WORKER_ENV.supervisedRole]);
  // A standby (decision 75): launched for a seat past the slots, it takes a lapsed slot when one needs it.
  const seat = isStandbySeat(slot, tunables) ? slot : undefined;
  const standbyWatch =
    seat !== undefined ? new StandbyWatch({ workerId: `${workerId}/seat`, seat, tunables, leases, metrics, log, now: Date.now }) : undefined;
  let stopping = false;
  const reportStages = () => {
    const report = clock.report();
    // Reads ahead (decision 39): how many were used and how many were wasted GETs.
    log.info('stage accounting', { ...report, bound: boundingStage(report), cpuUs: process.cpuUsage(), readAhead: worker?.prefetchedFrames.readAhead });
  };
  setInterval(reportStages, Number(env.STAGE_REPORT_INTERVAL_MS ?? 30_000)).unref();
  // Once a minute: the provider in use (the WorkerOnCpu alarm), where segments decode (the
  // WorkerDecodingOnCpu alarm: the videos' placements, or the start choice before any) and,
  // where nvidia-smi is there, the GPU's utilisation, NVDEC utilisation and memory (issue 35,
  // item 4). Silent without nvidia-smi.
  const gpu = new GpuSampler({
    metrics,
    provider: () => processor.provider,
    decoders: () => {
      const inUse = worker?.segmentDecoders ?? [];
      return inUse.length > 0 ? inUse : [decoderChoice.decoder];
    },
  }).start();

  worker = new Worker({
    workerId,
    ...(slot !== undefined && seat === undefined ? { slot } : {}),
    tunables,
    leases,
    queues: supervised ? supervised.wrapQueues(queues) : queues,
    ...(supervised?.standBy ? { standBy: supervised.standBy } : standbyWatch ? { standBy: () => standbyWatch.wait(() => stopping) } : {}),
    ...(supervised ? { onClaimed: supervised.onClaimed } : {}),
    frames,
    bucket: wiring.bucket,
    records: new DynamoDbRecords({ ddb: clients.ddb, resultsTable: wiring.resultsTable }),
    replayDeletes: new DynamoDbResultsAdmin({ ddb: clients.ddb, resultsTable: wiring.resultsTable, eventsTable: wiring.eventsTable }),
    processor,
    // The crash probe's child (decision 41): the worker's environment, so it builds the same
    // processor; without the inference-thread fault seam, which is this process's alone.
    probe: new ProcessProbe({
      entry: probeEntry() ?? fileURLToPath(new URL('./probe-main.ts', import.meta.url)),
      env: { ...env, [WORKER_ENV.workerId]: workerId, [INFERENCE_THREAD_FAULT_ENV]: '' },
      log,
    }),
    rules: new RulesStore({ s3: clients.s3, bucket: wiring.bucket, refreshMs: tunables.rulesRefreshSeconds * 1000, log, metrics }),
    metrics,
    log,
    onHeartbeat: (expiresAtMs) => {
      if (healthFile) writeFileSync(healthFile, String(Date.now()));
      supervised?.onHeartbeat(expiresAtMs);
    },
    onLeaseLost: (reason) => {
      // No further writes from here on (they would be fenced anyway). The run loop ends
      // within one poll and hands back what that poll received; this is the backstop.
      log.error('slot lease lost: stopping', { reason });
      setTimeout(() => process.exit(EXIT_LEASE_LOST), (MAX_POLL_WAIT_SECONDS + 3) * 1000).unref();
    },
  });
  const onSignal = (signal: string) => {
    stopping = true;
    log.info('signal received: draining', { signal });
    worker.requestStop();
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  const reason = await worker.run();
  reportStages();
  log.info('worker stopped', { reason, ...(processor.fatal ? { processorFatal: processor.fatal } : {}) });
  gpu.stop();
  await metrics.close();
  if (processor.fatal) return EXIT_PROCESSOR_FAILED;
  return reason === 'lease-lost' ? EXIT_LEASE_LOST : EXIT_DONE;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(JSON.stringify({ level: 'ERROR', message: 'worker crashed', error: String(e), stack: (e as Error)?.stack }));
    process.exit(1);
  },
);
