/**
 * The SQS FIFO model (core/ingest/memory/sqs-fifo-model.ts) against the behaviour AWS documents:
 * batches, injected faults and the limits SQS puts on requests (ids, bodies, batch sizes,
 * receive parameters). Delivery itself is in sqs-fifo-model.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs';
import { SqsFifoModel, throttled } from '../../../../core/ingest/memory/sqs-fifo-model.ts';
import { deleteBatch, receive, rejection, sendAll, setup, URL } from './sqs-fifo-model-fixtures.ts';
import { SlotQueues } from '../../../../core/ingest/sqs/slot-queues.ts';
import type { FrameMessage } from '../../../../core/ingest/messages.ts';

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

  // Production code under the model's limits: a valid video id (up to 128 characters, core/ingest/keys.ts)
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
