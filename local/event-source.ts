/**
 * Invokes Lambda handlers locally the way AWS does:
 *  - {@link SqsEventSource}: the Lambda SQS event source mapping with
 *    ReportBatchItemFailures (long-poll, batch, invoke, delete what succeeded);
 * and the shapes Lambda hands to handlers. EventBridge's schedule and rule targets are in
 * eventbridge-invokers.ts.
 */
import { randomUUID } from 'node:crypto';
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  type Message,
  type MessageAttributeValue,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import type { Context, ScheduledEvent, SQSBatchResponse, SQSEvent, SQSMessageAttributes, SQSRecord } from 'aws-lambda';
import { sleep } from '../core/async.ts';

/**
 * Lambda's synchronous invocation payload limit, which also caps an SQS event source batch:
 * https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html
 */
export const LAMBDA_INVOKE_PAYLOAD_BYTES = 6 * 1024 * 1024;

/** Anything shaped like a Lambda SQS handler (async style). */
export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void | undefined>;
export type ScheduledHandler = (event: ScheduledEvent, context: Context) => Promise<unknown>;

/** A minimal Lambda context: what handlers (and Powertools) read. */
export function lambdaContext(functionName: string, region: string, timeoutMs: number): Context {
  const deadline = Date.now() + timeoutMs;
  const requestId = randomUUID();
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:${region}:000000000000:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: `local/[$LATEST]${requestId.replace(/-/g, '')}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done() {},
    fail() {},
    succeed() {},
  };
}

/** Converts an SDK message to the record Lambda hands the function. */
export function toSqsRecord(m: Message, queueArn: string, region: string): SQSRecord {
  const a = m.Attributes ?? {};
  const attributes: SQSRecord['attributes'] = {
    ApproximateReceiveCount: a.ApproximateReceiveCount ?? '1',
    SentTimestamp: a.SentTimestamp ?? String(Date.now()),
    SenderId: a.SenderId ?? '000000000000',
    ApproximateFirstReceiveTimestamp: a.ApproximateFirstReceiveTimestamp ?? String(Date.now()),
  };
  for (const k of ['AWSTraceHeader', 'SequenceNumber', 'MessageGroupId', 'MessageDeduplicationId', 'DeadLetterQueueSourceArn'] as const) {
    if (a[k] !== undefined) attributes[k] = a[k];
  }
  const messageAttributes: SQSMessageAttributes = {};
  for (const [name, v] of Object.entries(m.MessageAttributes ?? {}) as [string, MessageAttributeValue][]) {
    messageAttributes[name] = {
      dataType: v.DataType ?? 'String',
      ...(v.StringValue !== undefined ? { stringValue: v.StringValue } : {}),
      ...(v.BinaryValue !== undefined ? { binaryValue: Buffer.from(v.BinaryValue).toString('base64') } : {}),
      stringListValues: [],
      binaryListValues: [],
    };
  }
  return {
    messageId: m.MessageId!,
    receiptHandle: m.ReceiptHandle!,
    body: m.Body ?? '',
    attributes,
    messageAttributes,
    md5OfBody: m.MD5OfBody ?? '',
    ...(m.MD5OfMessageAttributes ? { md5OfMessageAttributes: m.MD5OfMessageAttributes } : {}),
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  };
}

/**
 * Which records succeeded, given the handler's outcome, per Lambda's rules:
 * a throw (or a timeout) fails the batch; a response naming an id that is not in the
 * batch, or an empty id, is invalid and also fails the whole batch.
 */
export function succeededRecords(
  records: readonly SQSRecord[],
  outcome: { ok: true; response: SQSBatchResponse | void | undefined } | { ok: false },
): SQSRecord[] {
  if (!outcome.ok) return [];
  const failures = outcome.response?.batchItemFailures ?? [];
  const ids = new Set(records.map((r) => r.messageId));
  const failed = new Set<string>();
  for (const f of failures) {
    if (!f || typeof f.itemIdentifier !== 'string' || !ids.has(f.itemIdentifier)) return [];
    failed.add(f.itemIdentifier);
  }
  return records.filter((r) => !failed.has(r.messageId));
}

export interface SqsEventSourceOptions {
  readonly sqs: SQSClient;
  readonly queueUrl: string;
  readonly queueArn: string;
  readonly region: string;
  readonly handler: SqsHandler;
  readonly functionName?: string;
  /**
   * Records per invocation (Lambda BatchSize, 1..10,000). Gathered from receives of at most
   * 10; above 10 only with a batching window, as Lambda requires.
   */
  readonly batchSize: number;
  /**
   * Lambda MaximumBatchingWindowInSeconds: after the first record, receives go on until
   * the batch is full, this window has passed, or the batch nears the 6 MB invocation
   * payload. 0 = invoke with what the first receive brought.
   * @default 0
   */
  readonly batchWindowSeconds?: number;
  /** Concurrent pollers, i.e. concurrent invocations (Lambda MaximumConcurrency). */
  readonly concurrency: number;
  /** Lambda timeout: past it the batch counts as failed (the handler keeps running, as a timed-out Lambda's side effects do). */
  readonly timeoutMs?: number;
  /** Long-poll wait per receive. */
  readonly waitTimeSeconds?: number;
  /** Invocation errors and handler throws; defaults to console.error. */
  readonly onError?: (err: unknown, detail: string) => void;
}

export interface SqsEventSourceStats {
  invocations: number;
  recordsReceived: number;
  recordsDeleted: number;
  recordsFailed: number;
  handlerErrors: number;
}

/**
 * Long-polls a queue and invokes a handler like the Lambda SQS event source mapping. As in
 * Lambda, a record that failed (listed in batchItemFailures, or all of them on a throw or
 * timeout) is left as it is: not deleted, and its visibility untouched, so it comes back
 * after the queue's visibility timeout, or after whatever visibility the handler set on
 * it (the router backs records off that way during an outage, core/ingest/ingest-failures.ts).
 * Each record carries its `ApproximateReceiveCount`.
 */
export class SqsEventSource {
  readonly stats: SqsEventSourceStats = { invocations: 0, recordsReceived: 0, recordsDeleted: 0, recordsFailed: 0, handlerErrors: 0 };
  readonly #o: SqsEventSourceOptions;
  readonly #abort = new AbortController();
  #loops: Promise<void>[] = [];

  constructor(options: SqsEventSourceOptions) {
    if (!(options.batchSize >= 1 && options.batchSize <= 10_000)) throw new Error('batchSize must be 1..10000');
    if (options.batchSize > 10 && !((options.batchWindowSeconds ?? 0) >= 1)) throw new Error('batchSize above 10 needs batchWindowSeconds of at least 1 (as Lambda)');
    if (options.concurrency < 1) throw new Error('concurrency must be at least 1');
    this.#o = options;
  }

  start(): this {
    if (this.#loops.length > 0) return this;
    for (let i = 0; i < this.#o.concurrency; i++) this.#loops.push(this.#poll());
    return this;
  }

  /** Stops polling, waits for invocations under way; undeleted records stay in the queue. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await Promise.allSettled(this.#loops);
    this.#loops = [];
  }

  async #poll(): Promise<void> {
    const signal = this.#abort.signal;
    const onError = this.#o.onError ?? ((err, detail) => console.error(`[event-source] ${detail}:`, err));
    while (!signal.aborted) {
      let messages: Message[];
      try {
        messages = await this.#receive(this.#o.batchSize, this.#o.waitTimeSeconds ?? 20, signal);
        if (messages.length > 0) messages = await this.#gather(messages, signal);
      } catch (err) {
        if (signal.aborted) return;
        onError(err, 'ReceiveMessage failed');
        await sleep(500);
        continue;
      }
      if (messages.length === 0) continue;
      await this.#invoke(messages, onError);
    }
  }

  async #receive(upTo: number, waitSeconds: number, signal: AbortSignal): Promise<Message[]> {
    const r = await this.#o.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.#o.queueUrl,
        MaxNumberOfMessages: Math.min(10, upTo),
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
      { abortSignal: signal },
    );
    return r.Messages ?? [];
  }

  /**
   * The batching window: after the first receive, more receives until the batch is full,
   * the window has passed, or one more receive of 10 could push the event past Lambda's
   * 6 MB payload. A receive that fails ends the gathering; what was gathered is invoked.
   */
  async #gather(first: Message[], signal: AbortSignal): Promise<Message[]> {
    const windowMs = (this.#o.batchWindowSeconds ?? 0) * 1000;
    const batch = [...first];
    const sizeOf = (m: Message) => JSON.stringify(toSqsRecord(m, this.#o.queueArn, this.#o.region)).length;
    let bytes = batch.reduce((n, m) => n + sizeOf(m), 0);
    let largest = Math.max(...batch.map(sizeOf));
    const deadline = Date.now() + windowMs;
    while (batch.length < this.#o.batchSize && !signal.aborted && bytes + 10 * largest <= LAMBDA_INVOKE_PAYLOAD_BYTES) {
      const leftMs = deadline - Date.now();
      if (leftMs <= 0) break;
      let more: Message[];
      const waitSeconds = Math.min(20, Math.floor(leftMs / 1000));
      try {
        // Long polls for the window's whole seconds; short ones, paced, for its last second.
        more = await this.#receive(this.#o.batchSize - batch.length, waitSeconds, signal);
      } catch {
        break;
      }
      if (more.length === 0 && waitSeconds === 0) await sleep(Math.min(50, leftMs));
      for (const m of more) {
        const size = sizeOf(m);
        bytes += size;
        largest = Math.max(largest, size);
        batch.push(m);
      }
    }
    return batch;
  }

  async #invoke(messages: Message[], onError: (err: unknown, detail: string) => void): Promise<void> {
    const o = this.#o;
    const records = messages.map((m) => toSqsRecord(m, o.queueArn, o.region));
    this.stats.invocations++;
    this.stats.recordsReceived += records.length;
    const timeoutMs = o.timeoutMs ?? 60_000;
    const context = lambdaContext(o.functionName ?? 'local-function', o.region, timeoutMs);
    let outcome: { ok: true; response: SQSBatchResponse | void | undefined } | { ok: false };
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Task timed out after ${timeoutMs} ms`)), timeoutMs);
      });
      outcome = { ok: true, response: await Promise.race([o.handler({ Records: records }, context), timeout]) };
    } catch (err) {
      this.stats.handlerErrors++;
      onError(err, `${context.functionName} failed; all ${records.length} records will be retried`);
      outcome = { ok: false };
    } finally {
      clearTimeout(timer);
    }
    const done = succeededRecords(records, outcome);
    this.stats.recordsFailed += records.length - done.length;
    for (let i = 0; i < done.length; i += 10) {
      const chunk = done.slice(i, i + 10);
      try {
        const r = await o.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: o.queueUrl,
            Entries: chunk.map((rec, j) => ({ Id: String(j), ReceiptHandle: rec.receiptHandle })),
          }),
        );
        this.stats.recordsDeleted += r.Successful?.length ?? 0;
        if (r.Failed?.length) onError(r.Failed, 'DeleteMessageBatch partially failed');
      } catch (err) {
        onError(err, 'DeleteMessageBatch failed');
      }
    }
  }
}
