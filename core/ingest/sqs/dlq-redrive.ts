/**
 * Moves every message of a dead-letter queue back to its source queue: the way back from
 * any DLQ (`affinity redrive`), so no DLQ is a silent end.
 *
 * On AWS this is SQS's own DLQ redrive: `StartMessageMoveTask` (FIFO queues included),
 * then `ListMessageMoveTasks` until the task is no longer RUNNING. Where the service does
 * not implement it (fauxqs answers `InvalidAction`), the move is done by hand: receive
 * from the DLQ, send to the source queue, delete from the DLQ only what was sent. A FIFO
 * message keeps its MessageGroupId (its video) and gets a fresh deduplication id, because
 * FIFO deduplication is queue-wide for 5 minutes and a re-send under the original id could
 * be dropped; a slot message that parses gets a `redrive-…` replay tag in its body (as
 * `affinity replay` tags re-sends), so its dedup id is fresh and a worker forwarding it
 * keeps it. Redrive is idempotent for frames: a redelivered frame that already has a
 * record is dropped by the worker as a duplicate.
 */
import { randomUUID } from 'node:crypto';
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  StartMessageMoveTaskCommand,
  type Message,
  type MessageAttributeValue,
  type SendMessageBatchRequestEntry,
  type SQSClient,
} from '@aws-sdk/client-sqs';
import { dedupId, parseSlotMessage } from '../messages.ts';

/** Attributes the router and worker add when they dead-letter a message; dropped on the way back (a new parking writes new ones). */
const PARKING_ATTRIBUTES = new Set(['reason', 'detail']);

/** How a redrive went. */
export interface RedriveResult {
  readonly dlqUrl: string;
  readonly sourceUrl: string;
  /** `move-task`: SQS's StartMessageMoveTask; `by-hand`: receive, send, delete; `empty`: nothing to move. */
  readonly method: 'move-task' | 'by-hand' | 'empty';
  /** Messages moved back. */
  readonly moved: number;
  /** Messages that could not be moved (left in the DLQ). */
  readonly failed: number;
  /** The move task's final status (`COMPLETED`, `FAILED`, `CANCELLED`), for `move-task`. */
  readonly taskStatus?: string;
  readonly failureReason?: string;
}

export interface RedriveOptions {
  /** Called with a line of progress. */
  readonly onProgress?: (line: string) => void;
  /** Between ListMessageMoveTasks polls. @default 2000 */
  readonly pollIntervalMs?: number;
  /** Longest wait for a move task. @default 1 hour */
  readonly maxWaitMs?: number;
  /** Forces the by-hand move (tests; services without StartMessageMoveTask). @default false */
  readonly byHand?: boolean;
}

/** Messages in a queue: visible plus in flight plus delayed. */
export async function queueMessageCount(sqs: SQSClient, url: string): Promise<number> {
  const r = await sqs.send(
    new GetQueueAttributesCommand({
      QueueUrl: url,
      AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'],
    }),
  );
  const a = r.Attributes ?? {};
  return Number(a.ApproximateNumberOfMessages ?? 0) + Number(a.ApproximateNumberOfMessagesNotVisible ?? 0) + Number(a.ApproximateNumberOfMessagesDelayed ?? 0);
}

async function queueArn(sqs: SQSClient, url: string): Promise<string> {
  const r = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }));
  const arn = r.Attributes?.QueueArn;
  if (!arn) throw new Error(`no QueueArn for ${url}`);
  return arn;
}

/** True for the error a service without StartMessageMoveTask answers. */
export function isUnsupportedOperation(e: unknown): boolean {
  const o = e as { name?: unknown; message?: unknown; $metadata?: { httpStatusCode?: unknown } } | undefined;
  const text = `${String(o?.name ?? '')} ${String(o?.message ?? '')}`;
  return /InvalidAction|UnsupportedOperation|UnknownOperation|NotImplemented|not (?:supported|implemented)/i.test(text) || o?.$metadata?.httpStatusCode === 501;
}

/** Moves every message of `dlqUrl` back to `sourceUrl` (its redrive source). */
export async function redriveDlq(sqs: SQSClient, dlqUrl: string, sourceUrl: string, o: RedriveOptions = {}): Promise<RedriveResult> {
  if ((await queueMessageCount(sqs, dlqUrl)) === 0) return { dlqUrl, sourceUrl, method: 'empty', moved: 0, failed: 0 };
  if (!o.byHand) {
    const dlqArn = await queueArn(sqs, dlqUrl);
    try {
      const started = await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlqArn, DestinationArn: await queueArn(sqs, sourceUrl) }));
      o.onProgress?.(`move task ${started.TaskHandle ?? '?'} started for ${dlqUrl}`);
      return { dlqUrl, sourceUrl, ...(await waitForMoveTask(sqs, dlqArn, o)) };
    } catch (e) {
      if (!isUnsupportedOperation(e)) throw e;
      o.onProgress?.(`StartMessageMoveTask is not supported here (${(e as Error).name}); moving ${dlqUrl} by receive, send, delete`);
    }
  }
  return { dlqUrl, sourceUrl, method: 'by-hand', ...(await moveByHand(sqs, dlqUrl, sourceUrl)) };
}

async function waitForMoveTask(sqs: SQSClient, dlqArn: string, o: RedriveOptions): Promise<Omit<RedriveResult, 'dlqUrl' | 'sourceUrl'>> {
  const deadline = Date.now() + (o.maxWaitMs ?? 3_600_000);
  for (;;) {
    const r = await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn, MaxResults: 1 }));
    const t = r.Results?.[0];
    if (t && t.Status !== 'RUNNING' && t.Status !== 'CANCELLING') {
      const moved = t.ApproximateNumberOfMessagesMoved ?? 0;
      const toMove = t.ApproximateNumberOfMessagesToMove ?? moved;
      return {
        method: 'move-task',
        moved,
        failed: Math.max(0, toMove - moved),
        ...(t.Status ? { taskStatus: t.Status } : {}),
        ...(t.FailureReason ? { failureReason: t.FailureReason } : {}),
      };
    }
    if (t) o.onProgress?.(`moved ${t.ApproximateNumberOfMessagesMoved ?? 0} of ${t.ApproximateNumberOfMessagesToMove ?? '?'}`);
    if (Date.now() > deadline) throw new Error(`move task on ${dlqArn} still ${t?.Status ?? 'unknown'} after ${(o.maxWaitMs ?? 3_600_000) / 1000} s; see ListMessageMoveTasks`);
    await new Promise((res) => setTimeout(res, o.pollIntervalMs ?? 2_000));
  }
}

/**
 * The send entry that puts a DLQ message back on its source queue. Pure.
 *
 * Keeps the body and message attributes (minus the parking reason), and on a FIFO queue
 * the MessageGroupId; gives a FIFO message a fresh deduplication id: a slot message is
 * tagged `tag` in its body (dedup id = {@link dedupId} of the tagged message), anything
 * else gets `tag` plus the message id.
 */
export function redriveEntry(m: Message, fifo: boolean, tag: string): Omit<SendMessageBatchRequestEntry, 'Id'> {
  const attributes: Record<string, MessageAttributeValue> = {};
  for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) if (!PARKING_ATTRIBUTES.has(k)) attributes[k] = v;
  let body = m.Body ?? '';
  const entry: Omit<SendMessageBatchRequestEntry, 'Id'> = { MessageBody: body, ...(Object.keys(attributes).length > 0 ? { MessageAttributes: attributes } : {}) };
  if (!fifo) return entry;
  const parsed = parseSlotMessage(body);
  let dedup: string;
  if (parsed) {
    const tagged = { ...parsed, replayTag: tag };
    body = JSON.stringify(tagged);
    dedup = dedupId(tagged);
  } else {
    dedup = `${tag}-${m.MessageId ?? randomUUID()}`.replace(/[^\x21-\x7e]/g, '_').slice(0, 128);
  }
  return { ...entry, MessageBody: body, MessageGroupId: m.Attributes?.MessageGroupId ?? parsed?.videoId ?? 'redriven', MessageDeduplicationId: dedup };
}

async function moveByHand(sqs: SQSClient, dlqUrl: string, sourceUrl: string): Promise<{ moved: number; failed: number }> {
  const fifo = sourceUrl.endsWith('.fifo');
  const tag = `redrive-${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;
  let moved = 0;
  let failed = 0;
  // A message that could not be sent stays invisible for the rest of this run, so the loop
  // ends; it is visible again in the DLQ afterwards.
  for (let empty = 0; empty < 2; ) {
    const r = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: dlqUrl,
        MaxNumberOfMessages: 10,
        WaitTimeSeconds: 1,
        VisibilityTimeout: 60,
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    );
    const messages = r.Messages ?? [];
    if (messages.length === 0) {
      empty++;
      continue;
    }
    empty = 0;
    const sent = await sqs.send(
      new SendMessageBatchCommand({ QueueUrl: sourceUrl, Entries: messages.map((m, i) => ({ Id: String(i), ...redriveEntry(m, fifo, tag) })) }),
    );
    const ok = new Set((sent.Successful ?? []).map((s) => s.Id));
    const toDelete = messages.filter((_, i) => ok.has(String(i)));
    failed += messages.length - toDelete.length;
    if (toDelete.length > 0) {
      const d = await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: dlqUrl, Entries: toDelete.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }));
      // A failed delete leaves a copy in the DLQ: a later redrive sends it again, which
      // the worker (a record exists) or router (the pin exists) treats as a duplicate.
      moved += toDelete.length - (d.Failed?.length ?? 0);
    }
  }
  return { moved, failed };
}
