/**
 * No DLQ is a silent end: `affinity redrive` moves the messages of the ingest DLQ and of
 * a slot DLQ back to their queues, where they are routed and processed, and every frame
 * ends with exactly one record (frames already recorded are dropped as duplicates).
 *
 * Real parts: the local stack (DynamoDB Local, fauxqs, router, workers) and the CLI's
 * `main`. fauxqs has no StartMessageMoveTask, so this exercises the receive / send /
 * delete move; the move-task path is AWS's own (and its answer-shape is unit-tested).
 */
import { dirname } from 'node:path';
import { SendMessageBatchCommand, SendMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { isUnsupportedOperation, queueMessageCount, redriveEntry } from '../../core/ingest/sqs/dlq-redrive.ts';
import { frameKey } from '../../core/ingest/keys.ts';
import { dedupId, type SlotMessage } from '../../core/ingest/messages.ts';
import { buildObjectCreatedEvent } from '../../core/ingest/s3-event-shapes.ts';
import { results, startTestStack, summary, uploadFrames, waitFor, type TestStack } from '../../harness/pipeline.ts';

/** Objects whose S3 notification is dropped: they exist, but only the DLQ knows them. */
const silent = new Set<string>();
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({
    tunables: { slotCount: 2 },
    notificationFault: (key) => (silent.has(key) ? { kind: 'drop' } : { kind: 'deliver' }),
  });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

async function cli(args: string[]) {
  const io = memoryIo();
  const code = await main([...args, '--state-dir', dirname(stack.stackFile)], io);
  return { code, out: io.lines.join('\n'), err: io.errors.join('\n') };
}

async function uploadSilently(videoId: string, frames: readonly number[], end?: number): Promise<void> {
  for (const f of frames) silent.add(frameKey(videoId, f));
  if (end !== undefined) silent.add(`frames/${videoId}/_end`);
  await uploadFrames(stack, videoId, frames, end !== undefined ? { end } : {});
}

function s3Event(key: string): string {
  return JSON.stringify(
    buildObjectCreatedEvent({
      region: stack.region,
      bucket: stack.wiring.bucket,
      key,
      sizeBytes: 100,
      eTag: 'e',
      eventName: 'ObjectCreated:Put',
      eventTime: new Date(),
      sequencer: Date.now().toString(16).toUpperCase().padStart(18, '0'),
      configurationId: 'test',
    }),
  );
}

async function completeWithOneRecordEach(videoId: string, last: number): Promise<void> {
  await waitFor(`${videoId} complete`, async () => (await summary(stack, videoId))?.status === 'complete', 90_000);
  const items = await results(stack, videoId);
  expect(items.map((r) => r.frame)).toEqual(Array.from({ length: last + 1 }, (_, f) => f));
  expect(items.every((r) => r.status === 'ok' || r.status === 'late')).toBe(true);
}

describe('affinity redrive', () => {
  it('moves ingest and slot DLQ messages back; each frame ends with exactly one record', async () => {
    // Prepare: video A's events sit in the ingest DLQ only (as after an outage that
    // outlasted the retries, with the router's reason attribute).
    const a = 'redrive-ingest';
    await uploadSilently(a, [0, 1, 2, 3, 4], 4);
    await stack.clients.sqs.send(
      new SendMessageBatchCommand({
        QueueUrl: stack.wiring.ingestDlqUrl,
        Entries: [...[0, 1, 2, 3, 4].map((f) => frameKey(a, f)), `frames/${a}/_end`].map((key, i) => ({
          Id: String(i),
          MessageBody: s3Event(key),
          MessageAttributes: { reason: { DataType: 'String', StringValue: 'outage-outlasted-retries' } },
        })),
      }),
    );
    // Video B: frames 0-2 are recorded the normal way; then frames 0-5 and the end marker
    // sit in slot 1's DLQ under the dedup ids the router gave them (0-2 as duplicates).
    const b = 'redrive-slot';
    await uploadFrames(stack, b, [0, 1, 2]);
    await waitFor('B frames 0-2 recorded', async () => (await results(stack, b)).length === 3);
    await uploadSilently(b, [3, 4, 5], 5);
    const now = new Date().toISOString();
    const slotMessages: SlotMessage[] = [
      ...[0, 1, 2, 3, 4, 5].map((f): SlotMessage => ({ kind: 'frame', videoId: b, frame: f, bucket: stack.wiring.bucket, key: frameKey(b, f), sizeBytes: 100, eventTime: now })),
      { kind: 'end', videoId: b, bucket: stack.wiring.bucket, key: `frames/${b}/_end`, eventTime: now },
    ];
    const slotDlq = stack.resources.slots[1]!.dlq.url;
    for (const m of slotMessages) {
      await stack.clients.sqs.send(new SendMessageCommand({ QueueUrl: slotDlq, MessageBody: JSON.stringify(m), MessageGroupId: b, MessageDeduplicationId: dedupId(m) }));
    }
    expect(await queueMessageCount(stack.clients.sqs, stack.wiring.ingestDlqUrl)).toBe(6);
    expect(await queueMessageCount(stack.clients.sqs, slotDlq)).toBe(7);
    expect(await results(stack, a)).toEqual([]);

    // Act
    const r = await cli(['redrive']);

    // Assess: the CLI reports both moves and the fallback, the DLQs are empty, and every
    // frame has exactly one record.
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('ingest DLQ: moved 6 message(s)');
    expect(r.out).toContain('slot 1 DLQ: moved 7 message(s)');
    expect(r.out).toMatch(/redrive: 13 message\(s\) moved from 2 DLQ\(s\), 1 empty/);
    expect(r.err).toMatch(/StartMessageMoveTask is not supported here/);
    expect(await queueMessageCount(stack.clients.sqs, stack.wiring.ingestDlqUrl)).toBe(0);
    await completeWithOneRecordEach(a, 4);
    await completeWithOneRecordEach(b, 5);
    expect(await queueMessageCount(stack.clients.sqs, stack.wiring.ingestDlqUrl)).toBe(0);
    for (const s of stack.resources.slots) expect(await queueMessageCount(stack.clients.sqs, s.dlq.url)).toBe(0);

    // Again: nothing left to move, nothing changes.
    const again = await cli(['redrive', '--queue', 'slot', '--slot', '1']);
    expect(again.code).toBe(0);
    expect(again.out).toContain('redrive: 0 message(s) moved from 0 DLQ(s), 1 empty');
    expect((await results(stack, b)).length).toBe(6);
  }, 240_000);

  it('refuses bad options with a usage error', async () => {
    expect((await cli(['redrive', '--queue', 'nope'])).code).toBe(2);
    expect((await cli(['redrive', '--queue', 'ingest', '--slot', '0'])).code).toBe(2);
    expect((await cli(['redrive', '--slot', '9'])).code).toBe(2);
  });
});

describe('redriveEntry (pure)', () => {
  const frame: SlotMessage = { kind: 'frame', videoId: 'v', frame: 7, bucket: 'b', key: 'frames/v/7.jpg', sizeBytes: 1, eventTime: 't' };
  const dlqMessage = (body: string, extra: Partial<Message> = {}): Message => ({
    MessageId: 'm-1',
    Body: body,
    Attributes: { MessageGroupId: 'v', MessageDeduplicationId: dedupId(frame) },
    MessageAttributes: { reason: { DataType: 'String', StringValue: 'x' }, replayTag: { DataType: 'String', StringValue: 'keep' } },
    ...extra,
  });

  it('gives a FIFO frame message a fresh dedup id through a body tag, and keeps its group', () => {
    const e = redriveEntry(dlqMessage(JSON.stringify(frame)), true, 'redrive-1');
    expect(e.MessageGroupId).toBe('v');
    expect(e.MessageDeduplicationId).not.toBe(dedupId(frame));
    expect(e.MessageDeduplicationId).toBe(dedupId({ ...frame, replayTag: 'redrive-1' }));
    expect(JSON.parse(e.MessageBody!)).toEqual({ ...frame, replayTag: 'redrive-1' });
    expect(Object.keys(e.MessageAttributes ?? {})).toEqual(['replayTag']);
  });

  it('keeps a malformed FIFO body as it is, with a fresh valid dedup id', () => {
    const e = redriveEntry(dlqMessage('not json', { Attributes: { MessageGroupId: 'g' } }), true, 'redrive-1');
    expect(e).toMatchObject({ MessageBody: 'not json', MessageGroupId: 'g', MessageDeduplicationId: 'redrive-1-m-1' });
  });

  it('sends a standard-queue message back unchanged, without its parking reason', () => {
    const e = redriveEntry(dlqMessage('{"Records":[]}'), false, 'redrive-1');
    expect(e).toEqual({ MessageBody: '{"Records":[]}', MessageAttributes: { replayTag: { DataType: 'String', StringValue: 'keep' } } });
  });

  it('recognises the answer of a service without StartMessageMoveTask', () => {
    expect(isUnsupportedOperation(Object.assign(new Error('The action StartMessageMoveTask is not valid'), { name: 'InvalidAction' }))).toBe(true);
    expect(isUnsupportedOperation(Object.assign(new Error('x'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } }))).toBe(false);
  });
});
