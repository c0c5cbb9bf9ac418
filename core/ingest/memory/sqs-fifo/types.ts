/**
 * The SQS FIFO model's types (core/ingest/memory/sqs-fifo-model.ts): the public ones the
 * entry module re-exports, and the internal state its parts share.
 */
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';

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

// ------------------------------------------------------------------ internal (not re-exported)

/** One queue's state: its settings, every message it ever held, its deduplication window. */
export interface QueueState {
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

export type MutableMessage = { -readonly [K in keyof ModelMessage]: ModelMessage[K] };

/** Where a receipt handle points. */
export interface HandleInfo {
  readonly queueUrl: string;
  readonly message: MutableMessage;
}

/** Why one entry (or a single-message call) failed: SQS's error code and whose fault. */
export interface EntryProblem {
  readonly code: string;
  readonly message: string;
  readonly senderFault: boolean;
}

// SDK command inputs and outputs, loosely typed: the model reads and builds them as SQS's wire shapes.
export type Input = Record<string, any>;
export type Output = Record<string, any>;
