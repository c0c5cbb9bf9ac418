/**
 * Injected AWS faults for chaos runs (`AWS_FAULT_INJECTION`, installed by the composition roots through lab/aws/instrumentation.ts):
 * throttling and 5xx errors in the SDK's own shapes, raised below the retry middleware
 * so the SDK classifies and retries them as it would AWS's. Never set in AWS; absent,
 * nothing here is installed.
 *
 * Two further modes strike the worker's fenced commits (a TransactWriteItems whose first
 * item is the slot-lease ConditionCheck and which sets a video's checkpoint), where the
 * outcome of a write matters most:
 *  - `lostAnswerRate`: the transaction reaches the server and applies; its answer is
 *    replaced by a 500 `InternalServerError`, and so is every retry of the same call
 *    (not sent), so the caller sees an error for a write that landed;
 *  - `laterGroupRate`: a commit of two or more videos is sent as two groups: the first
 *    video's items (with the slot check) as one transaction, which applies; the rest fails
 *    with a 500 before it is sent, on every retry of the call, as a later group of a
 *    multi-group commit does when the store fails between groups.
 *  - `doubtWindows`: planned in-doubt windows (issue 32). The commit that records frame
 *    `frame` of `videoId` as a gap fails with a 500 before it is sent, and so do the next
 *    `reads` reads of that video's lease item: its worker holds the commit in doubt for
 *    those reads, and a chaos run times the frame's late upload into that window.
 * Each logs one line per call it strikes (`commit applied, answer lost`, `commit later
 * group failed`, `commit in doubt (planned)`), not per attempt.
 */
import { appendFileSync } from 'node:fs';
import type { DeserializeMiddleware, MetadataBearer } from '@smithy/types';
import { rng } from '../../core/random.ts';
import type { AwsClients, CallerRole } from '../../core/aws/clients.ts';

/** The AWS services the project's clients talk to. */
export type AwsServiceName = 'dynamodb' | 's3' | 'sqs';

/** `throttle`: the service's throttling error; `5xx`: an internal / unavailable error. */
export type InjectedFaultKind = 'throttle' | '5xx';

/** The JSON of `AWS_FAULT_INJECTION`. */
export interface FaultInjectionConfig {
  /** Share of request attempts (retries included) that fail, in [0, 1]. */
  readonly rate: number;
  /** Seed of the draws. @default 1 */
  readonly seed: number;
  /** Services whose calls may fail. @default all three */
  readonly services: readonly AwsServiceName[];
  /** Share of the injected faults that are throttling (the rest are 5xx), in [0, 1]. @default 0.5 */
  readonly throttleShare: number;
  /** File to which one line per injected fault is appended (`role service operation errorName`). */
  readonly log?: string;
  /** Share of commit transactions (see the module comment) applied with their answer lost, in [0, 1]. @default 0 */
  readonly lostAnswerRate: number;
  /** Share of commit transactions of 2+ videos whose later group fails after the first applied, in [0, 1]. @default 0 */
  readonly laterGroupRate: number;
  /** Planned in-doubt windows (see the module comment). @default [] */
  readonly doubtWindows: readonly DoubtWindow[];
}

/** The gap commit of `frame` of `videoId` fails unsent, then `reads` reads of the video's lease item fail. */
export interface DoubtWindow {
  readonly videoId: string;
  readonly frame: number;
  readonly reads: number;
}

/** The log's error column for the commit modes. */
export const COMMIT_FAULT_NAMES = { lostAnswer: 'commit applied, answer lost', laterGroup: 'commit later group failed', doubt: 'commit in doubt (planned)' } as const;

const SERVICES: readonly AwsServiceName[] = ['dynamodb', 's3', 'sqs'];

/** Parses and validates `AWS_FAULT_INJECTION`; throws on anything malformed (a chaos run must not silently run without faults). */
export function parseFaultInjection(text: string): FaultInjectionConfig {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new Error(`AWS_FAULT_INJECTION is not JSON: ${text}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`AWS_FAULT_INJECTION must be a JSON object: ${text}`);
  const share = (name: string, fallback: number): number => {
    const v = raw[name] ?? fallback;
    if (typeof v !== 'number' || !(v >= 0 && v <= 1)) throw new Error(`AWS_FAULT_INJECTION.${name} must be a number in [0, 1] (got ${JSON.stringify(v)})`);
    return v;
  };
  const seed = raw.seed ?? 1;
  if (typeof seed !== 'number' || !Number.isInteger(seed)) throw new Error(`AWS_FAULT_INJECTION.seed must be an integer (got ${JSON.stringify(seed)})`);
  const services = raw.services ?? SERVICES;
  if (!Array.isArray(services) || services.some((s) => !SERVICES.includes(s as AwsServiceName)))
    throw new Error(`AWS_FAULT_INJECTION.services must list some of ${SERVICES.join(', ')} (got ${JSON.stringify(services)})`);
  if (raw.log !== undefined && typeof raw.log !== 'string') throw new Error('AWS_FAULT_INJECTION.log must be a file path');
  const windows = raw.doubtWindows ?? [];
  const isWindow = (w: unknown): w is DoubtWindow => {
    const x = w as Partial<DoubtWindow> | null;
    return typeof x === 'object' && x !== null && typeof x.videoId === 'string' && Number.isSafeInteger(x.frame) && Number.isSafeInteger(x.reads) && x.reads! >= 0;
  };
  if (!Array.isArray(windows) || !windows.every(isWindow)) throw new Error(`AWS_FAULT_INJECTION.doubtWindows must list { videoId, frame, reads } (got ${JSON.stringify(windows)})`);
  return {
    rate: share('rate', Number.NaN),
    seed,
    services: services as AwsServiceName[],
    throttleShare: share('throttleShare', 0.5),
    lostAnswerRate: share('lostAnswerRate', 0),
    laterGroupRate: share('laterGroupRate', 0),
    doubtWindows: windows,
    ...(raw.log !== undefined ? { log: raw.log as string } : {}),
  };
}

/** A seeded uniform draw in [0, 1) ({@link rng}), its seed mixed with `salt`. */
export function faultRng(seed: number, salt = ''): () => number {
  let a = seed >>> 0;
  for (let i = 0; i < salt.length; i++) a = Math.imul(a ^ salt.charCodeAt(i), 0x9e3779b1) >>> 0;
  return rng(a);
}

/**
 * The error a service returns for a fault of this kind, in the SDK's shape (name, `$fault`,
 * `$metadata.httpStatusCode`), so the standard retry strategy sees a throttling error or
 * a transient 5xx exactly as it would from AWS.
 */
export function injectedError(service: AwsServiceName, kind: InjectedFaultKind): Error {
  const shapes: Record<AwsServiceName, Record<InjectedFaultKind, { name: string; status: number; message: string }>> = {
    dynamodb: {
      throttle: { name: 'ThrottlingException', status: 400, message: 'Rate of requests exceeds the allowed throughput.' },
      '5xx': { name: 'InternalServerError', status: 500, message: 'Internal server error' },
    },
    sqs: {
      throttle: { name: 'RequestThrottled', status: 403, message: 'Request is throttled.' },
      '5xx': { name: 'ServiceUnavailable', status: 503, message: 'The request has failed due to a temporary failure of the server.' },
    },
    s3: {
      throttle: { name: 'SlowDown', status: 503, message: 'Please reduce your request rate.' },
      '5xx': { name: 'InternalError', status: 500, message: 'We encountered an internal error. Please try again.' },
    },
  };
  const s = shapes[service][kind];
  return Object.assign(new Error(`${s.message} (injected by AWS_FAULT_INJECTION)`), {
    name: s.name,
    $fault: s.status >= 500 ? ('server' as const) : ('client' as const),
    $metadata: { httpStatusCode: s.status, requestId: 'injected-fault' },
    injected: true,
  });
}

/**
 * Middleware for the `deserialize` step (below the retry middleware, so every attempt
 * draws): fails the attempt with {@link injectedError} before the request is sent.
 */
export function faultInjectionMiddleware(service: AwsServiceName, role: CallerRole, config: FaultInjectionConfig, draw: () => number): DeserializeMiddleware<object, MetadataBearer> {
  const enabled = config.services.includes(service);
  return (next, context) => async (args) => {
    if (enabled && draw() < config.rate) {
      const kind: InjectedFaultKind = draw() < config.throttleShare ? 'throttle' : '5xx';
      const error = injectedError(service, kind);
      if (config.log) appendFileSync(config.log, `${role}\t${service}\t${context.commandName}\t${error.name}\n`);
      throw error;
    }
    return next(args);
  };
}

/** A serialized request as the deserialize step sees it (the JSON protocol's body: bytes, or a string). */
interface RawRequest {
  headers: Record<string, string>;
  body?: unknown;
}

type Item = Record<string, { TableName?: string; Key?: { pk?: { S?: string } }; UpdateExpression?: string; Item?: Record<string, { S?: string; N?: string }> }>;

/**
 * The items of a fenced commit, or undefined when `request` is anything else: a
 * TransactWriteItems whose first item checks a slot lease and one of whose items sets a
 * video's checkpoint (core/leases/dynamodb/video-commit.ts).
 */
export function commitTransaction(request: RawRequest): { body: Record<string, unknown>; items: Item[] } | undefined {
  if (request.headers['x-amz-target'] !== 'DynamoDB_20120810.TransactWriteItems') return undefined;
  const raw = typeof request.body === 'string' ? request.body : request.body instanceof Uint8Array ? new TextDecoder().decode(request.body) : undefined;
  if (raw === undefined) return undefined;
  let body: Record<string, unknown>;
  try {
    body = JSON.parse(raw) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const items = body.TransactItems as Item[] | undefined;
  if (!Array.isArray(items) || !items[0]?.ConditionCheck?.Key?.pk?.S?.startsWith('slot#')) return undefined;
  if (!items.some((i) => i.Update?.UpdateExpression?.includes('checkpoint = :ck'))) return undefined;
  return { body, items };
}

/** The `pk` a GetItem request reads, or undefined for any other request. */
function leaseRead(request: RawRequest): string | undefined {
  if (request.headers?.['x-amz-target'] !== 'DynamoDB_20120810.GetItem') return undefined;
  const raw = typeof request.body === 'string' ? request.body : request.body instanceof Uint8Array ? new TextDecoder().decode(request.body) : undefined;
  try {
    return raw === undefined ? undefined : (JSON.parse(raw) as { Key?: { pk?: { S?: string } } }).Key?.pk?.S;
  } catch {
    return undefined;
  }
}

/**
 * Splits a commit's items after its first video: the slot check and the first video's items
 * (its checkpoint update, results and summary, up to the next checkpoint update), as packing
 * would put them in a first group. Undefined when the commit holds one video only.
 */
export function firstGroup(items: readonly Item[]): Item[] | undefined {
  const starts = items.flatMap((i, k) => (i.Update?.Key?.pk?.S?.startsWith('video#') ? [k] : []));
  if (starts.length < 2) return undefined;
  return [items[0]!, ...items.slice(starts[0], starts[1])];
}

/** The request with another JSON body (a copy; the original is retried untouched). */
function withBody(request: RawRequest, body: Record<string, unknown>): RawRequest {
  const bytes = Buffer.from(JSON.stringify(body), 'utf8');
  const copy = Object.assign(Object.create(Object.getPrototypeOf(request) as object) as RawRequest, request);
  copy.headers = { ...request.headers, 'content-length': String(bytes.length) };
  copy.body = typeof request.body === 'string' ? bytes.toString('utf8') : new Uint8Array(bytes);
  return copy;
}

/**
 * Middleware for the `deserialize` step of the DynamoDB client: the commit modes of the
 * module comment. A call struck once is failed on every later attempt too (keyed by its
 * input, which the SDK's retries share), so the SDK gives up and the caller sees the error.
 */
export function commitFaultMiddleware(role: CallerRole, config: FaultInjectionConfig, draw: () => number): DeserializeMiddleware<object, MetadataBearer> {
  const struck = new WeakSet<object>();
  const log = (context: { commandName?: string }, name: string, ...more: (string | number)[]) => {
    if (config.log) appendFileSync(config.log, `${[role, 'dynamodb', context.commandName, name, ...more].join('\t')}\n`);
  };
  const windows = config.doubtWindows.map((w) => ({ ...w, opened: false, readsLeft: w.reads }));
  return (next, context) => async (args) => {
    const input = args.input as object;
    if (struck.has(input)) throw injectedError('dynamodb', '5xx');
    const request = args.request as RawRequest;
    if (windows.length > 0) {
      const read = leaseRead(request);
      const open = read !== undefined ? windows.find((w) => w.opened && w.readsLeft > 0 && read === `video#${w.videoId}`) : undefined;
      if (open) {
        open.readsLeft--;
        struck.add(input);
        throw injectedError('dynamodb', '5xx');
      }
    }
    if (config.lostAnswerRate === 0 && config.laterGroupRate === 0 && windows.length === 0) return next(args);
    const commit = commitTransaction(request);
    if (!commit) return next(args);
    const window = windows.find((w) => !w.opened && commit.items.some((i) => i.Put?.Item?.videoId?.S === w.videoId && i.Put.Item.frame?.N === String(w.frame) && i.Put.Item.status?.S === 'gap'));
    if (window) {
      window.opened = true;
      struck.add(input);
      // The video and frame ride along, so that a chaos run can time the frame's upload into this window.
      log(context, COMMIT_FAULT_NAMES.doubt, window.videoId, window.frame);
      throw injectedError('dynamodb', '5xx');
    }
    if (config.lostAnswerRate === 0 && config.laterGroupRate === 0) return next(args);
    // Both draws always happen, so that one mode's rate does not shift the other's draws.
    const lose = draw() < config.lostAnswerRate;
    const split = draw() < config.laterGroupRate;
    const first = split ? firstGroup(commit.items) : undefined;
    if (first) {
      // The first group is its own transaction (no idempotency token: it is not the call's).
      const { ClientRequestToken: _token, ...rest } = commit.body;
      await next({ ...args, request: withBody(args.request as RawRequest, { ...rest, TransactItems: first }) });
      struck.add(input);
      log(context, COMMIT_FAULT_NAMES.laterGroup);
      throw injectedError('dynamodb', '5xx');
    }
    const result = await next(args);
    if (!lose) return result;
    struck.add(input);
    log(context, COMMIT_FAULT_NAMES.lostAnswer);
    throw injectedError('dynamodb', '5xx');
  };
}

/** Adds the fault middleware to the three clients; throws when `text` is malformed. */
export function installFaultInjection(clients: AwsClients, text: string, role: CallerRole, workerId = ''): void {
  const config = parseFaultInjection(text);
  // One draw sequence per process, varied by who the process is, so that workers do not
  // all fail the same calls in lockstep.
  const draw = faultRng(config.seed, `${role}:${workerId}`);
  const options = { step: 'deserialize', name: 'faultInjection' } as const;
  clients.dynamodb.middlewareStack.add(faultInjectionMiddleware('dynamodb', role, config, draw), options);
  clients.s3.middlewareStack.add(faultInjectionMiddleware('s3', role, config, draw), options);
  clients.sqs.middlewareStack.add(faultInjectionMiddleware('sqs', role, config, draw), options);
  if (config.lostAnswerRate > 0 || config.laterGroupRate > 0 || config.doubtWindows.length > 0) {
    // Its own draws, so that the throttling / 5xx sequence stays as it was without these modes.
    const commitDraw = faultRng(config.seed, `commit:${role}:${workerId}`);
    clients.dynamodb.middlewareStack.add(commitFaultMiddleware(role, config, commitDraw), { step: 'deserialize', name: 'commitFaultInjection' });
  }
}
