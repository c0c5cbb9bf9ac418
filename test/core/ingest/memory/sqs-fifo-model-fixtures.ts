/**
 * Shared set-up of the SQS FIFO model's tests (sqs-fifo-model*.test.ts): a queue and its
 * DLQ on a hand-moved clock, and thin wrappers over the SDK commands the tests send.
 */
import {
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type Message,
} from '@aws-sdk/client-sqs';
import { ManualClock, SqsFifoModel } from '../../../../core/ingest/memory/sqs-fifo-model.ts';

/** The queue every test uses (FIFO, 30 s visibility unless `setup` says otherwise). */
export const URL = 'http://model.local/000000000000/q.fifo';
/** Its dead-letter queue (the redrive target when `setup` is given a maxReceiveCount). */
export const DLQ = 'http://model.local/000000000000/q-dlq.fifo';

/** A model on a {@link ManualClock} that creates no queue by itself, with {@link URL} and {@link DLQ}. */
export function setup(opts: { maxReceiveCount?: number; visibility?: number } = {}) {
  const clock = new ManualClock();
  const model = new SqsFifoModel({ now: clock.now, autoCreateQueues: false });
  model.createQueue(URL, {
    visibilityTimeoutSeconds: opts.visibility ?? 30,
    ...(opts.maxReceiveCount !== undefined ? { maxReceiveCount: opts.maxReceiveCount, deadLetterUrl: DLQ } : {}),
  });
  if (opts.maxReceiveCount === undefined) model.createQueue(DLQ);
  return { clock, model };
}

/** Sends each item with SendMessage, in order (dedup id `group:body` unless given). */
export async function sendAll(model: SqsFifoModel, items: readonly { group: string; body: string; dedup?: string }[], url = URL): Promise<void> {
  for (const it of items) {
    await model.send(new SendMessageCommand({ QueueUrl: url, MessageBody: it.body, MessageGroupId: it.group, MessageDeduplicationId: it.dedup ?? `${it.group}:${it.body}` }));
  }
}

/** One ReceiveMessage (asking for the receive count and group id); the messages it returned. */
export async function receive(model: SqsFifoModel, max = 10, wait = 0, url = URL, signal?: AbortSignal): Promise<Message[]> {
  const r = await model.send(
    new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: max, WaitTimeSeconds: wait, MessageSystemAttributeNames: ['ApproximateReceiveCount', 'MessageGroupId'] }),
    signal ? { abortSignal: signal } : undefined,
  );
  return r.Messages ?? [];
}

/** One DeleteMessageBatch of the handles, entry ids `0`, `1`, ... in order. */
export async function deleteBatch(model: SqsFifoModel, handles: readonly string[], url = URL) {
  return model.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: handles.map((h, i) => ({ Id: String(i), ReceiptHandle: h })) }));
}

/** The error `p` rejects with; fails the test when `p` resolves. */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}
