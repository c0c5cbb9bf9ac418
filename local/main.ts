/**
 * `npm start`: the whole application on this machine, on local AWS emulators.
 *
 *   npm start -- [--port 4566] [--dynamodb-port 8000] [--prefix FrameAffinity]
 *                [--warm-slots N] [--worker-entry lab/worker-main.ts] [--no-router] [--no-janitor]
 *                [--no-event-relay]
 *                [--state-dir .local] [--quiet]
 *
 * Environment: LOCAL_PORT, LOCAL_DYNAMODB_PORT, LOCAL_PREFIX, LOCAL_STATE_DIR, and any
 * tunable by its variable (e.g. SLOT_COUNT=2). Ctrl-C / SIGTERM stops everything.
 */
import { parseArgs } from 'node:util';
import { DEFAULT_TUNABLES, tunablesFromEnv, type Tunables } from '../core/config.ts';
import type { PortRequest } from './emulators.ts';
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

function tunableOverrides(): Partial<Tunables> {
  const fromEnv = tunablesFromEnv(process.env);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(DEFAULT_TUNABLES) as (keyof Tunables)[]) if (fromEnv[k] !== DEFAULT_TUNABLES[k]) out[k] = fromEnv[k];
  return out as Partial<Tunables>;
}

function banner(stack: LocalStack): string {
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
    `  state      ${stack.stackFile}`,
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

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      'dynamodb-port': { type: 'string' },
      prefix: { type: 'string' },
      'state-dir': { type: 'string' },
      'worker-entry': { type: 'string' },
      'warm-slots': { type: 'string' },
      'no-router': { type: 'boolean' },
      'no-janitor': { type: 'boolean' },
      'no-event-relay': { type: 'boolean' },
      quiet: { type: 'boolean' },
    },
    allowPositionals: false,
  });

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
    prefix: values.prefix ?? process.env.LOCAL_PREFIX,
    stateDir: values['state-dir'] ?? process.env.LOCAL_STATE_DIR,
    tunables: tunableOverrides(),
    ports: {
      s3sqs: portRequest(values.port, process.env.LOCAL_PORT, DEFAULT_S3_SQS_PORT),
      dynamodb: portRequest(values['dynamodb-port'], process.env.LOCAL_DYNAMODB_PORT, DEFAULT_DYNAMODB_PORT),
    },
    workerEntry: values['worker-entry'],
    routerHandler: values['no-router'] ? false : undefined,
    janitorHandler: values['no-janitor'] ? false : undefined,
    eventRelay: !values['no-event-relay'],
    quiet: values.quiet,
  });
  if (stopping) {
    await stack.stop();
    return;
  }

  // Optional: start workers up front so the first frames do not wait for a cold start.
  const warm = Number(values['warm-slots'] ?? 0);
  for (let slot = 0; slot < Math.min(warm, stack.tunables.slotCount); slot++) {
    await stack.launcher.launch({ slot, launchSeq: 0, reason: 'warm start (--warm-slots)' });
  }
  console.log(banner(stack));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
