/**
 * An in-memory model of Amazon SQS FIFO queues with the semantics AWS documents, for
 * tests. fauxqs (the emulator the local stack uses) hands out at most one message per
 * group per receive and enforces no id or size limits; this model does what SQS does:
 *
 *  - a receive returns up to MaxNumberOfMessages (at most 10) messages and fills itself
 *    from one group first, in order, before moving to the next group; it never returns a
 *    message of a group that has a message in flight (group blocking);
 *  - long polling (WaitTimeSeconds, real timers) returns as soon as a message is
 *    available, or empty when the wait runs out; an abortSignal rejects with an
 *    `AbortError` the way the SDK's HTTP handler does;
 *  - visibility timeout per queue, ChangeMessageVisibility(Batch) (0 = visible at once),
 *    a new receipt handle per receive; a stale handle (the message was received again
 *    since) fails with `ReceiptHandleIsInvalid`, an expired one (visibility ran out) with
 *    `InvalidParameterValue` ("The receipt handle has expired"), as SQS FIFO does;
 *  - queue-wide deduplication by MessageDeduplicationId (or body hash with content-based
 *    deduplication) for 5 minutes: a duplicate send succeeds and enqueues nothing;
 *  - redrive: a message already received maxReceiveCount times moves to the dead-letter
 *    queue instead of being delivered again (it then no longer blocks its group);
 *  - limits: MessageGroupId / MessageDeduplicationId 1-128 characters of alphanumerics
 *    and punctuation, bodies of allowed Unicode characters and at most 256 KiB (with their
 *    message attributes; a batch at most 256 KiB in all), at most 10 entries per batch,
 *    batch entry ids unique and 1-80 of `[A-Za-z0-9_-]`. A bad request throws an error
 *    whose `name` is SQS's error code; a bad entry of a batch is reported in `Failed[]`.
 *
 * Time: visibility and deduplication windows use the `now()` option (default Date.now),
 * so a test can move an injected clock; long-poll waiting uses real timers.
 *
 * Fault injection: {@link SqsFifoModel.throwOn} makes whole calls throw (throttling,
 * network errors), {@link SqsFifoModel.failEntries} / {@link SqsFifoModel.failDeletes} /
 * {@link SqsFifoModel.failNextDeletes} make chosen entries of a batch fail (partial
 * failure in `Failed[]`, nothing done for them).
 *
 * Not modelled: standard queues' at-least-once duplicates, retention, queue-level delay,
 * ReceiveRequestAttemptId, high-throughput mode, MD5 of message attributes, per-queue
 * in-flight limits. `longPollCapMs` (off by default) lets a test cut long polls short;
 * SQS itself waits the whole WaitTimeSeconds.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import {
  BatchEntryIdsNotDistinct,
  BatchRequestTooLong,
  EmptyBatchRequest,
  InvalidBatchEntryId,
  InvalidMessageContents,
  MessageNotInflight,
  QueueDoesNotExist,
  ReceiptHandleIsInvalid,
  SQSServiceException,
  TooManyEntriesInBatchRequest,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';

/** SQS's limits, as documented (Amazon SQS message quotas). */
export const SQS_LIMITS = Object.freeze({
  maxBatchEntries: 10,
  maxReceiveMessages: 10,
  maxWaitTimeSeconds: 20,
  maxVisibilityTimeoutSeconds: 43_200,
  maxIdLength: 128,
  maxBatchEntryIdLength: 80,
  /** 256 KiB: one message (body + message attributes), and one batch in all. */
  maxMessageBytes: 262_144,
  dedupWindowMs: 5 * 60 * 1000,
  defaultVisibilityTimeoutSeconds: 30,
});

/** MessageGroupId / MessageDeduplicationId: alphanumerics and punctuation, 1-128 characters. */
const ID_PATTERN = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;
const BATCH_ENTRY_ID_PATTERN = /^[A-Za-z0-9_-]{1,80}$/;
/** Characters SQS rejects in a body: outside #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF. */
const FORBIDDEN_BODY_CHARS = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

export interface QueueOptions {
  /** @default 30 (SQS's default) or the model's `defaultQueue` */
  readonly visibilityTimeoutSeconds?: number;
  /** Receives after which the next receive moves the message to `deadLetterUrl` (redrive). */
  readonly maxReceiveCount?: number;
  /** Dead-letter queue URL; created lazily with defaults when it does not exist. */
  readonly deadLetterUrl?: string;
  readonly contentBasedDeduplication?: boolean;
}

export interface SqsFifoModelOptions {
  /** Clock for visibility and deduplication windows. @default Date.now */
  readonly now?: () => number;
  /** Create a queue the first time a command names it (with `defaultQueue`). @default true */
  readonly autoCreateQueues?: boolean;
  /**
   * Options of lazily created queues. With `maxReceiveCount`, a lazily created queue
   * `X.fifo` redrives to `X-dlq.fifo` (the project's naming); `X-dlq.fifo` itself has no redrive.
   */
  readonly defaultQueue?: Omit<QueueOptions, 'deadLetterUrl'>;
  /** Largest message (body + attributes) and largest batch, in bytes. @default 262144 */
  readonly maxMessageBytes?: number;
  /** Cuts every long poll short after this many real milliseconds (test speed; SQS has no such thing). */
  readonly longPollCapMs?: number;
  /** How often a waiting long poll re-checks the queue (real ms), besides being woken by sends. @default 25 */
  readonly pollIntervalMs?: number;
}

export type MessageState = 'visible' | 'in-flight' | 'deleted' | 'dead-lettered';

/** A message as the model holds it (a copy; changing it changes nothing). */
export interface ModelMessage {
  readonly queueUrl: string;
  readonly messageId: string;
  readonly sequenceNumber: string;
  readonly body: string;
  readonly groupId: string;
  readonly dedupId: string;
  readonly messageAttributes: Readonly<Record<string, MessageAttributeValue>>;
  readonly sentAtMs: number;
  readonly state: MessageState;
  readonly receiveCount: number;
  /** While in flight: when it becomes visible again. */
  readonly visibleAtMs: number;
  /** Handle of the most recent receive. */
  readonly receiptHandle?: string;
  readonly firstReceiveAtMs?: number;
  /** For a message moved to a DLQ: where it went; for one that arrived by redrive: where from. */
  readonly deadLetteredTo?: string;
  readonly redrivenFrom?: string;
}

/** One message handed out by one receive. */
export interface Delivery {
  readonly messageId: string;
  readonly groupId: string;
  readonly body: string;
  readonly receiveCount: number;
  readonly receiptHandle: string;
}

/** One ReceiveMessage call that returned (with or without messages). */
export interface ReceiveRecord {
  readonly queueUrl: string;
  readonly atMs: number;
  readonly maxMessages: number;
  readonly waitSeconds: number;
  readonly messages: readonly Delivery[];
}

/** One call to `send`, whatever its outcome. */
export interface CallRecord {
  readonly command: string;
  readonly input: Readonly<Record<string, unknown>>;
  readonly atMs: number;
  /** Name of the error the call threw, if it threw. */
  readonly error?: string;
  /** Ids of the batch entries reported in `Failed[]`. */
  readonly failedEntries?: readonly string[];
}

/** What a per-entry fault predicate sees. */
export interface EntryContext {
  readonly command: string;
  readonly queueUrl: string;
  readonly entry: Readonly<Record<string, unknown>>;
  /** The message a receipt handle points to (deletes and visibility changes), or the body sent. */
  readonly message?: ModelMessage;
  readonly receiptHandle?: string;
  readonly body?: string;
}

export interface EntryFaultOptions {
  /** How many entries to fail before the fault is spent. @default Infinity */
  readonly times?: number;
  /** @default 'InternalError' */
  readonly code?: string;
  readonly message?: string;
  /** @default false (a service fault) */
  readonly senderFault?: boolean;
}

interface QueueState {
  readonly url: string;
  readonly arn: string;
  readonly visibilityTimeoutSeconds: number;
  readonly maxReceiveCount?: number;
  readonly deadLetterUrl?: string;
  readonly contentBasedDeduplication: boolean;
  /** Messages in send order; deleted / dead-lettered ones stay for assertions. */
  readonly messages: MutableMessage[];
  readonly dedup: Map<string, { atMs: number; messageId: string; sequenceNumber: string }>;
  sent: number;
  duplicates: number;
}

type MutableMessage = { -readonly [K in keyof ModelMessage]: ModelMessage[K] };

interface HandleInfo {
  readonly queueUrl: string;
  readonly message: MutableMessage;
}

interface CallFault {
  readonly command: string;
  readonly error: () => Error;
  remaining: number;
  readonly when?: (input: Readonly<Record<string, unknown>>) => boolean;
}

interface EntryFault {
  readonly command: string;
  readonly predicate: (ctx: EntryContext) => boolean;
  remaining: number;
  readonly code: string;
  readonly message: string;
  readonly senderFault: boolean;
}

type Input = Record<string, any>;
type Output = Record<string, any>;

/** Builds an error shaped like the SDK's service exceptions (`name` = SQS error code). */
export function sqsError(name: string, message: string, fault: 'client' | 'server' = 'client'): SQSServiceException {
  const $metadata = { httpStatusCode: fault === 'client' ? 400 : 500, requestId: randomUUID(), attempts: 1, totalRetryDelay: 0 };
  const known: Record<string, new (o: { message: string; $metadata: typeof $metadata }) => SQSServiceException> = {
    BatchEntryIdsNotDistinct,
    BatchRequestTooLong,
    EmptyBatchRequest,
    InvalidBatchEntryId,
    InvalidMessageContents,
    MessageNotInflight,
    QueueDoesNotExist,
    ReceiptHandleIsInvalid,
    TooManyEntriesInBatchRequest,
  };
  const Known = known[name];
  if (Known) return new Known({ message, $metadata });
  return new SQSServiceException({ name, $fault: fault, $metadata, message });
}

/** A throttling error as SQS sends it (`RequestThrottled`), for {@link SqsFifoModel.throwOn}. */
export function throttled(): SQSServiceException {
  return sqsError('RequestThrottled', 'Rate exceeded', 'client');
}

/** A hand-moved clock for the model's `now` option. */
export class ManualClock {
  private t: number;
  constructor(startMs = Date.UTC(2026, 10, 1)) {
    this.t = startMs;
  }
  readonly now = (): number => this.t;
  advance(ms: number): number {
    this.t += ms;
    return this.t;
  }
}

function commandName(command: unknown): string {
  const name = (command as { constructor?: { name?: string } })?.constructor?.name ?? '';
  return name.endsWith('Command') ? name.slice(0, -'Command'.length) : name;
}

function normaliseCommand(name: string): string {
  return name.endsWith('Command') ? name.slice(0, -'Command'.length) : name;
}

function md5(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}

function abortError(signal: AbortSignal): Error {
  // As @smithy/node-http-handler builds it.
  const reason: unknown = signal.reason;
  const e = new Error(reason instanceof Error || reason === undefined ? 'Request aborted' : String(reason));
  e.name = 'AbortError';
  if (reason instanceof Error) (e as Error & { cause?: unknown }).cause = reason;
  return e;
}

function attributesBytes(attrs: Record<string, MessageAttributeValue> | undefined): number {
  let n = 0;
  for (const [k, v] of Object.entries(attrs ?? {})) {
    n += Buffer.byteLength(k) + Buffer.byteLength(v.DataType ?? '');
    if (v.StringValue !== undefined) n += Buffer.byteLength(v.StringValue);
    if (v.BinaryValue !== undefined) n += v.BinaryValue.byteLength;
  }
  return n;
}

function snapshot(m: MutableMessage): ModelMessage {
  return { ...m, messageAttributes: { ...m.messageAttributes } };
}

export class SqsFifoModel {
  private readonly now: () => number;
  private readonly autoCreate: boolean;
  private readonly defaultQueue: Omit<QueueOptions, 'deadLetterUrl'>;
  private readonly maxMessageBytes: number;
  private readonly longPollCapMs: number | undefined;
  private readonly pollIntervalMs: number;
  private readonly queues = new Map<string, QueueState>();
  private readonly handles = new Map<string, HandleInfo>();
  private readonly receiveLog: ReceiveRecord[] = [];
  private readonly callLog: CallRecord[] = [];
  private callFaults: CallFault[] = [];
  private entryFaults: EntryFault[] = [];
  private readonly waiters = new Set<() => void>();
  private sequence = 0n;

  constructor(options: SqsFifoModelOptions = {}) {
    this.now = options.now ?? Date.now;
    this.autoCreate = options.autoCreateQueues ?? true;
    this.defaultQueue = options.defaultQueue ?? {};
    this.maxMessageBytes = options.maxMessageBytes ?? SQS_LIMITS.maxMessageBytes;
    this.longPollCapMs = options.longPollCapMs;
    this.pollIntervalMs = options.pollIntervalMs ?? 25;
  }

  // ------------------------------------------------------------------ set-up

  /**
   * Creates (or re-creates with new options, keeping its messages) a FIFO queue. A
   * redrive needs both `maxReceiveCount` and `deadLetterUrl`; the DLQ is created too.
   */
  createQueue(url: string, options: QueueOptions = {}): string {
    const vt = options.visibilityTimeoutSeconds ?? this.defaultQueue.visibilityTimeoutSeconds ?? SQS_LIMITS.defaultVisibilityTimeoutSeconds;
    if (!Number.isInteger(vt) || vt < 0 || vt > SQS_LIMITS.maxVisibilityTimeoutSeconds) throw new Error(`visibilityTimeoutSeconds out of range: ${vt}`);
    const existing = this.queues.get(url);
    const { maxReceiveCount, deadLetterUrl } = options;
    if ((maxReceiveCount === undefined) !== (deadLetterUrl === undefined)) {
      throw new Error('a redrive policy needs both maxReceiveCount and deadLetterUrl');
    }
    const q: QueueState = {
      url,
      arn: `arn:aws:sqs:us-east-1:000000000000:${url.slice(url.lastIndexOf('/') + 1)}`,
      visibilityTimeoutSeconds: vt,
      ...(maxReceiveCount !== undefined ? { maxReceiveCount } : {}),
      ...(deadLetterUrl !== undefined ? { deadLetterUrl } : {}),
      contentBasedDeduplication: options.contentBasedDeduplication ?? this.defaultQueue.contentBasedDeduplication ?? false,
      messages: existing?.messages ?? [],
      dedup: existing?.dedup ?? new Map(),
      sent: existing?.sent ?? 0,
      duplicates: existing?.duplicates ?? 0,
    };
    this.queues.set(url, q);
    if (deadLetterUrl !== undefined && !this.queues.has(deadLetterUrl)) this.createQueue(deadLetterUrl, { visibilityTimeoutSeconds: vt });
    return url;
  }

  /**
   * Creates the project's slot queues: `${prefix}${slot}.fifo`, each with its DLQ
   * `${prefix}${slot}-dlq.fifo` (see core/aws/slot-queues.ts). Returns the queue URLs.
   */
  createSlotQueues(prefix: string, slots: number, options: { visibilityTimeoutSeconds: number; maxReceiveCount?: number }): string[] {
    const urls: string[] = [];
    for (let slot = 0; slot < slots; slot++) {
      const dlq = `${prefix}${slot}-dlq.fifo`;
      this.createQueue(dlq, { visibilityTimeoutSeconds: options.visibilityTimeoutSeconds });
      urls.push(
        this.createQueue(`${prefix}${slot}.fifo`, {
          visibilityTimeoutSeconds: options.visibilityTimeoutSeconds,
          ...(options.maxReceiveCount !== undefined ? { maxReceiveCount: options.maxReceiveCount, deadLetterUrl: dlq } : {}),
        }),
      );
    }
    return urls;
  }

  /** This model typed as an SDK client: `new SlotQueues(model.asClient(), prefix)`. */
  asClient(): SQSClient {
    return { send: (command: unknown, options?: unknown) => this.send(command, options as { abortSignal?: AbortSignal }), destroy() {}, config: {}, middlewareStack: {} } as unknown as SQSClient;
  }

  // ------------------------------------------------------------------ faults

  /**
   * Makes the next `times` calls of a command (e.g. `'ReceiveMessage'` or
   * `'DeleteMessageBatchCommand'`) throw `error` (an Error, or a factory for a fresh
   * one each time) before doing anything; `when` narrows it to some inputs.
   */
  throwOn(command: string, error: Error | (() => Error), times = 1, when?: (input: Readonly<Record<string, unknown>>) => boolean): this {
    this.callFaults.push({ command: normaliseCommand(command), error: typeof error === 'function' ? error : () => error, remaining: times, ...(when ? { when } : {}) });
    return this;
  }

  /**
   * Makes entries of a batch command (`SendMessageBatch`, `DeleteMessageBatch`,
   * `ChangeMessageVisibilityBatch`) that match `predicate` fail: they are reported in
   * `Failed[]` with `code`, and nothing is done for them. The single-message commands
   * (`DeleteMessage`, ...) throw instead.
   */
  failEntries(command: string, predicate: (ctx: EntryContext) => boolean, options: EntryFaultOptions = {}): this {
    const code = options.code ?? 'InternalError';
    this.entryFaults.push({
      command: normaliseCommand(command).replace(/Batch$/, ''),
      predicate,
      remaining: options.times ?? Infinity,
      code,
      message: options.message ?? `injected failure (${code})`,
      senderFault: options.senderFault ?? false,
    });
    return this;
  }

  /** {@link failEntries} for deletes (DeleteMessageBatch entries and DeleteMessage calls). */
  failDeletes(predicate: (ctx: EntryContext) => boolean, options: EntryFaultOptions = {}): this {
    return this.failEntries('DeleteMessage', predicate, options);
  }

  /** The next `n` delete entries fail (whichever messages they are). */
  failNextDeletes(n: number, code = 'InternalError'): this {
    return this.failDeletes(() => true, { times: n, code });
  }

  /** Removes every injected fault. */
  clearFaults(): void {
    this.callFaults = [];
    this.entryFaults = [];
  }

  // ------------------------------------------------------------------ assertions

  /** Every message ever enqueued on the queue, in send order, with its state now. */
  messages(url: string): ModelMessage[] {
    const q = this.queues.get(url);
    if (!q) return [];
    this.expire(q);
    return q.messages.map(snapshot);
  }

  /** Messages not yet deleted or moved (visible or in flight). */
  pending(url: string): ModelMessage[] {
    return this.messages(url).filter((m) => m.state === 'visible' || m.state === 'in-flight');
  }

  /** Every receive that returned, oldest first (`url` narrows to one queue). */
  receives(url?: string): ReceiveRecord[] {
    return this.receiveLog.filter((r) => url === undefined || r.queueUrl === url);
  }

  /** Every message handed out, in delivery order (a redelivery appears again). */
  deliveries(url?: string): (Delivery & { atMs: number })[] {
    return this.receives(url).flatMap((r) => r.messages.map((m) => ({ ...m, atMs: r.atMs })));
  }

  /** Largest number of messages of one group that a single receive returned. */
  maxGroupRunPerReceive(url?: string): number {
    let best = 0;
    for (const r of this.receives(url)) {
      const counts = new Map<string, number>();
      for (const m of r.messages) counts.set(m.groupId, (counts.get(m.groupId) ?? 0) + 1);
      for (const c of counts.values()) best = Math.max(best, c);
    }
    return best;
  }

  /** Messages enqueued (duplicates not counted), on one queue or on all. */
  sentCount(url?: string): number {
    return [...this.queues.values()].filter((q) => url === undefined || q.url === url).reduce((n, q) => n + q.sent, 0);
  }

  /** Sends that deduplication swallowed. */
  duplicateCount(url?: string): number {
    return [...this.queues.values()].filter((q) => url === undefined || q.url === url).reduce((n, q) => n + q.duplicates, 0);
  }

  /** Every call made, oldest first (`command` narrows, e.g. `'DeleteMessageBatch'`). */
  calls(command?: string): CallRecord[] {
    const c = command === undefined ? undefined : normaliseCommand(command);
    return this.callLog.filter((r) => c === undefined || r.command === c);
  }

  queueUrls(): string[] {
    return [...this.queues.keys()];
  }

  /** Wakes waiting long polls now (e.g. after moving an injected clock). */
  wake(): void {
    for (const w of [...this.waiters]) w();
  }

  // ------------------------------------------------------------------ the client

  /** Handles an SDK command like `SQSClient.send(command, { abortSignal })`. */
  async send(command: unknown, options?: { abortSignal?: AbortSignal }): Promise<any> {
    const name = commandName(command);
    const input = ((command as { input?: Input })?.input ?? {}) as Input;
    const record: { -readonly [K in keyof CallRecord]: CallRecord[K] } = { command: name, input, atMs: this.now() };
    this.callLog.push(record);
    // Like a network call: never answer synchronously.
    await new Promise<void>((r) => setImmediate(r));
    const signal = options?.abortSignal;
    try {
      if (signal?.aborted) throw abortError(signal);
      const fault = this.callFaults.find((f) => f.command === name && f.remaining > 0 && (!f.when || f.when(input)));
      if (fault) {
        fault.remaining--;
        throw fault.error();
      }
      const out = await this.dispatch(name, input, signal);
      const failed = (out.Failed as { Id: string }[] | undefined)?.map((f) => f.Id);
      if (failed && failed.length > 0) record.failedEntries = failed;
      return { ...out, $metadata: { httpStatusCode: 200, requestId: randomUUID(), attempts: 1, totalRetryDelay: 0 } };
    } catch (e) {
      record.error = e instanceof Error ? e.name : String(e);
      throw e;
    }
  }

  private dispatch(name: string, input: Input, signal: AbortSignal | undefined): Promise<Output> | Output {
    switch (name) {
      case 'SendMessage':
        return this.sendMessage(input);
      case 'SendMessageBatch':
        return this.sendMessageBatch(input);
      case 'ReceiveMessage':
        return this.receiveMessage(input, signal);
      case 'DeleteMessage':
        return this.deleteMessage(input);
      case 'DeleteMessageBatch':
        return this.deleteMessageBatch(input);
      case 'ChangeMessageVisibility':
        return this.changeVisibility(input);
      case 'ChangeMessageVisibilityBatch':
        return this.changeVisibilityBatch(input);
      case 'GetQueueAttributes':
        return this.getQueueAttributes(input);
      case 'GetQueueUrl':
        return this.getQueueUrl(input);
      case 'PurgeQueue':
        return this.purgeQueue(input);
      default:
        throw sqsError('UnsupportedOperation', `the SQS FIFO model does not implement ${name || 'this command'}`);
    }
  }

  // ------------------------------------------------------------------ commands

  private queue(url: unknown): QueueState {
    if (typeof url !== 'string' || url === '') throw sqsError('MissingParameter', 'The request must contain the parameter QueueUrl.');
    let q = this.queues.get(url);
    if (!q) {
      if (!this.autoCreate) throw sqsError('QueueDoesNotExist', 'The specified queue does not exist.');
      if (!url.endsWith('.fifo')) throw sqsError('UnsupportedOperation', `the model only has FIFO queues (${url})`);
      const { maxReceiveCount, ...rest } = this.defaultQueue;
      const redrive = maxReceiveCount !== undefined && !url.endsWith('-dlq.fifo') ? { maxReceiveCount, deadLetterUrl: url.replace(/\.fifo$/, '-dlq.fifo') } : {};
      this.createQueue(url, { ...rest, ...redrive });
      q = this.queues.get(url)!;
    }
    this.expire(q);
    return q;
  }

  /** Makes in-flight messages whose visibility ran out visible again. */
  private expire(q: QueueState): void {
    const now = this.now();
    for (const m of q.messages) if (m.state === 'in-flight' && m.visibleAtMs <= now) m.state = 'visible';
  }

  /** Validates one message to send; returns an error (code + message) or undefined. */
  private checkEntry(q: QueueState, e: Input): { code: string; message: string } | undefined {
    const body = e.MessageBody;
    if (typeof body !== 'string' || body.length === 0) return { code: 'MissingParameter', message: 'The request must contain the parameter MessageBody.' };
    if (FORBIDDEN_BODY_CHARS.test(body)) return { code: 'InvalidMessageContents', message: 'Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF' };
    const size = Buffer.byteLength(body) + attributesBytes(e.MessageAttributes);
    if (size > this.maxMessageBytes) {
      return { code: 'InvalidParameterValue', message: `One or more parameters are invalid. Reason: Message must be shorter than ${this.maxMessageBytes} bytes.` };
    }
    if (e.DelaySeconds !== undefined && e.DelaySeconds !== 0) {
      return { code: 'InvalidParameterValue', message: `Value ${e.DelaySeconds} for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.` };
    }
    if (e.MessageGroupId === undefined || e.MessageGroupId === '') return { code: 'MissingParameter', message: 'The request must contain the parameter MessageGroupId.' };
    if (typeof e.MessageGroupId !== 'string' || !ID_PATTERN.test(e.MessageGroupId)) {
      return { code: 'InvalidParameterValue', message: `Value ${String(e.MessageGroupId)} for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.` };
    }
    if (e.MessageDeduplicationId === undefined) {
      if (!q.contentBasedDeduplication) {
        return { code: 'InvalidParameterValue', message: 'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly' };
      }
    } else if (typeof e.MessageDeduplicationId !== 'string' || !ID_PATTERN.test(e.MessageDeduplicationId)) {
      return { code: 'InvalidParameterValue', message: `Value ${String(e.MessageDeduplicationId)} for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length.` };
    }
    return undefined;
  }

  /** Enqueues a checked message (or recognises a duplicate); returns the ids SQS would. */
  private enqueue(q: QueueState, e: Input): { MessageId: string; MD5OfMessageBody: string; SequenceNumber: string } {
    const now = this.now();
    const body = e.MessageBody as string;
    const dedupId: string = e.MessageDeduplicationId ?? createHash('sha256').update(body).digest('hex');
    const seen = q.dedup.get(dedupId);
    if (seen && now - seen.atMs < SQS_LIMITS.dedupWindowMs) {
      q.duplicates++;
      return { MessageId: seen.messageId, MD5OfMessageBody: md5(body), SequenceNumber: seen.sequenceNumber };
    }
    const messageId = randomUUID();
    this.sequence += 1n;
    const sequenceNumber = (this.sequence + 18_000_000_000_000_000_000n).toString();
    q.dedup.set(dedupId, { atMs: now, messageId, sequenceNumber });
    q.messages.push({
      queueUrl: q.url,
      messageId,
      sequenceNumber,
      body,
      groupId: e.MessageGroupId as string,
      dedupId,
      messageAttributes: { ...(e.MessageAttributes ?? {}) },
      sentAtMs: now,
      state: 'visible',
      receiveCount: 0,
      visibleAtMs: now,
    });
    q.sent++;
    this.wake();
    return { MessageId: messageId, MD5OfMessageBody: md5(body), SequenceNumber: sequenceNumber };
  }

  private sendMessage(input: Input): Output {
    const q = this.queue(input.QueueUrl);
    const problem = this.checkEntry(q, input);
    if (problem) throw sqsError(problem.code, problem.message);
    this.takeEntryFault('SendMessage', { command: 'SendMessage', queueUrl: q.url, entry: input, body: input.MessageBody });
    return this.enqueue(q, input);
  }

  /** Checks a batch request as a whole (count, ids); throws SQS's error for the request. */
  private checkBatch(entries: unknown): Input[] {
    if (!Array.isArray(entries) || entries.length === 0) throw sqsError('EmptyBatchRequest', 'There should be at least one SendMessageBatchRequestEntry in the request.');
    if (entries.length > SQS_LIMITS.maxBatchEntries) {
      throw sqsError('TooManyEntriesInBatchRequest', `Maximum number of entries per request are ${SQS_LIMITS.maxBatchEntries}. You have sent ${entries.length}.`);
    }
    const ids = new Set<string>();
    for (const e of entries as Input[]) {
      if (typeof e.Id !== 'string' || !BATCH_ENTRY_ID_PATTERN.test(e.Id)) {
        throw sqsError('InvalidBatchEntryId', 'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.');
      }
      if (ids.has(e.Id)) throw sqsError('BatchEntryIdsNotDistinct', `Id ${e.Id} repeated.`);
      ids.add(e.Id);
    }
    return entries as Input[];
  }

  private sendMessageBatch(input: Input): Output {
    const q = this.queue(input.QueueUrl);
    const entries = this.checkBatch(input.Entries);
    const total = entries.reduce((n, e) => n + Buffer.byteLength(typeof e.MessageBody === 'string' ? e.MessageBody : '') + attributesBytes(e.MessageAttributes), 0);
    if (total > this.maxMessageBytes) {
      throw sqsError('BatchRequestTooLong', `Batch requests cannot be longer than ${this.maxMessageBytes} bytes. You have sent ${total} bytes.`);
    }
    const Successful: Output[] = [];
    const Failed: Output[] = [];
    for (const e of entries) {
      const problem = this.checkEntry(q, e);
      if (problem) {
        Failed.push({ Id: e.Id, SenderFault: true, Code: problem.code, Message: problem.message });
        continue;
      }
      const fault = this.matchEntryFault('SendMessage', { command: 'SendMessageBatch', queueUrl: q.url, entry: e, body: e.MessageBody });
      if (fault) {
        Failed.push({ Id: e.Id, SenderFault: fault.senderFault, Code: fault.code, Message: fault.message });
        continue;
      }
      Successful.push({ Id: e.Id, ...this.enqueue(q, e) });
    }
    return { Successful, Failed };
  }

  private async receiveMessage(input: Input, signal: AbortSignal | undefined): Promise<Output> {
    const q = this.queue(input.QueueUrl);
    const max = input.MaxNumberOfMessages ?? 1;
    if (!Number.isInteger(max) || max < 1 || max > SQS_LIMITS.maxReceiveMessages) {
      throw sqsError('InvalidParameterValue', `Value ${max} for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.`);
    }
    const wait = input.WaitTimeSeconds ?? 0;
    if (!Number.isInteger(wait) || wait < 0 || wait > SQS_LIMITS.maxWaitTimeSeconds) {
      throw sqsError('InvalidParameterValue', `Value ${wait} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.`);
    }
    const vt = input.VisibilityTimeout ?? q.visibilityTimeoutSeconds;
    if (!Number.isInteger(vt) || vt < 0 || vt > SQS_LIMITS.maxVisibilityTimeoutSeconds) {
      throw sqsError('InvalidParameterValue', `Value ${vt} for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.`);
    }
    const waitMs = Math.min(wait * 1000, this.longPollCapMs ?? Infinity);
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (signal?.aborted) throw abortError(signal);
      const taken = this.take(q, max, vt);
      if (taken.length > 0 || Date.now() >= deadline) {
        this.receiveLog.push({
          queueUrl: q.url,
          atMs: this.now(),
          maxMessages: max,
          waitSeconds: wait,
          messages: taken.map((m) => ({ messageId: m.messageId, groupId: m.groupId, body: m.body, receiveCount: m.receiveCount, receiptHandle: m.receiptHandle! })),
        });
        return { Messages: taken.map((m) => this.render(m, input)) };
      }
      await this.waitForChange(Math.min(this.pollIntervalMs, deadline - Date.now()), signal);
    }
  }

  /** Waits until woken, `ms` pass, or the signal aborts (then throws AbortError). */
  private waitForChange(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        reject(abortError(signal!));
      };
      const timer = setTimeout(done, Math.max(1, ms));
      this.waiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Picks the messages one receive returns (synchronous, so concurrent receives never
   * share a message): groups in the order of their oldest message; a group with a
   * message in flight is skipped; from an open group, messages from its head in order,
   * as many as fit, before the next group. A message already received maxReceiveCount
   * times is moved to the DLQ instead.
   */
  private take(q: QueueState, max: number, visibilitySeconds: number): MutableMessage[] {
    const now = this.now();
    const groups = new Map<string, MutableMessage[]>();
    const blocked = new Set<string>();
    for (const m of q.messages) {
      if (m.state === 'in-flight') blocked.add(m.groupId);
      if (m.state !== 'visible') continue;
      const list = groups.get(m.groupId);
      if (list) list.push(m);
      else groups.set(m.groupId, [m]);
    }
    const out: MutableMessage[] = [];
    for (const [groupId, list] of groups) {
      if (out.length >= max) break;
      if (blocked.has(groupId)) continue;
      for (const m of list) {
        if (out.length >= max) break;
        if (q.maxReceiveCount !== undefined && q.deadLetterUrl !== undefined && m.receiveCount >= q.maxReceiveCount) {
          this.redrive(q, m);
          continue;
        }
        m.state = 'in-flight';
        m.receiveCount++;
        m.firstReceiveAtMs ??= now;
        m.visibleAtMs = now + visibilitySeconds * 1000;
        const handle = `${randomBytes(12).toString('base64url')}.${m.messageId}.${m.receiveCount}`;
        m.receiptHandle = handle;
        this.handles.set(handle, { queueUrl: q.url, message: m });
        out.push(m);
      }
    }
    return out;
  }

  private redrive(q: QueueState, m: MutableMessage): void {
    const dlq = this.queue(q.deadLetterUrl);
    m.state = 'dead-lettered';
    m.deadLetteredTo = dlq.url;
    // Same message id, body, group and receive count; a new place in the DLQ's order.
    const { deadLetteredTo: _to, receiptHandle: _handle, ...rest } = m;
    dlq.messages.push({ ...rest, queueUrl: dlq.url, state: 'visible', visibleAtMs: this.now(), redrivenFrom: q.url });
    this.wake();
  }

  private render(m: MutableMessage, input: Input): Output {
    const wanted = new Set<string>([...(input.MessageSystemAttributeNames ?? []), ...(input.AttributeNames ?? [])]);
    const all = wanted.has('All');
    const system: Record<string, string> = {
      ApproximateReceiveCount: String(m.receiveCount),
      MessageGroupId: m.groupId,
      MessageDeduplicationId: m.dedupId,
      SequenceNumber: m.sequenceNumber,
      SentTimestamp: String(m.sentAtMs),
      ApproximateFirstReceiveTimestamp: String(m.firstReceiveAtMs ?? m.sentAtMs),
      SenderId: 'AIDAMODEL',
    };
    const Attributes: Record<string, string> = {};
    for (const [k, v] of Object.entries(system)) if (all || wanted.has(k)) Attributes[k] = v;
    const attrNames: string[] = input.MessageAttributeNames ?? [];
    const MessageAttributes: Record<string, MessageAttributeValue> = {};
    for (const [k, v] of Object.entries(m.messageAttributes)) {
      if (attrNames.some((n) => n === 'All' || n === '.*' || n === k || (n.endsWith('.*') && k.startsWith(n.slice(0, -1))))) MessageAttributes[k] = v;
    }
    return {
      MessageId: m.messageId,
      ReceiptHandle: m.receiptHandle,
      MD5OfBody: md5(m.body),
      Body: m.body,
      ...(Object.keys(Attributes).length > 0 ? { Attributes } : {}),
      ...(Object.keys(MessageAttributes).length > 0 ? { MessageAttributes } : {}),
    };
  }

  /**
   * Resolves a receipt handle for a delete or visibility change: the message, or the
   * error SQS FIFO gives (unknown or other queue's handle, stale handle, expired handle).
   */
  private resolveHandle(q: QueueState, handle: unknown, forDelete: boolean): { message: MutableMessage } | { code: string; message: string } {
    if (typeof handle !== 'string' || handle === '') return { code: 'MissingParameter', message: 'The request must contain the parameter ReceiptHandle.' };
    const info = this.handles.get(handle);
    if (!info || info.queueUrl !== q.url) return { code: 'ReceiptHandleIsInvalid', message: `The input receipt handle "${handle}" is not a valid receipt handle.` };
    const m = info.message;
    if (m.receiptHandle !== handle) {
      return { code: 'ReceiptHandleIsInvalid', message: `The receipt handle "${handle}" is stale: the message was received again since.` };
    }
    if (m.state === 'deleted') {
      // Deleting again with the latest handle succeeds; changing visibility does not.
      return forDelete ? { message: m } : { code: 'ReceiptHandleIsInvalid', message: `The receipt handle "${handle}" is not valid: the message was deleted.` };
    }
    if (m.state === 'dead-lettered') return { code: 'ReceiptHandleIsInvalid', message: `The receipt handle "${handle}" is not valid for this queue.` };
    if (m.state === 'visible') {
      return forDelete
        ? { code: 'InvalidParameterValue', message: `Value ${handle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.` }
        : { code: 'MessageNotInflight', message: 'The message referred to is not in flight.' };
    }
    return { message: m };
  }

  private deleteOne(q: QueueState, command: string, entry: Input): { code: string; message: string; senderFault: boolean } | undefined {
    const r = this.resolveHandle(q, entry.ReceiptHandle, true);
    if ('code' in r) return { ...r, senderFault: true };
    const fault = this.matchEntryFault('DeleteMessage', { command, queueUrl: q.url, entry, message: snapshot(r.message), receiptHandle: entry.ReceiptHandle, body: r.message.body });
    if (fault) return fault;
    r.message.state = 'deleted';
    this.wake();
    return undefined;
  }

  private deleteMessage(input: Input): Output {
    const q = this.queue(input.QueueUrl);
    const problem = this.deleteOne(q, 'DeleteMessage', input);
    if (problem) throw sqsError(problem.code, problem.message, problem.senderFault ? 'client' : 'server');
    return {};
  }

  private deleteMessageBatch(input: Input): Output {
    return this.perEntry(input, (q, e) => this.deleteOne(q, 'DeleteMessageBatch', e));
  }

  /** A batch call's answer: each entry succeeds or fails on its own, as in SQS. */
  private perEntry(input: Input, one: (q: QueueState, entry: Input) => { code: string; message: string; senderFault: boolean } | undefined): Output {
    const q = this.queue(input.QueueUrl);
    const entries = this.checkBatch(input.Entries);
    const Successful: Output[] = [];
    const Failed: Output[] = [];
    for (const e of entries) {
      const problem = one(q, e);
      if (problem) Failed.push({ Id: e.Id, SenderFault: problem.senderFault, Code: problem.code, Message: problem.message });
      else Successful.push({ Id: e.Id });
    }
    return { Successful, Failed };
  }

  private changeOne(q: QueueState, command: string, entry: Input): { code: string; message: string; senderFault: boolean } | undefined {
    const vt = entry.VisibilityTimeout;
    if (!Number.isInteger(vt) || vt < 0 || vt > SQS_LIMITS.maxVisibilityTimeoutSeconds) {
      return { code: 'InvalidParameterValue', message: `Value ${String(vt)} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200.`, senderFault: true };
    }
    const r = this.resolveHandle(q, entry.ReceiptHandle, false);
    if ('code' in r) return { ...r, senderFault: true };
    const fault = this.matchEntryFault('ChangeMessageVisibility', { command, queueUrl: q.url, entry, message: snapshot(r.message), receiptHandle: entry.ReceiptHandle, body: r.message.body });
    if (fault) return fault;
    const now = this.now();
    r.message.visibleAtMs = now + vt * 1000;
    if (vt === 0) {
      r.message.state = 'visible';
      this.wake();
    }
    return undefined;
  }

  private changeVisibility(input: Input): Output {
    const q = this.queue(input.QueueUrl);
    const problem = this.changeOne(q, 'ChangeMessageVisibility', input);
    if (problem) throw sqsError(problem.code, problem.message, problem.senderFault ? 'client' : 'server');
    return {};
  }

  private changeVisibilityBatch(input: Input): Output {
    return this.perEntry(input, (q, e) => this.changeOne(q, 'ChangeMessageVisibilityBatch', e));
  }

  private getQueueAttributes(input: Input): Output {
    const q = this.queue(input.QueueUrl);
    const names: string[] = input.AttributeNames ?? [];
    const live = q.messages.filter((m) => m.state === 'visible' || m.state === 'in-flight');
    const all: Record<string, string> = {
      ApproximateNumberOfMessages: String(live.filter((m) => m.state === 'visible').length),
      ApproximateNumberOfMessagesNotVisible: String(live.filter((m) => m.state === 'in-flight').length),
      ApproximateNumberOfMessagesDelayed: '0',
      VisibilityTimeout: String(q.visibilityTimeoutSeconds),
      QueueArn: q.arn,
      FifoQueue: 'true',
      ContentBasedDeduplication: String(q.contentBasedDeduplication),
      MaximumMessageSize: String(this.maxMessageBytes),
      ...(q.deadLetterUrl !== undefined && q.maxReceiveCount !== undefined
        ? { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: this.queue(q.deadLetterUrl).arn, maxReceiveCount: q.maxReceiveCount }) }
        : {}),
    };
    const Attributes: Record<string, string> = {};
    for (const [k, v] of Object.entries(all)) if (names.includes('All') || names.includes(k)) Attributes[k] = v;
    return { Attributes };
  }

  private getQueueUrl(input: Input): Output {
    const name = String(input.QueueName ?? '');
    const url = [...this.queues.keys()].find((u) => u.endsWith(`/${name}`) || u === name);
    if (!url) throw sqsError('QueueDoesNotExist', 'The specified queue does not exist.');
    return { QueueUrl: url };
  }

  private purgeQueue(input: Input): Output {
    const q = this.queue(input.QueueUrl);
    for (const m of q.messages) if (m.state === 'visible' || m.state === 'in-flight') m.state = 'deleted';
    return {};
  }

  // ------------------------------------------------------------------ fault matching

  private matchEntryFault(kind: string, ctx: EntryContext): { code: string; message: string; senderFault: boolean } | undefined {
    const f = this.entryFaults.find((x) => x.command === kind && x.remaining > 0 && x.predicate(ctx));
    if (!f) return undefined;
    f.remaining--;
    return { code: f.code, message: f.message, senderFault: f.senderFault };
  }

  private takeEntryFault(kind: string, ctx: EntryContext): void {
    const f = this.matchEntryFault(kind, ctx);
    if (f) throw sqsError(f.code, f.message, f.senderFault ? 'client' : 'server');
  }
}
