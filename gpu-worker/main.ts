/**
 * GPU worker entry point (ECS task, or a process spawned by the local stack).
 *
 * Environment: the wiring and tunables of core/config.ts, plus
 *   SLOT_ID           slot to claim (set by the TaskLauncher); unset = first free slot
 *   WORKER_ID         unique id for logs and the results' `worker` field (default host-pid-random)
 *   FRAME_PROCESSOR   `vision` (default: ONNX detector + tracker) or `stats` (no model)
 *   STATS_PROCESSOR_DELAY_MS  with `stats`: extra ms per batch (stands in for a slow model in tests)
 *   METRICS_FLUSH_INTERVAL_MS  how often EMF metric lines are written (default 10000)
 *   HEALTH_FILE       file touched on every confirmed heartbeat (container health check)
 *
 * Exit codes (core/config.ts): EXIT_DONE (0) drained on SIGTERM/SIGINT, idle for
 * WORKER_IDLE_EXIT_SECONDS (slot released), or no slot to claim; EXIT_LEASE_LOST (3) slot
 * lease lost. Neither is a crash to the janitor; a slot left with work is relaunched.
 */
import { hostname } from 'node:os';
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { Logger } from '@aws-lambda-powertools/logger';
import { EXIT_DONE, EXIT_LEASE_LOST, WORKER_ENV, tunablesFromEnv, wiringFromEnv } from '../core/config.ts';
import { createAwsClients } from '../core/aws/clients.ts';
import { LeaseStore } from '../core/lease-store.ts';
import { SlotQueues } from '../core/slot-queues.ts';
import { FrameStore } from '../core/frame-store.ts';
import type { FrameProcessor } from '../core/ports.ts';
import { MAX_POLL_WAIT_SECONDS, Worker } from './runtime/worker.ts';
import { EmfMetrics } from './runtime/emf-metrics.ts';
import { StatsProcessor } from './stats-processor.ts';
import { MODEL_SHA256_ENV } from '../core/model-pin.ts';


async function createProcessor(kind: string, tunables: ReturnType<typeof tunablesFromEnv>, log: Logger, s3: ReturnType<typeof createAwsClients>['s3']): Promise<FrameProcessor> {
  if (kind === 'stats') return new StatsProcessor(Number(process.env[WORKER_ENV.statsDelayMs] ?? 0));
  const { createVisionProcessor, visionOptionsFromTunables } = await import('./vision/index.ts');
  return await createVisionProcessor({
    ...visionOptionsFromTunables(tunables),
    modelSha256: process.env[MODEL_SHA256_ENV],
    s3Client: s3,
    logger: (line: string | object) => log.info(typeof line === 'string' ? line : 'vision', typeof line === 'string' ? {} : (line as Record<string, unknown>)),
  });
}

async function main(): Promise<number> {
  const env = process.env;
  const workerId = env[WORKER_ENV.workerId] || `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const slotText = env[WORKER_ENV.slotId];
  const slot = slotText !== undefined && slotText !== '' ? Number(slotText) : undefined;
  const log = new Logger({ serviceName: 'worker', persistentKeys: { workerId, slot } });
  const healthFile = env[WORKER_ENV.healthFile];
  const wiring = wiringFromEnv(env);
  const tunables = tunablesFromEnv(env);
  const clients = createAwsClients(env);
  const metrics = new EmfMetrics(wiring.metricsNamespace, { service: 'worker' }, Number(env[WORKER_ENV.metricsFlushIntervalMs] ?? 10_000));
  const processor = await createProcessor(env[WORKER_ENV.frameProcessor] ?? 'vision', tunables, log, clients.s3);

  const worker = new Worker({
    workerId,
    ...(slot !== undefined ? { slot } : {}),
    tunables,
    leases: LeaseStore.forWiring(clients.ddb, wiring, tunables),
    queues: new SlotQueues(clients.sqs, wiring.slotQueueUrlPrefix),
    frames: new FrameStore(clients.s3),
    bucket: wiring.bucket,
    results: { ddb: clients.ddb, resultsTable: wiring.resultsTable },
    processor,
    metrics,
    log,
    onHeartbeat: healthFile ? () => writeFileSync(healthFile, String(Date.now())) : undefined,
    onLeaseLost: (reason) => {
      // No further writes from here on (they would be fenced anyway). The run loop ends
      // within one poll and hands back what that poll received; this is the backstop.
      log.error('slot lease lost: stopping', { reason });
      setTimeout(() => process.exit(EXIT_LEASE_LOST), (MAX_POLL_WAIT_SECONDS + 3) * 1000).unref();
    },
  });
  const onSignal = (signal: string) => {
    log.info('signal received: draining', { signal });
    worker.requestStop();
  };
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  process.once('SIGINT', () => onSignal('SIGINT'));
  const reason = await worker.run();
  log.info('worker stopped', { reason });
  await metrics.close();
  return reason === 'lease-lost' ? EXIT_LEASE_LOST : EXIT_DONE;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    console.error(JSON.stringify({ level: 'ERROR', message: 'worker crashed', error: String(e), stack: (e as Error)?.stack }));
    process.exit(1);
  },
);
