/**
 * The whole application on one machine: emulators, resources, the router behind an
 * SQS event source, the janitor on a schedule, and workers as child processes.
 * `npm start` (local/main.ts), the integration tests and the CLI all start it here.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DEFAULT_TUNABLES, WORKER_ENV, routerMaxConcurrencyOf, slotQueueUrl, tunablesToEnv, validateTunables, wiringToEnv } from '../core/config.ts';
import { setTaskLauncher } from '../core/fleet/launcher-registry.ts';
import { createAwsClientsFrom } from '../core/aws/clients.ts';
import { LOCAL_CREDENTIALS, resolvePort, startDynamoDbLocal, startFauxqsEmulator } from './emulators.ts';
import { lambdaContext, SqsEventSource, type ScheduledHandler, type SqsHandler } from './event-source.ts';
import { AsyncInvoker, ScheduledInvoker } from './eventbridge-invokers.ts';
import { LocalTaskLauncher, localAwsEnv, type LocalEndpoints, type WorkerInfo } from './local-task-launcher.ts';
import { randomUUID } from 'node:crypto';
import { constants as osConstants } from 'node:os';
import { ensureDemoModel } from '../gpu-worker/vision/index.ts';
import { OrphanGuard } from './orphan-guard.ts';
import { createLocalResources } from './resources.ts';
import { S3Notifier } from './s3-notifications.ts';
import { startLocalEventRelay } from './event-relay.ts';
import { installLabInstrumentation } from '../lab/aws/instrumentation.ts';
export type { NotificationFault, NotificationFaultFn, NotificationCounts } from './s3-notifications.ts';

export { clientConfig } from './stack-types.ts';
export type { LocalCredentials, LocalStack, LocalStackOptions, StackFile } from './stack-types.ts';
import { clientConfig, type LocalCredentials, type LocalStack, type LocalStackOptions, type StackFile } from './stack-types.ts';

const DEFAULT_PREFIX = 'FrameAffinity';
const DEFAULT_REGION = 'us-east-1';

/** Starts the local stack; on any failure everything started so far is stopped again. */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  // The in-process router and janitor get the lab's AWS_FAULT_INJECTION / AWS_LATENCY_MODEL
  // when the environment asks for them, as the workers do through lab/worker-main.ts.
  installLabInstrumentation();
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  const region = options.region ?? DEFAULT_REGION;
  const requested = validateTunables({ ...DEFAULT_TUNABLES, ...options.tunables });
  // Workers run the demo model unless told otherwise; build it once here rather than in
  // every worker at once.
  const tunables = requested.modelUri ? requested : validateTunables({ ...requested, modelUri: await ensureDemoModel() });
  const credentials: LocalCredentials = { ...(options.credentials ?? LOCAL_CREDENTIALS) };
  const stateDir = resolve(options.stateDir ?? '.local');
  const stackFile = join(stateDir, 'stack.json');
  const log = options.log ?? ((line: string) => (options.quiet ? undefined : console.log(line)));

  const cleanups: (() => Promise<void> | void)[] = [];
  const runCleanups = async () => {
    while (cleanups.length > 0) {
      const c = cleanups.pop()!;
      try {
        await c();
      } catch (err) {
        log(`[local] cleanup failed: ${String(err)}`);
      }
    }
  };
  const guard = new OrphanGuard();
  cleanups.push(() => guard.dispose());
  let exitKill: () => void = () => {};
  const onExit = () => exitKill();
  process.once('exit', onExit);
  cleanups.push(() => void process.off('exit', onExit));

  try {
    const external = options.dynamodb;
    const [s3sqsPort, ddbPort] = await Promise.all([resolvePort(options.ports?.s3sqs), external ? undefined : resolvePort(options.ports?.dynamodb)]);
    const portFallbacks: string[] = [];
    if (s3sqsPort.fellBack) portFallbacks.push(`S3/SQS port ${JSON.stringify(options.ports?.s3sqs)} was busy; using ${s3sqsPort.port}`);
    if (ddbPort?.fellBack) portFallbacks.push(`DynamoDB port ${JSON.stringify(options.ports?.dynamodb)} was busy; using ${ddbPort.port}`);

    // The notifier needs an SQS client for the fauxqs endpoint, which exists only after
    // listening, and it must hook into the app before listening: give it a lazy client.
    let sqsForNotifier: SQSClient | undefined;
    const lazySqs = { send: (...args: Parameters<SQSClient['send']>) => sqsForNotifier!.send(...args) } as unknown as SQSClient;
    const notifier = new S3Notifier({
      region,
      sqs: lazySqs,
      onError: (err, detail) => log(`[s3-notifications] ${detail}: ${String(err)}`),
      notificationFault: options.notificationFault,
    });

    const [dynamo, fauxqs] = await Promise.all([
      external
        ? { endpoint: external.endpoint, pid: external.pid, killNow: () => {} }
        : startDynamoDbLocal({ port: ddbPort!.port, region }).then((d) => {
            guard.watch(d.pid, { group: true });
            cleanups.push(() => d.stop());
            return d;
          }),
      startFauxqsEmulator({ port: s3sqsPort.port, region, configure: (app) => notifier.attach(app) }).then((f) => {
        cleanups.push(() => f.stop());
        return f;
      }),
    ]);
    const direct: LocalEndpoints = { s3: fauxqs.endpoint, sqs: fauxqs.endpoint, dynamodb: dynamo.endpoint };
    const endpoints: LocalEndpoints = options.wrapEndpoints ? await options.wrapEndpoints(direct) : direct;
    const clients = createAwsClientsFrom(clientConfig({ endpoints, region, credentials }));
    if (endpoints === direct) sqsForNotifier = clients.sqs;
    else {
      const directClients = createAwsClientsFrom(clientConfig({ endpoints: direct, region, credentials }));
      sqsForNotifier = directClients.sqs;
      cleanups.push(() => directClients.destroy());
    }
    cleanups.push(() => clients.destroy());
    cleanups.push(() => notifier.flush());

    const resources = await createLocalResources({
      prefix,
      region,
      tunables,
      dynamodb: clients.dynamodb,
      sqs: clients.sqs,
      s3: clients.s3,
      notifier,
    });
    const { wiring } = resources;

    // The handlers read their configuration from the environment at import / first use.
    const env: Record<string, string> = { ...wiringToEnv(wiring), ...tunablesToEnv(tunables), ...localAwsEnv(endpoints, region, credentials) };
    const saved = new Map<string, string | undefined>();
    for (const [k, v] of Object.entries(env)) {
      saved.set(k, process.env[k]);
      if (v === '') delete process.env[k];
      else process.env[k] = v;
    }
    cleanups.push(() => {
      for (const [k, v] of saved) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    });

    let writeStackFile = () => {};
    let onWorkerExit: (w: WorkerInfo) => void = () => {};
    const launcher = new LocalTaskLauncher({
      wiring,
      tunables,
      endpoints,
      credentials,
      entry: options.workerEntry,
      env: options.workerEnv,
      logDir: join(stateDir, 'logs'),
      quiet: options.quiet,
      ...(options.echoWorkerLine ? { echo: options.echoWorkerLine } : {}),
      onLine: options.onWorkerLine ? (line) => options.onWorkerLine!(line) : undefined,
      guard,
      onChange: () => writeStackFile(),
      onExit: (w) => onWorkerExit(w),
    });
    cleanups.push(() => launcher.stopAll(options.workerStopGraceMs ?? 10_000));
    exitKill = () => {
      launcher.killAllNow();
      dynamo.killNow();
    };
    setTaskLauncher(launcher);
    cleanups.push(() => setTaskLauncher(undefined));

    const routerHandler =
      options.routerHandler === false ? undefined : (options.routerHandler ?? (await importHandler<SqsHandler>('../functions/router/handler.ts', log)));
    let router: SqsEventSource | null = null;
    if (routerHandler) {
      router = new SqsEventSource({
        sqs: clients.sqs,
        queueUrl: resources.ingest.url,
        queueArn: resources.ingest.arn,
        region,
        handler: routerHandler,
        functionName: `${prefix}-router`,
        batchSize: tunables.routerBatchSize,
        // As the deployed event source: the window applies to every batch size, so local
        // latencies and call counts are the ones the same settings give in AWS.
        batchWindowSeconds: tunables.routerBatchWindowSeconds,
        concurrency: Math.min(routerMaxConcurrencyOf(tunables), options.routerConcurrency ?? 2),
        waitTimeSeconds: options.routerWaitTimeSeconds,
        // Lambda's timeout must stay under the ingest visibility timeout.
        timeoutMs: Math.max(1_000, (tunables.ingestVisibilitySeconds * 1_000) / 2),
        onError: (err, detail) => log(`[router] ${detail}: ${err instanceof Error ? (err.stack ?? err.message) : JSON.stringify(err)}`),
      }).start();
      const r = router;
      cleanups.push(() => r.stop());
    }

    const janitorHandler =
      options.janitorHandler === false ? undefined : (options.janitorHandler ?? (await importHandler<ScheduledHandler>('../functions/janitor/handler.ts', log)));
    let janitor: ScheduledInvoker | null = null;
    if (janitorHandler) {
      janitor = new ScheduledInvoker({
        handler: janitorHandler,
        intervalMs: options.janitorIntervalMs ?? 5_000,
        region,
        functionName: `${prefix}-janitor`,
        onError: (err) => log(`[janitor] ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`),
      }).start();
      const j = janitor;
      cleanups.push(() => j.stop());
      // As in AWS, where an EventBridge rule runs the janitor when ECS reports a worker
      // task STOPPED: a crashed worker's slot gets its successor at once.
      let stopping = false;
      cleanups.push(() => {
        stopping = true;
      });
      // The event names the worker (its WORKER_ID in the container overrides) and its exit
      // code, so the janitor expires the slot lease only if this worker still held it. Every
      // stop, exit 0 included, as the rule in AWS matches every STOPPED task: a worker that
      // gave up claiming its slot exits 0, and its stop is what voids its launch grant.
      // A failed run is retried as Lambda retries an asynchronous invocation.
      const stoppedEvents = new AsyncInvoker(
        (event) => Promise.resolve(janitorHandler(event as never, lambdaContext(`${prefix}-janitor`, region, 60_000))),
        (err, attempt, willRetry) => log(`[janitor] task-stopped run ${attempt} failed${willRetry ? ' (Lambda retries it)' : ''}: ${String(err)}`),
      );
      cleanups.push(() => stoppedEvents.stop());
      onWorkerExit = (w) => {
        if (stopping) return;
        const stoppedAt = new Date(w.exitedAtMs ?? Date.now()).toISOString();
        const event = {
          version: '0',
          id: randomUUID(),
          'detail-type': 'ECS Task State Change',
          source: 'aws.ecs',
          account: '000000000000',
          time: new Date().toISOString(),
          region,
          resources: [],
          detail: {
            clusterArn: 'local',
            lastStatus: 'STOPPED',
            startedBy: `slot-${w.slot}`,
            executionStoppedAt: stoppedAt,
            stoppedAt,
            stoppedReason: `exit ${w.exitCode ?? w.exitSignal}`,
            // As ECS reports a container killed by a signal: 128 + its number.
            containers: [{ name: 'worker', exitCode: w.exitCode ?? 128 + (w.exitSignal ? (osConstants.signals[w.exitSignal] ?? 0) : 0) }],
            overrides: { containerOverrides: [{ name: 'worker', environment: [{ name: WORKER_ENV.workerId, value: w.workerId }] }] },
          },
        };
        stoppedEvents.send(event);
      };
    }

    const { queueUrl: eventBusQueueUrl, relay: eventRelay, stop: stopRelay } = await startLocalEventRelay({
      config: clientConfig({ endpoints, region, credentials }).dynamodb,
      clients,
      tableName: wiring.eventsTable,
      queueName: resources.names.eventBus,
      checkpointFile: join(stateDir, 'event-relay.json'),
      enabled: options.eventRelay !== false,
      log,
    });
    cleanups.push(stopRelay);

    const fileContent = (): StackFile => ({
      region,
      prefix,
      endpoints,
      credentials,
      bucket: wiring.bucket,
      tables: { results: wiring.resultsTable, leases: wiring.leasesTable, events: wiring.eventsTable },
      queues: {
        eventBus: eventBusQueueUrl,
        ingest: resources.ingest.url,
        ingestDlq: resources.ingestDlq.url,
        slots: resources.slots.map((s) => slotQueueUrl(wiring, s.slot)),
        slotDlqs: resources.slots.map((s) => s.dlq.url),
      },
      wiring,
      tunables,
      pids: {
        stack: process.pid,
        dynamodb: dynamo.pid,
        workers: launcher.workers().filter((w) => w.alive).map(({ slot, pid, workerId }) => ({ slot, pid, workerId })),
      },
      startedAt: new Date().toISOString(),
    });
    mkdirSync(stateDir, { recursive: true });
    let stackFileWritten = true;
    writeStackFile = () => {
      if (stackFileWritten) writeFileSync(stackFile, `${JSON.stringify(fileContent(), null, 2)}\n`);
    };
    writeStackFile();
    // Removed first on stop: a stack.json that outlives the stack misleads the CLI.
    cleanups.push(() => {
      stackFileWritten = false;
      rmSync(stackFile, { force: true });
    });

    let stopping: Promise<void> | undefined;
    return {
      region,
      prefix,
      wiring,
      tunables,
      endpoints,
      credentials,
      resources,
      clients,
      launcher,
      notifier,
      router,
      janitor,
      eventRelay,
      eventBusQueueUrl,
      stackFile,
      dynamodbPid: dynamo.pid,
      env,
      portFallbacks,
      stop: () => (stopping ??= runCleanups()),
    };
  } catch (err) {
    await runCleanups();
    throw err;
  }
}

/** Imports a Lambda handler module in-process; a missing module means "not built yet", so the stack runs without it. */
async function importHandler<H>(relativePath: string, log: (line: string) => void): Promise<H | undefined> {
  const url = new URL(relativePath, import.meta.url);
  try {
    const mod = (await import(url.href)) as { handler?: H };
    if (typeof mod.handler !== 'function') throw new Error(`${relativePath} exports no handler`);
    return mod.handler;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { url?: string };
    if (e.code === 'ERR_MODULE_NOT_FOUND' && String(e.message).includes(url.pathname)) {
      log(`[local] ${relativePath} does not exist yet; running without it`);
      return undefined;
    }
    throw err;
  }
}
