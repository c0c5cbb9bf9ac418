/**
 * An in-memory model of Amazon SQS FIFO queues with the semantics AWS documents: the
 * ingest wing's twin of the slot queues' service (the production SlotQueues adapter runs
 * on {@link SqsFifoModel.asClient}), for tests and benches. fauxqs (the emulator the local stack uses) hands out at most one message per
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
import { randomUUID } from 'node:crypto';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { FifoCommands } from './sqs-fifo/commands.ts';
import { commandName, FaultInjector, normaliseCommand } from './sqs-fifo/faults.ts';
import { abortError, SQS_LIMITS } from './sqs-fifo/limits.ts';
import { FifoQueueStore, snapshot } from './sqs-fifo/store.ts';
import type { CallRecord, Delivery, EntryContext, EntryFaultOptions, Input, ModelMessage, QueueOptions, ReceiveRecord, SqsFifoModelOptions } from './sqs-fifo/types.ts';

// The model's parts live in ./sqs-fifo/ (types, limits and errors, queue state, commands,
// faults); this module stays the one importers use.
export { SQS_LIMITS, sqsError, throttled } from './sqs-fifo/limits.ts';
export type {
  CallRecord,
  Delivery,
  EntryContext,
  EntryFaultOptions,
  MessageState,
  ModelMessage,
  QueueOptions,
  ReceiveRecord,
  SqsFifoModelOptions,
} from './sqs-fifo/types.ts';

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

/** SQS FIFO queues in memory, answering SDK commands through {@link SqsFifoModel.send} (see the module's doc). */
export class SqsFifoModel {
  private readonly now: () => number;
  private readonly store: FifoQueueStore;
  private readonly faults = new FaultInjector();
  private readonly commands: FifoCommands;
  private readonly receiveLog: ReceiveRecord[] = [];
  private readonly callLog: CallRecord[] = [];

  constructor(options: SqsFifoModelOptions = {}) {
    this.now = options.now ?? Date.now;
    this.store = new FifoQueueStore({ now: this.now, autoCreate: options.autoCreateQueues ?? true, defaultQueue: options.defaultQueue ?? {} });
    this.commands = new FifoCommands(this.store, this.faults, {
      now: this.now,
      maxMessageBytes: options.maxMessageBytes ?? SQS_LIMITS.maxMessageBytes,
      longPollCapMs: options.longPollCapMs,
      pollIntervalMs: options.pollIntervalMs ?? 25,
      receiveLog: this.receiveLog,
    });
  }

  // ------------------------------------------------------------------ set-up

  /**
   * Creates (or re-creates with new options, keeping its messages) a FIFO queue. A
   * redrive needs both `maxReceiveCount` and `deadLetterUrl`; the DLQ is created too.
   */
  createQueue(url: string, options: QueueOptions = {}): string {
    return this.store.createQueue(url, options);
  }

  /**
   * Creates the project's slot queues: `${prefix}${slot}.fifo`, each with its DLQ
   * `${prefix}${slot}-dlq.fifo` (see core/ingest/sqs/slot-queues.ts). Returns the queue URLs.
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
    this.faults.throwOn(command, error, times, when);
    return this;
  }

  /**
   * Makes entries of a batch command (`SendMessageBatch`, `DeleteMessageBatch`,
   * `ChangeMessageVisibilityBatch`) that match `predicate` fail: they are reported in
   * `Failed[]` with `code`, and nothing is done for them. The single-message commands
   * (`DeleteMessage`, ...) throw instead.
   */
  failEntries(command: string, predicate: (ctx: EntryContext) => boolean, options: EntryFaultOptions = {}): this {
    this.faults.failEntries(command, predicate, options);
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
    this.faults.clear();
  }

  // ------------------------------------------------------------------ assertions

  /** Every message ever enqueued on the queue, in send order, with its state now. */
  messages(url: string): ModelMessage[] {
    return this.store.find(url)?.messages.map(snapshot) ?? [];
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
    return this.store.all().filter((q) => url === undefined || q.url === url).reduce((n, q) => n + q.sent, 0);
  }

  /** Sends that deduplication swallowed. */
  duplicateCount(url?: string): number {
    return this.store.all().filter((q) => url === undefined || q.url === url).reduce((n, q) => n + q.duplicates, 0);
  }

  /** Every call made, oldest first (`command` narrows, e.g. `'DeleteMessageBatch'`). */
  calls(command?: string): CallRecord[] {
    const c = command === undefined ? undefined : normaliseCommand(command);
    return this.callLog.filter((r) => c === undefined || r.command === c);
  }

  queueUrls(): string[] {
    return this.store.urls();
  }

  /** Wakes waiting long polls now (e.g. after moving an injected clock). */
  wake(): void {
    this.store.wake();
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
      const fault = this.faults.takeCallFault(name, input);
      if (fault) throw fault;
      const out = await this.commands.dispatch(name, input, signal);
      const failed = (out.Failed as { Id: string }[] | undefined)?.map((f) => f.Id);
      if (failed && failed.length > 0) record.failedEntries = failed;
      return { ...out, $metadata: { httpStatusCode: 200, requestId: randomUUID(), attempts: 1, totalRetryDelay: 0 } };
    } catch (e) {
      record.error = e instanceof Error ? e.name : String(e);
      throw e;
    }
  }
}
