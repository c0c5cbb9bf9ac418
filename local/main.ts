/**
 * `npm start`: the whole application on this machine, on local AWS emulators.
 *
 *   npm start -- [--model yolov8n.onnx [--classes names.txt]] [--port 4566] [--dynamodb-port 8000]
 *                [--prefix FrameAffinity] [--warm-slots N] [--worker-entry lab/worker-main.ts]
 *                [--no-router] [--no-janitor] [--no-event-relay] [--state-dir .local] [--quiet] [--help]
 *
 * (`START_USAGE` in start-args.ts says what each does.)
 *
 * Environment: LOCAL_PORT, LOCAL_DYNAMODB_PORT, LOCAL_PREFIX, LOCAL_STATE_DIR, and any
 * tunable by its variable (e.g. SLOT_COUNT=2). Ctrl-C / SIGTERM stops everything.
 */
import { createWriteStream, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEFAULT_TUNABLES, tunablesFromEnv, type Tunables } from '../core/config.ts';
import { REAL_MODEL_HINT } from '../gpu-worker/vision/demo-model-watch.ts';
import { divertJsonWrites, terminalLine } from './echo-filter.ts';
import type { PortRequest } from './emulators.ts';
import { parseStartArgs, START_USAGE, StartUsageError, type StartOptions } from './start-args.ts';
import { startLocalStack, type LocalStack } from './stack.ts';

const DEFAULT_S3_SQS_PORT = 4566;
const DEFAULT_DYNAMODB_PORT = 8000;

function portRequest(flag: string | undefined, envValue: string | undefined, fallback: number): PortRequest {
  const raw = flag ?? envValue;
  // An explicitly requested port must be honoured (or fail); a default one may move.
  if (raw === undefined || raw === '') return { preferred: fallback };
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65_535) throw new Error(`invalid port "${raw}"`);
  return n;
}

/** Tunables from the environment, then `--model` and `--classes` (which win over MODEL_URI / MODEL_CLASSES_URI). */
function tunableOverrides(o: StartOptions): Partial<Tunables> {
  const fromEnv = tunablesFromEnv(process.env);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(DEFAULT_TUNABLES) as (keyof Tunables)[]) if (fromEnv[k] !== DEFAULT_TUNABLES[k]) out[k] = fromEnv[k];
  if (o.model) out.modelUri = o.model;
  if (o.classes) out.modelClassesUri = o.classes;
  return out as Partial<Tunables>;
}

/**
 * Loads the user's model once here, on the CPU, before anything starts: a model whose
 * settings do not fit (class names vs output channels, input size, layout) is refused
 * with its reason in this terminal, rather than by every worker in a crash loop.
 * Returns the banner's description of it.
 */
async function checkModel(t: Partial<Tunables>): Promise<string> {
  if (!t.modelUri) return `the demo detector (finds only the demo's coloured squares; for real video, ${REAL_MODEL_HINT})`;
  // An s3:// model lives in the local bucket, which exists only once the stack runs: the workers check it.
  if (t.modelUri.startsWith('s3://')) return `${t.modelUri} (in the local bucket: each worker checks it when it loads)`;
  const { loadModel } = await import('../gpu-worker/vision/model.ts');
  const m = await loadModel({ uri: t.modelUri, ...(t.modelClassesUri ? { classesUri: t.modelClassesUri } : {}), preferCuda: false, inferenceThreads: 1 });
  await m.session.release();
  const names = m.info.classNames;
  const shown = names.length > 6 ? `${names.slice(0, 6).join(', ')}, ...` : names.join(', ');
  return `${t.modelUri}: input ${m.info.inputWidth}x${m.info.inputHeight}, ${names.length} classes (${shown}) from ${m.info.classNamesSource}`;
}

function banner(stack: LocalStack, model: string, quiet: boolean, stateDir: string): string {
  const e = stack.endpoints;
  const creds = `AWS_ACCESS_KEY_ID=${stack.credentials.accessKeyId} AWS_SECRET_ACCESS_KEY=${stack.credentials.secretAccessKey} AWS_DEFAULT_REGION=${stack.region} AWS_REGION=${stack.region}`;
  return [
    '',
    'Local stack ready.',
    `  S3 + SQS   ${e.s3}   (fauxqs; S3 is path-style)`,
    `  DynamoDB   ${e.dynamodb}   (DynamoDB Local)`,
    `  bucket     ${stack.wiring.bucket}`,
    `  tables     ${stack.wiring.leasesTable}, ${stack.wiring.resultsTable}`,
    `  queues     ${stack.wiring.ingestQueueUrl}`,
    `             ${stack.wiring.slotQueueUrlPrefix}{0..${stack.tunables.slotCount - 1}}.fifo`,
    `  router     ${stack.router ? 'polling the ingest queue' : 'not running'}; janitor ${stack.janitor ? 'running' : 'not running'}`,
    `  events     ${stack.wiring.eventsTable} -> ${stack.eventBusQueueUrl} (the bus's stand-in; relay ${stack.eventRelay ? 'running' : 'not running'})`,
    `  model      ${model}`,
    `  state      ${stack.stackFile}`,
    `  logs       ${join(stateDir, 'logs')} (every worker line and the metrics JSON${quiet ? '; --quiet: only warnings, errors and crashes are shown here' : ', which is not shown here'})`,
    ...stack.portFallbacks.map((f) => `  NOTE       ${f}`),
    '',
    'Upload a frame:',
    `  ${creds} \\`,
    `    aws --endpoint-url ${e.s3} s3 cp f.jpg s3://${stack.wiring.bucket}/frames/v1/000000.jpg`,
    'Read results:',
    `  ${creds} \\`,
    `    aws --endpoint-url ${e.dynamodb} dynamodb query --table-name ${stack.wiring.resultsTable} \\`,
    `    --key-condition-expression 'videoId = :v' --expression-attribute-values '{":v":{"S":"v1"}}'`,
    '',
    'Ctrl-C stops everything.',
    '',
  ].join('\n');
}

async function main(): Promise<number> {
  let o: StartOptions;
  try {
    const args = parseStartArgs(process.argv.slice(2));
    if (args.help) {
      console.log(START_USAGE);
      return 0;
    }
    o = args;
  } catch (e) {
    if (!(e instanceof StartUsageError)) throw e;
    console.error(`error: ${e.message} (npm start -- --help lists the options)`);
    return 2;
  }
  const tunables = tunableOverrides(o);
  const model = await checkModel(tunables);

  // The in-process router and janitor print JSON as in Lambda: to the log file, and to the
  // terminal only what local/echo-filter.ts lets through (never the metrics).
  const stateDir = resolve(o.stateDir ?? process.env.LOCAL_STATE_DIR ?? '.local');
  mkdirSync(join(stateDir, 'logs'), { recursive: true });
  const inProcessLog = createWriteStream(join(stateDir, 'logs', 'router-janitor.log'), { flags: 'a' });
  process.stdout.write = divertJsonWrites(process.stdout.write.bind(process.stdout), (t) => void inProcessLog.write(t), o.quiet) as typeof process.stdout.write;

  let stack: LocalStack | undefined;
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`\n${signal}: stopping the local stack...`);
    try {
      await stack?.stop();
      process.exit(0);
    } catch (err) {
      console.error(err);
      process.exit(1);
    }
  };
  // Installed before starting, so a Ctrl-C during start-up still cleans up.
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGHUP', () => void shutdown('SIGHUP'));

  stack = await startLocalStack({
    prefix: o.prefix ?? process.env.LOCAL_PREFIX,
    stateDir,
    tunables,
    ports: {
      s3sqs: portRequest(o.port, process.env.LOCAL_PORT, DEFAULT_S3_SQS_PORT),
      dynamodb: portRequest(o.dynamodbPort, process.env.LOCAL_DYNAMODB_PORT, DEFAULT_DYNAMODB_PORT),
    },
    workerEntry: o.workerEntry,
    routerHandler: o.router ? undefined : false,
    janitorHandler: o.janitor ? undefined : false,
    eventRelay: o.eventRelay,
    quiet: o.quiet,
    echoWorkerLine: (line) => terminalLine(line, o.quiet),
  });
  if (stopping) {
    await stack.stop();
    return 0;
  }

  // Optional: start workers up front so the first frames do not wait for a cold start.
  for (let slot = 0; slot < Math.min(o.warmSlots, stack.tunables.slotCount); slot++) {
    await stack.launcher.launch({ slot, launchSeq: 0, reason: 'warm start (--warm-slots)' });
  }
  console.log(banner(stack, model, o.quiet, stateDir));
  return -1;
}

main().then(
  (code) => {
    // -1: the stack runs until a signal stops it.
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    // A model or setting that does not fit is said in one line; the stack trace only when asked.
    const debug = process.env.AFFINITY_DEBUG === '1';
    console.error(`error: ${err instanceof Error ? (debug ? (err.stack ?? err.message) : err.message) : String(err)}`);
    process.exit(1);
  },
);
