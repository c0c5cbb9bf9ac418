/**
 * The baseline's resources and worker processes on a running local stack: one shared SQS
 * FIFO queue (the seed's `cv-frame-queue`, group = video), a lock table and a results
 * table, the producer's send, and N worker processes ({@link ./worker.ts}).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { CreateQueueCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { tunablesToEnv } from '../../core/config.ts';
import { RESULTS_TABLE } from '../../core/resources.ts';
import { localAwsEnv } from '../../local/local-task-launcher.ts';
import { createTableInput } from '../../local/resources.ts';
import type { LocalStack } from '../../local/stack.ts';
import type { BaselineMessage } from './worker.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

/** The seed's values (its `.env`), and the visibility timeout the issue names for it. */
export const SEED_SETTINGS = Object.freeze({
  /** `LOCK_TTL_SECONDS`. */
  lockTtlSeconds: 60,
  /** `LOCK_RENEWAL_INTERVAL_SECONDS`. */
  renewalSeconds: 20,
  /** `PROCESSING_IDLE_TIMEOUT_SECONDS`. */
  idleSeconds: 30,
  /** The queue's visibility timeout (SQS's default; the seed relies on it expiring). */
  visibilitySeconds: 30,
});

export interface BaselineResources {
  readonly queueUrl: string;
  readonly lockTable: string;
  readonly resultsTable: string;
}

/**
 * Creates (names ending in `suffix`, so that runs do not share a queue) the shared FIFO queue (no redrive policy: a message skipped many times must not
 * be dead-lettered, the stronger choice), the lock table (`pk` S) and a results table of
 * the same shape as ours.
 */
export async function createBaselineResources(stack: LocalStack, visibilitySeconds: number = SEED_SETTINGS.visibilitySeconds, suffix = ''): Promise<BaselineResources> {
  const prefix = `${stack.prefix}-baseline${suffix}`;
  const q = await stack.clients.sqs.send(
    new CreateQueueCommand({
      QueueName: `${prefix}-frames.fifo`,
      Attributes: { FifoQueue: 'true', VisibilityTimeout: String(visibilitySeconds), ReceiveMessageWaitTimeSeconds: '20' },
    }),
  );
  const lockTable = `${prefix}-locks`;
  const resultsTable = `${prefix}-results`;
  await stack.clients.dynamodb.send(
    new CreateTableCommand({
      TableName: lockTable,
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await stack.clients.dynamodb.send(new CreateTableCommand(createTableInput(resultsTable, RESULTS_TABLE)));
  return { queueUrl: q.QueueUrl!, lockTable, resultsTable };
}

/**
 * The producer's message for one frame, as the seed's body, sent with group = video and
 * deduplication id = video:frame (the stronger choice: a repeated send is dropped by SQS).
 * The caller counts it as one AWS call.
 */
export async function sendFrameMessage(stack: LocalStack, queueUrl: string, m: { videoId: string; frame: number; bucket: string; key: string }): Promise<void> {
  const body: BaselineMessage = {
    message_id: `${m.videoId}:${m.frame}`,
    video_id: m.videoId,
    frame_id: m.frame,
    timestamp: new Date().toISOString(),
    s3_bucket: m.bucket,
    s3_key: m.key,
  };
  await stack.clients.sqs.send(
    new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify(body), MessageGroupId: m.videoId, MessageDeduplicationId: `${m.videoId}:${m.frame}` }),
  );
}

/** One line of a worker's events file. */
export interface BaselineEvent {
  readonly t: number;
  readonly w: string;
  readonly e: 'ready' | 'recv' | 'lock' | 'skip' | 'commit' | 'release' | 'lost';
  readonly v?: string;
  readonly f?: number;
  /** `recv`: messages returned. */
  readonly n?: number;
  /** `recv`: how long the call took. */
  readonly ms?: number;
}

/**
 * ReceiveMessage calls SQS would not have answered: fauxqs wakes every waiting long poll on
 * each send to a FIFO queue, even when the message's group is blocked by a message in
 * flight, and the poll then returns empty at once; SQS keeps such a poll waiting (up to its
 * 20 s). Returns the empty receives that came back early and how many 20-s polls would have
 * covered the same waiting time, so a call count can be set to what SQS would have seen.
 */
export function earlyEmptyReceives(events: readonly BaselineEvent[], waitSeconds = 20): { early: number; asLongPolls: number } {
  const byWorker = new Map<string, number>();
  let early = 0;
  for (const e of events) {
    if (e.e !== 'recv' || e.n !== 0 || (e.ms ?? 0) >= waitSeconds * 1000 - 500) continue;
    early++;
    byWorker.set(e.w, (byWorker.get(e.w) ?? 0) + (e.ms ?? 0));
  }
  let asLongPolls = 0;
  for (const waited of byWorker.values()) asLongPolls += Math.ceil(waited / (waitSeconds * 1000));
  return { early, asLongPolls };
}

export interface BaselineWorker {
  readonly workerId: string;
  readonly pid: number;
  readonly child: ChildProcess;
  alive: boolean;
}

export interface BaselineFleetOptions {
  readonly stack: LocalStack;
  readonly resources: BaselineResources;
  readonly workers: number;
  /** Events of every worker, JSON lines (appended; the caller truncates between runs). */
  readonly eventsFile: string;
  /** AWS_CALL_LOG for the workers' clients. */
  readonly callLog?: string;
  /** Extra environment (FRAME_PROCESSOR, ...). */
  readonly env?: Record<string, string>;
  readonly settings?: Partial<typeof SEED_SETTINGS>;
  /** Receives the workers' stderr/stdout lines. */
  readonly onLine?: (line: string) => void;
}

/** N baseline workers as child processes. */
export class BaselineFleet {
  readonly workers: BaselineWorker[] = [];
  readonly #o: BaselineFleetOptions;
  #next = 0;

  constructor(options: BaselineFleetOptions) {
    this.#o = options;
  }

  /** Starts one worker; resolves when it has loaded its processor (its `ready` event). */
  async spawnOne(): Promise<BaselineWorker> {
    const o = this.#o;
    const s = { ...SEED_SETTINGS, ...o.settings };
    const workerId = `baseline-w${++this.#next}`;
    const child = spawn(process.execPath, [join(HERE, 'worker.ts')], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...localAwsEnv(o.stack.endpoints, o.stack.region, o.stack.credentials),
        ...tunablesToEnv(o.stack.tunables),
        ...o.env,
        ...(o.callLog ? { AWS_CALL_LOG: o.callLog } : {}),
        BASELINE_QUEUE_URL: o.resources.queueUrl,
        BASELINE_LOCK_TABLE: o.resources.lockTable,
        BASELINE_RESULTS_TABLE: o.resources.resultsTable,
        BASELINE_WORKER_ID: workerId,
        BASELINE_EVENTS_FILE: o.eventsFile,
        BASELINE_LOCK_TTL_SECONDS: String(s.lockTtlSeconds),
        BASELINE_RENEWAL_SECONDS: String(s.renewalSeconds),
        BASELINE_IDLE_SECONDS: String(s.idleSeconds),
      },
    });
    const w: BaselineWorker = { workerId, pid: child.pid!, child, alive: true };
    child.once('exit', () => {
      w.alive = false;
    });
    for (const stream of [child.stdout!, child.stderr!]) {
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        for (const line of chunk.split('\n')) if (line) o.onLine?.(`[${workerId}] ${line}`);
      });
    }
    this.workers.push(w);
    const until = Date.now() + 120_000;
    while (!readEvents(o.eventsFile).some((e) => e.e === 'ready' && e.w === workerId)) {
      if (!w.alive) throw new Error(`${workerId} exited before it was ready`);
      if (Date.now() > until) throw new Error(`${workerId} not ready after 120 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
    return w;
  }

  /** Starts the fleet's N workers, one after another (model loading shares the CPU). */
  async start(): Promise<void> {
    for (let i = 0; i < this.#o.workers; i++) await this.spawnOne();
  }

  /** Sends a signal to one worker (SIGKILL: `kill -9`). */
  kill(pid: number, signal: NodeJS.Signals): void {
    process.kill(pid, signal);
  }

  /** SIGTERM to every live worker, SIGKILL after `graceMs`. */
  async stop(graceMs = 3_000): Promise<void> {
    const live = this.workers.filter((w) => w.alive);
    for (const w of live) w.child.kill('SIGTERM');
    const until = Date.now() + graceMs;
    while (live.some((w) => w.alive) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    for (const w of live) if (w.alive) w.child.kill('SIGKILL');
  }
}

/** Every event in a fleet's events file (a torn last line is skipped). */
export function readEvents(file: string): BaselineEvent[] {
  if (!existsSync(file)) return [];
  const out: BaselineEvent[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line) continue;
    try {
      out.push(JSON.parse(line) as BaselineEvent);
    } catch {
      // a line being written
    }
  }
  return out;
}
