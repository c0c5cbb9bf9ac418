/**
 * The SQS FIFO model (test/support/sqs-fifo-model.ts) against the behaviour AWS documents:
 * each test would fail if the model got that behaviour wrong.
 */
import { describe, expect, it } from 'vitest';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  type Message,
} from '@aws-sdk/client-sqs';
import { ManualClock, SqsFifoModel, SQS_LIMITS, throttled } from './sqs-fifo-model.ts';
import { SlotQueues } from '../../core/aws/slot-queues.ts';
import type { FrameMessage } from '../../core/messages.ts';

const URL = 'http://model.local/000000000000/q.fifo';
const DLQ = 'http://model.local/000000000000/q-dlq.fifo';

function setup(opts: { maxReceiveCount?: number; visibility?: number } = {}) {
  const clock = new ManualClock();
  const model = new SqsFifoModel({ now: clock.now, autoCreateQueues: false });
  model.createQueue(URL, {
    visibilityTimeoutSeconds: opts.visibility ?? 30,
    ...(opts.maxReceiveCount !== undefined ? { maxReceiveCount: opts.maxReceiveCount, deadLetterUrl: DLQ } : {}),
  });
  if (opts.maxReceiveCount === undefined) model.createQueue(DLQ);
  return { clock, model };
}

async function sendAll(model: SqsFifoModel, items: readonly { group: string; body: string; dedup?: string }[], url = URL): Promise<void> {
  for (const it of items) {
    await model.send(new SendMessageCommand({ QueueUrl: url, MessageBody: it.body, MessageGroupId: it.group, MessageDeduplicationId: it.dedup ?? `${it.group}:${it.body}` }));
  }
}

async function receive(model: SqsFifoModel, max = 10, wait = 0, url = URL, signal?: AbortSignal): Promise<Message[]> {
  const r = await model.send(
    new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: max, WaitTimeSeconds: wait, MessageSystemAttributeNames: ['ApproximateReceiveCount', 'MessageGroupId'] }),
    signal ? { abortSignal: signal } : undefined,
  );
  return r.Messages ?? [];
}

async function deleteBatch(model: SqsFifoModel, handles: readonly string[], url = URL) {
  return model.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: handles.map((h, i) => ({ Id: String(i), ReceiptHandle: h })) }));
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

describe('receive and message groups', () => {
  it('returns several messages of one group in one receive, in send order', async () => {
    // Prepare
    const { model } = setup();
    await sendAll(model, [1, 2, 3, 4, 5].map((n) => ({ group: 'video-a', body: `a${n}` })));
    // Act
    const got = await receive(model, 10);
    // Assess
    expect(got.map((m) => m.Body)).toEqual(['a1', 'a2', 'a3', 'a4', 'a5']);
    expect(got.every((m) => m.Attributes?.MessageGroupId === 'video-a')).toBe(true);
    expect(model.maxGroupRunPerReceive(URL)).toBe(5);
  });

  it('fills a receive from the oldest group first, then the next, never more than MaxNumberOfMessages', async () => {
    // Prepare
    const { model } = setup();
    await sendAll(model, [
      { group: 'g1', body: 'g1-1' },
      { group: 'g2', body: 'g2-1' },
      { group: 'g1', body: 'g1-2' },
      { group: 'g2', body: 'g2-2' },
      { group: 'g1', body: 'g1-3' },
    ]);
    // Act
    const got = await receive(model, 4);
    // Assess
    expect(got.map((m) => m.Body)).toEqual(['g1-1', 'g1-2', 'g1-3', 'g2-1']);
  });

  it('blocks a group while one of its messages is in flight, and serves other groups meanwhile', async () => {
    // Prepare
    const { model } = setup();
    await sendAll(model, [
      { group: 'a', body: 'a1' },
      { group: 'a', body: 'a2' },
    ]);
    const [first] = await receive(model, 1);
    await sendAll(model, [{ group: 'b', body: 'b1' }]);
    // Act
    const whileInFlight = await receive(model, 10);
    await deleteBatch(model, [first!.ReceiptHandle!]);
    const afterDelete = await receive(model, 10);
    // Assess
    expect(first!.Body).toBe('a1');
    expect(whileInFlight.map((m) => m.Body)).toEqual(['b1']);
    expect(afterDelete.map((m) => m.Body)).toEqual(['a2']);
  });

  it('keeps the group blocked while a later message of it is in flight, even when the head is visible again', async () => {
    // Prepare: a1 and a2 received together; a1 made visible again, a2 still in flight.
    const { model } = setup();
    await sendAll(model, [
      { group: 'a', body: 'a1' },
      { group: 'a', body: 'a2' },
    ]);
    const [a1] = await receive(model, 10);
    await model.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: URL, Entries: [{ Id: 'x', ReceiptHandle: a1!.ReceiptHandle!, VisibilityTimeout: 0 }] }));
    // Act
    const got = await receive(model, 10);
    // Assess
    expect(got).toEqual([]);
    expect(model.pending(URL).map((m) => m.state)).toEqual(['visible', 'in-flight']);
  });

  it('makes a message visible again when its visibility timeout runs out, with a higher receive count', async () => {
    // Prepare
    const { model, clock } = setup({ visibility: 10 });
    await sendAll(model, [{ group: 'a', body: 'a1' }]);
    await receive(model);
    // Act
    clock.advance(9_999);
    const early = await receive(model);
    clock.advance(1);
    const again = await receive(model);
    // Assess
    expect(early).toEqual([]);
    expect(again.map((m) => [m.Body, m.Attributes?.ApproximateReceiveCount])).toEqual([['a1', '2']]);
  });

  it('reports visible and in-flight counts in GetQueueAttributes', async () => {
    // Prepare
    const { model } = setup();
    await sendAll(model, [
      { group: 'a', body: 'a1' },
      { group: 'a', body: 'a2' },
      { group: 'b', body: 'b1' },
    ]);
    await receive(model, 2);
    // Act
    const r = await model.send(new GetQueueAttributesCommand({ QueueUrl: URL, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
    // Assess
    expect(r.Attributes).toEqual({ ApproximateNumberOfMessages: '1', ApproximateNumberOfMessagesNotVisible: '2' });
  });
});

describe('receipt handles', () => {
  it('gives each receive a new receipt handle and rejects the stale one in a batch delete', async () => {
    // Prepare
    const { model, clock } = setup({ visibility: 5 });
    await sendAll(model, [{ group: 'a', body: 'a1' }]);
    const [first] = await receive(model);
    clock.advance(5_000);
    const [second] = await receive(model);
    // Act
    const stale = await deleteBatch(model, [first!.ReceiptHandle!]);
    const fresh = await deleteBatch(model, [second!.ReceiptHandle!]);
    // Assess
    expect(second!.ReceiptHandle).not.toBe(first!.ReceiptHandle);
    expect(stale.Failed).toEqual([expect.objectContaining({ Id: '0', Code: 'ReceiptHandleIsInvalid', SenderFault: true })]);
    expect(stale.Successful).toEqual([]);
    expect(fresh.Successful).toEqual([{ Id: '0' }]);
    expect(model.messages(URL).map((m) => m.state)).toEqual(['deleted']);
  });

  it('rejects a delete with a handle whose visibility ran out (FIFO: the handle has expired)', async () => {
    // Prepare
    const { model, clock } = setup({ visibility: 5 });
    await sendAll(model, [{ group: 'a', body: 'a1' }]);
    const [m] = await receive(model);
    clock.advance(5_000);
    // Act
    const e = await rejection(model.send(new DeleteMessageCommand({ QueueUrl: URL, ReceiptHandle: m!.ReceiptHandle! })));
    // Assess
    expect(e.name).toBe('InvalidParameterValue');
    expect(e.message).toMatch(/expired/);
    expect(model.pending(URL)).toHaveLength(1);
  });

  it('makes a message visible at once with visibility 0, and a stale handle cannot change visibility', async () => {
    // Prepare
    const { model } = setup();
    await sendAll(model, [{ group: 'a', body: 'a1' }]);
    const [first] = await receive(model);
    // Act
    await model.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: URL, Entries: [{ Id: 'x', ReceiptHandle: first!.ReceiptHandle!, VisibilityTimeout: 0 }] }));
    const [second] = await receive(model);
    const staleChange = await model.send(
      new ChangeMessageVisibilityBatchCommand({ QueueUrl: URL, Entries: [{ Id: 'x', ReceiptHandle: first!.ReceiptHandle!, VisibilityTimeout: 0 }] }),
    );
    // Assess
    expect(second!.Body).toBe('a1');
    expect(staleChange.Failed).toEqual([expect.objectContaining({ Id: 'x', Code: 'ReceiptHandleIsInvalid' })]);
    expect(model.pending(URL)[0]!.state).toBe('in-flight');
  });
});

describe('deduplication', () => {
  it('swallows a duplicate within 5 minutes (the send succeeds) and accepts the same id after', async () => {
    // Prepare
    const { model, clock } = setup();
    const send = (body: string) => model.send(new SendMessageCommand({ QueueUrl: URL, MessageBody: body, MessageGroupId: 'a', MessageDeduplicationId: 'a:1' }));
    const original = await send('first');
    // Act
    clock.advance(SQS_LIMITS.dedupWindowMs - 1);
    const duplicate = await send('second');
    clock.advance(1);
    const afterWindow = await send('third');
    // Assess
    expect(duplicate.MessageId).toBe(original.MessageId);
    expect(afterWindow.MessageId).not.toBe(original.MessageId);
    expect(model.messages(URL).map((m) => m.body)).toEqual(['first', 'third']);
    expect(model.duplicateCount(URL)).toBe(1);
  });

  it('deduplicates across the whole queue, not per group, and even after the original was deleted', async () => {
    // Prepare
    const { model } = setup();
    await sendAll(model, [{ group: 'a', body: 'x', dedup: 'same' }]);
    const [m] = await receive(model);
    await deleteBatch(model, [m!.ReceiptHandle!]);
    // Act
    await sendAll(model, [{ group: 'b', body: 'y', dedup: 'same' }]);
    // Assess
    expect(model.sentCount(URL)).toBe(1);
    expect(await receive(model)).toEqual([]);
  });
});

describe('redrive', () => {
  it('moves a message received maxReceiveCount times to the DLQ instead of delivering it, unblocking its group', async () => {
    // Prepare
    const { model, clock } = setup({ maxReceiveCount: 2, visibility: 1 });
    await sendAll(model, [
      { group: 'a', body: 'poison' },
      { group: 'a', body: 'next' },
    ]);
    const counts: string[] = [];
    for (let i = 0; i < 2; i++) {
      const [m] = await receive(model, 1);
      counts.push(`${m!.Body}#${m!.Attributes?.ApproximateReceiveCount}`);
      clock.advance(1_000);
    }
    // Act
    const third = await receive(model, 10);
    // Assess
    expect(counts).toEqual(['poison#1', 'poison#2']);
    expect(third.map((m) => m.Body)).toEqual(['next']);
    expect(model.messages(URL)[0]!.state).toBe('dead-lettered');
    expect(model.pending(DLQ).map((m) => [m.body, m.groupId])).toEqual([['poison', 'a']]);
  });
});

describe('lazily created queues', () => {
  it('creates a queue on first use with the default options, redriving X.fifo to X-dlq.fifo', async () => {
    // Prepare
    const clock = new ManualClock();
    const model = new SqsFifoModel({ now: clock.now, defaultQueue: { visibilityTimeoutSeconds: 1, maxReceiveCount: 1 } });
    const url = 'http://model.local/000000000000/p-slot-3.fifo';
    await sendAll(model, [{ group: 'a', body: 'once' }], url);
    await receive(model, 10, 0, url);
    clock.advance(1_000);
    // Act
    const again = await receive(model, 10, 0, url);
    // Assess
    expect(again).toEqual([]);
    expect(model.pending('http://model.local/000000000000/p-slot-3-dlq.fifo').map((m) => m.body)).toEqual(['once']);
  });
});

describe('batches and faults', () => {
  it('fails chosen entries of a DeleteMessageBatch and leaves their messages in flight', async () => {
    // Prepare
    const { model } = setup();
    await sendAll(model, ['m1', 'm2', 'm3'].map((body) => ({ group: 'a', body })));
    const got = await receive(model, 10);
    model.failDeletes((ctx) => ctx.body === 'm2', { code: 'InternalError' });
    // Act
    const r = await deleteBatch(model, got.map((m) => m.ReceiptHandle!));
    // Assess
    expect(r.Successful.map((s: { Id: string }) => s.Id)).toEqual(['0', '2']);
    expect(r.Failed).toEqual([expect.objectContaining({ Id: '1', Code: 'InternalError', SenderFault: false })]);
    expect(model.pending(URL).map((m) => [m.body, m.state])).toEqual([['m2', 'in-flight']]);
  });

  it('reports failed deletes through SlotQueues.delete as a count', async () => {
    // Prepare
    const { model } = setup();
    model.createQueue('http://model.local/000000000000/q0.fifo');
    const queues = new SlotQueues(model.asClient(), 'http://model.local/000000000000/q');
    await sendAll(model, ['m1', 'm2', 'm3'].map((body) => ({ group: 'a', body })), 'http://model.local/000000000000/q0.fifo');
    const got = await queues.receive(0, 10, 0);
    model.failNextDeletes(2);
    // Act
    const failed = await queues.delete(0, got.map((m) => m.receiptHandle));
    // Assess
    expect(failed).toBe(2);
    expect(model.pending('http://model.local/000000000000/q0.fifo').map((m) => m.body)).toEqual(['m1', 'm2']);
  });

  it('throws an injected error for a whole call the chosen number of times', async () => {
    // Prepare
    const { model } = setup();
    model.throwOn('ReceiveMessageCommand', throttled, 2);
    // Act
    const first = await rejection(receive(model));
    const second = await rejection(receive(model));
    const third = await receive(model);
    // Assess
    expect([first.name, second.name]).toEqual(['RequestThrottled', 'RequestThrottled']);
    expect(third).toEqual([]);
    expect(model.calls('ReceiveMessage').map((c) => c.error)).toEqual(['RequestThrottled', 'RequestThrottled', undefined]);
  });

  it.each([
    ['a group id over 128 characters', { MessageGroupId: 'g'.repeat(129) }, 'InvalidParameterValue'],
    ['a group id with a space', { MessageGroupId: 'video 1' }, 'InvalidParameterValue'],
    ['a group id with a non-ASCII letter', { MessageGroupId: 'vidéo' }, 'InvalidParameterValue'],
    ['an empty group id', { MessageGroupId: '' }, 'MissingParameter'],
    ['a dedup id over 128 characters', { MessageDeduplicationId: 'd'.repeat(129) }, 'InvalidParameterValue'],
    ['no dedup id on a queue without content-based deduplication', { MessageDeduplicationId: undefined }, 'InvalidParameterValue'],
    ['a body over 256 KiB', { MessageBody: 'x'.repeat(262_145) }, 'InvalidParameterValue'],
    ['a body with a forbidden control character', { MessageBody: 'a\u0001b' }, 'InvalidMessageContents'],
    ['a per-message delay on a FIFO queue', { DelaySeconds: 5 }, 'InvalidParameterValue'],
  ])('rejects SendMessage with %s', async (_what, override, code) => {
    // Prepare
    const { model } = setup();
    const input = { QueueUrl: URL, MessageBody: 'ok', MessageGroupId: 'g', MessageDeduplicationId: 'd', ...override };
    // Act
    const e = await rejection(model.send(new SendMessageCommand(input)));
    // Assess
    expect(e.name).toBe(code);
    expect(model.sentCount(URL)).toBe(0);
  });

  it('accepts ids of exactly 128 characters of every allowed punctuation mark, and a body of exactly 256 KiB', async () => {
    // Prepare
    const punctuation = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
    const id = (punctuation + 'A0z').padEnd(128, 'x');
    const { model } = setup();
    // Act
    await model.send(new SendMessageCommand({ QueueUrl: URL, MessageBody: 'y'.repeat(262_144), MessageGroupId: id, MessageDeduplicationId: id }));
    // Assess
    expect(model.pending(URL).map((m) => [m.groupId.length, m.body.length])).toEqual([[128, 262_144]]);
  });

  it('rejects whole batch requests the way SQS does', async () => {
    // Prepare
    const { model } = setup();
    const entry = (id: string, body = 'b') => ({ Id: id, MessageBody: body, MessageGroupId: 'g', MessageDeduplicationId: `d-${id}` });
    // Act
    const tooMany = await rejection(model.send(new SendMessageBatchCommand({ QueueUrl: URL, Entries: Array.from({ length: 11 }, (_, i) => entry(String(i))) })));
    const repeated = await rejection(model.send(new SendMessageBatchCommand({ QueueUrl: URL, Entries: [entry('1'), entry('1')] })));
    const empty = await rejection(model.send(new SendMessageBatchCommand({ QueueUrl: URL, Entries: [] })));
    const badId = await rejection(model.send(new SendMessageBatchCommand({ QueueUrl: URL, Entries: [entry('a.b')] })));
    const tooLong = await rejection(model.send(new SendMessageBatchCommand({ QueueUrl: URL, Entries: [entry('1', 'x'.repeat(200_000)), entry('2', 'x'.repeat(100_000))] })));
    const deleteTooMany = await rejection(deleteBatch(model, Array.from({ length: 11 }, (_, i) => `h${i}`)));
    // Assess
    expect([tooMany.name, repeated.name, empty.name, badId.name, tooLong.name, deleteTooMany.name]).toEqual([
      'TooManyEntriesInBatchRequest',
      'BatchEntryIdsNotDistinct',
      'EmptyBatchRequest',
      'InvalidBatchEntryId',
      'BatchRequestTooLong',
      'TooManyEntriesInBatchRequest',
    ]);
    expect(model.sentCount(URL)).toBe(0);
  });

  it('fails only the bad entries of a SendMessageBatch and sends the rest', async () => {
    // Prepare
    const { model } = setup();
    // Act
    const r = await model.send(
      new SendMessageBatchCommand({
        QueueUrl: URL,
        Entries: [
          { Id: 'ok1', MessageBody: 'b1', MessageGroupId: 'g', MessageDeduplicationId: 'd1' },
          { Id: 'bad', MessageBody: 'b2', MessageGroupId: 'g', MessageDeduplicationId: 'v'.repeat(129) },
          { Id: 'ok2', MessageBody: 'b3', MessageGroupId: 'g', MessageDeduplicationId: 'd3' },
        ],
      }),
    );
    // Assess
    expect(r.Successful.map((s: { Id: string }) => s.Id)).toEqual(['ok1', 'ok2']);
    expect(r.Failed).toEqual([expect.objectContaining({ Id: 'bad', Code: 'InvalidParameterValue', SenderFault: true })]);
    expect(model.pending(URL).map((m) => m.body)).toEqual(['b1', 'b3']);
  });

  it('rejects a receive asking for more than 10 messages or waiting more than 20 seconds', async () => {
    // Prepare
    const { model } = setup();
    // Act
    const tooMany = await rejection(receive(model, 11));
    const tooLong = await rejection(receive(model, 10, 21));
    // Assess
    expect([tooMany.name, tooLong.name]).toEqual(['InvalidParameterValue', 'InvalidParameterValue']);
  });

  // Production code under the model's limits: a valid video id (up to 128 characters, core/keys.ts)
  // must give a valid dedup id (README: "hashed when too long for SQS's 128 characters").
  it('accepts what SlotQueues sends for a video id of 128 characters (dedup id within 128 characters)', async () => {
    // Prepare
    const model = new SqsFifoModel();
    const queues = new SlotQueues(model.asClient(), 'http://model.local/000000000000/slot-');
    const videoId = 'v'.repeat(128);
    const msg: FrameMessage = { kind: 'frame', videoId, frame: 7, bucket: 'b', key: `frames/${videoId}/000007.jpg`, sizeBytes: 1, eventTime: '2026-11-01T00:00:00.000Z' };
    // Act
    const [outcome] = await queues.send(0, [{ message: msg }]);
    // Assess: the dedup id the production code derives must be within SQS's 128 characters too.
    expect(outcome).toEqual({ ok: true });
  });
});

describe('long polling', () => {
  it('returns as soon as a message arrives during the wait', async () => {
    // Prepare
    const { model } = setup();
    const polling = receive(model, 10, 20);
    // Act
    await new Promise((r) => setTimeout(r, 50));
    await sendAll(model, [{ group: 'a', body: 'late-arrival' }]);
    const got = await polling;
    // Assess
    expect(got.map((m) => m.Body)).toEqual(['late-arrival']);
  });

  it('returns empty after the wait when nothing comes', async () => {
    // Prepare
    const model = new SqsFifoModel({ longPollCapMs: 30 });
    model.createQueue(URL);
    // Act
    const got = await receive(model, 10, 20);
    // Assess
    expect(got).toEqual([]);
    expect(model.receives(URL)).toHaveLength(1);
  });

  it('rejects with AbortError when the abort signal fires during the wait, and hands nothing out', async () => {
    // Prepare
    const { model } = setup();
    const controller = new AbortController();
    const polling = rejection(receive(model, 10, 20, URL, controller.signal));
    // Act
    await new Promise((r) => setTimeout(r, 30));
    controller.abort();
    const e = await polling;
    await sendAll(model, [{ group: 'a', body: 'after-abort' }]);
    // Assess
    expect(e.name).toBe('AbortError');
    expect((await receive(model)).map((m) => m.Body)).toEqual(['after-abort']);
  });
});
