/**
 * SQS adapter for the slot FIFO queues: batched sends (router, forwards), receives,
 * deletes and visibility changes (worker). Group = video, dedup id = videoId:frame
 * (see {@link dedupId}: hashed when too long for SQS, and tagged for replays).
 */
import { randomUUID } from 'node:crypto';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { dedupId, type SlotMessage } from '../messages.ts';
import type { OutgoingMessage, ReceivedMessage, SendOutcome, SlotQueue, VisibilityChange } from '../port.ts';

export type { OutgoingMessage, ReceivedMessage, SendOutcome, VisibilityChange } from '../port.ts';

/** The slot queues on SQS FIFO (the ingest port's {@link SlotQueue}); built by composition roots only. */
export class SlotQueues implements SlotQueue {
  private readonly sqs: SQSClient;
  private readonly urlOf: (slot: number) => string;
  private readonly dlqUrlOf: (slot: number) => string;

  constructor(sqs: SQSClient, slotQueueUrlPrefix: string) {
    this.sqs = sqs;
    this.urlOf = (slot) => `${slotQueueUrlPrefix}${slot}.fifo`;
    this.dlqUrlOf = (slot) => `${slotQueueUrlPrefix}${slot}-dlq.fifo`;
  }

  url(slot: number): string {
    return this.urlOf(slot);
  }

  /** Sends in order, in SendMessageBatch calls within its limits ({@link sendInBatches}); returns one outcome per message. */
  send(slot: number, messages: readonly OutgoingMessage[]): Promise<SendOutcome[]> {
    return sendInBatches(
      this.sqs,
      this.urlOf(slot),
      messages.map((m) => {
        // The tag travels in the body too, so a worker that forwards the message keeps it.
        const message: SlotMessage = m.replayTag ? { ...m.message, replayTag: m.replayTag } : m.message;
        return {
          MessageBody: JSON.stringify(message),
          MessageGroupId: message.videoId,
          MessageDeduplicationId: dedupId(message),
        };
      }),
    );
  }

  async receive(slot: number, maxMessages: number, waitSeconds: number, abortSignal?: AbortSignal): Promise<ReceivedMessage[]> {
    const r = await this.sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: this.urlOf(slot),
        MaxNumberOfMessages: Math.min(10, maxMessages),
        WaitTimeSeconds: waitSeconds,
        MessageSystemAttributeNames: ['ApproximateReceiveCount', 'MessageGroupId', 'SentTimestamp'],
      }),
      { abortSignal },
    );
    return (r.Messages ?? []).map((m) => ({
      messageId: m.MessageId ?? '',
      receiptHandle: m.ReceiptHandle ?? '',
      body: m.Body ?? '',
      receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 1),
      groupId: m.Attributes?.MessageGroupId ?? '',
      ...(m.Attributes?.SentTimestamp ? { sentAtMs: Number(m.Attributes.SentTimestamp) } : {}),
    }));
  }

  /**
   * Deletes in batches of 10, all batches at once (a round of several videos holds tens of
   * messages, and the next receive of their groups waits on these deletes; decision 30);
   * returns how many deletes failed (they will be redelivered and deduplicated). A batch
   * that throws makes the call throw once every batch has settled.
   */
  async delete(slot: number, receiptHandles: readonly string[]): Promise<number> {
    const chunks: string[][] = [];
    for (let i = 0; i < receiptHandles.length; i += 10) chunks.push(receiptHandles.slice(i, i + 10));
    const settled = await Promise.allSettled(
      chunks.map((chunk) =>
        this.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: this.urlOf(slot),
            Entries: chunk.map((h, j) => ({ Id: String(j), ReceiptHandle: h })),
          }),
        ),
      ),
    );
    const rejected = settled.find((r) => r.status === 'rejected');
    if (rejected) throw rejected.reason;
    return settled.reduce((n, r) => n + (r.status === 'fulfilled' ? (r.value.Failed?.length ?? 0) : 0), 0);
  }

  /**
   * Sets the visibility timeout of received messages. Returns the handles SQS refused one
   * by one (a deleted message, an expired handle): the caller stops counting on those.
   * A failed call throws.
   */
  async extendVisibility(slot: number, receiptHandles: readonly string[], seconds: number): Promise<string[]> {
    const refused: string[] = [];
    for (let i = 0; i < receiptHandles.length; i += 10) {
      const chunk = receiptHandles.slice(i, i + 10);
      const r = await this.sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.urlOf(slot),
          Entries: chunk.map((h, j) => ({ Id: String(j), ReceiptHandle: h, VisibilityTimeout: seconds })),
        }),
      );
      for (const f of r?.Failed ?? []) {
        const handle = chunk[Number(f.Id)];
        if (handle !== undefined) refused.push(handle);
      }
    }
    return refused;
  }

  /** Parks an unusable message in the slot's DLQ with the reason, so it never blocks its group. */
  async deadLetter(slot: number, body: string, reason: string, groupId: string): Promise<void> {
    await this.sqs.send(
      new SendMessageCommand({
        QueueUrl: this.dlqUrlOf(slot),
        MessageBody: body,
        // Both ids must be 1-128 characters of [\x21-\x7e] or SQS refuses the message.
        MessageGroupId: groupId.replace(/[^\x21-\x7e]/g, '_').slice(0, 128) || 'malformed',
        // Every parking is its own message (a UUID: 36 characters, hex and '-').
        MessageDeduplicationId: randomUUID(),
        MessageAttributes: { reason: { DataType: 'String', StringValue: reason } },
      }),
    );
  }

  /** Messages visible in the slot's DLQ (the janitor's fleet-wide SlotDlqMessages gauge). */
  async dlqDepth(slot: number): Promise<number> {
    const r = await this.sqs.send(new GetQueueAttributesCommand({ QueueUrl: this.dlqUrlOf(slot), AttributeNames: ['ApproximateNumberOfMessages'] }));
    return Number(r.Attributes?.ApproximateNumberOfMessages ?? 0);
  }

  /** Visible and in-flight message counts. */
  async depth(slot: number): Promise<{ visible: number; inFlight: number }> {
    const r = await this.sqs.send(
      new GetQueueAttributesCommand({
        QueueUrl: this.urlOf(slot),
        AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'],
      }),
    );
    return {
      visible: Number(r.Attributes?.ApproximateNumberOfMessages ?? 0),
      inFlight: Number(r.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0),
    };
  }
}

/** A message for {@link sendInBatches}; the batch entry id is assigned there. */
export type BatchEntry = Omit<SendMessageBatchRequestEntry, 'Id'>;

/**
 * SendMessageBatch limits: 10 entries, and the whole request's payload no more than one
 * message may be (256 KiB; https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html).
 */
export const SEND_BATCH_MAX_ENTRIES = 10;
export const SEND_BATCH_MAX_BYTES = 256 * 1024;

/** Bytes an entry counts towards a batch's payload: its body and its attributes' names, types and values. */
function entryBytes(e: BatchEntry): number {
  let n = Buffer.byteLength(e.MessageBody ?? '');
  for (const [name, v] of Object.entries(e.MessageAttributes ?? {})) {
    n += Buffer.byteLength(name) + Buffer.byteLength(v.DataType ?? '') + Buffer.byteLength(v.StringValue ?? '') + (v.BinaryValue?.byteLength ?? 0);
  }
  return n;
}

/**
 * Consecutive chunks of `entries`, in order, each within the SendMessageBatch limits (an
 * entry alone over the byte limit gets a chunk of its own, and SQS refuses just that one).
 */
export function sendBatchChunks<E extends BatchEntry>(entries: readonly E[]): E[][] {
  const chunks: E[][] = [];
  let chunk: E[] = [];
  let bytes = 0;
  for (const e of entries) {
    const size = entryBytes(e);
    if (chunk.length > 0 && (chunk.length >= SEND_BATCH_MAX_ENTRIES || bytes + size > SEND_BATCH_MAX_BYTES)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(e);
    bytes += size;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}

/**
 * Sends entries in SendMessageBatch calls (10 entries, 256 KiB at most), one call after
 * another so they reach the queue in input order, and returns one outcome per entry, in
 * order: a failed entry or a failed call fails only the entries it covers.
 */
export async function sendInBatches(sqs: SQSClient, queueUrl: string, entries: readonly BatchEntry[]): Promise<SendOutcome[]> {
  const outcomes: SendOutcome[] = [];
  for (const chunk of sendBatchChunks(entries)) {
    try {
      const r = await sqs.send(new SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: chunk.map((e, j) => ({ ...e, Id: String(j) })) }));
      const failed = new Map((r.Failed ?? []).map((f) => [f.Id, f]));
      chunk.forEach((_, j) => {
        const f = failed.get(String(j));
        outcomes.push(f ? { ok: false, error: `${f.Code}: ${f.Message ?? ''}`, cause: { name: f.Code, senderFault: f.SenderFault } } : { ok: true });
      });
    } catch (e) {
      for (const _ of chunk) outcomes.push({ ok: false, error: e instanceof Error ? e.message : String(e), cause: e });
    }
  }
  return outcomes;
}

/**
 * ChangeMessageVisibilityBatch in calls of 10; returns how many changes failed (a failed
 * call fails its whole chunk). Used by the router to back an ingest record off during an
 * outage: a change that fails leaves the queue's own visibility timeout in force.
 */
export async function changeVisibilityInBatches(sqs: SQSClient, queueUrl: string, changes: readonly VisibilityChange[]): Promise<{ failed: number; errors: string[] }> {
  let failed = 0;
  const errors: string[] = [];
  for (let i = 0; i < changes.length; i += 10) {
    const chunk = changes.slice(i, i + 10);
    try {
      const r = await sqs.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: queueUrl,
          Entries: chunk.map((c, j) => ({ Id: String(j), ReceiptHandle: c.receiptHandle, VisibilityTimeout: c.visibilitySeconds })),
        }),
      );
      failed += r.Failed?.length ?? 0;
      for (const f of r.Failed ?? []) errors.push(`${f.Code}: ${f.Message ?? ''}`);
    } catch (e) {
      failed += chunk.length;
      errors.push(e instanceof Error ? e.message : String(e));
    }
  }
  return { failed, errors };
}
