/**
 * The SQS FIFO model (core/ingest/memory/sqs-fifo-model.ts) against the behaviour AWS documents:
 * each test would fail if the model got that behaviour wrong. This file: delivery (groups,
 * visibility, receipt handles, deduplication, redrive, lazy queues, long polling); batches,
 * injected faults and request limits are in sqs-fifo-model-batches.test.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  SendMessageCommand,
} from '@aws-sdk/client-sqs';
import { ManualClock, SqsFifoModel, SQS_LIMITS } from '../../../../core/ingest/memory/sqs-fifo-model.ts';
import { DLQ, deleteBatch, receive, rejection, sendAll, setup, URL } from './sqs-fifo-model-fixtures.ts';

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
