import { createHash } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ChangeMessageVisibilityCommand,
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs';
import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { startFauxqsEmulator, type FauxqsHandle } from '../../local/emulators.ts';
import { SqsEventSource, succeededRecords, type SqsHandler } from '../../local/event-source.ts';
import { ScheduledInvoker } from '../../local/eventbridge-invokers.ts';
import { waitFor } from './helpers.ts';

const region = 'us-east-1';
const credentials = { accessKeyId: 'local', secretAccessKey: 'local' };

let fauxqs: FauxqsHandle;
let sqs: SQSClient;
let sources: SqsEventSource[] = [];
let queueCounter = 0;

beforeAll(async () => {
  fauxqs = await startFauxqsEmulator({ region });
  sqs = new SQSClient({ region, credentials, endpoint: fauxqs.endpoint });
});
afterEach(async () => {
  await Promise.all(sources.map((s) => s.stop()));
  sources = [];
});
afterAll(async () => {
  await fauxqs?.stop();
});

/** A standard queue with a 1 s visibility timeout (or `visibilitySeconds`) and a DLQ after `maxReceiveCount` receives. */
async function queueWithDlq(maxReceiveCount: number, visibilitySeconds = 1) {
  const n = ++queueCounter;
  const dlqUrl = (await sqs.send(new CreateQueueCommand({ QueueName: `q${n}-dlq` }))).QueueUrl!;
  const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlqUrl, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  const url = (
    await sqs.send(
      new CreateQueueCommand({
        QueueName: `q${n}`,
        Attributes: { VisibilityTimeout: String(visibilitySeconds), RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount }) },
      }),
    )
  ).QueueUrl!;
  const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!;
  return { url, arn, dlqUrl };
}

function startSource(q: { url: string; arn: string }, handler: SqsHandler, extra: { batchSize?: number; concurrency?: number; batchWindowSeconds?: number } = {}) {
  const source = new SqsEventSource({
    sqs,
    queueUrl: q.url,
    queueArn: q.arn,
    region,
    handler,
    functionName: 'router',
    batchSize: extra.batchSize ?? 10,
    ...(extra.batchWindowSeconds !== undefined ? { batchWindowSeconds: extra.batchWindowSeconds } : {}),
    concurrency: extra.concurrency ?? 1,
    waitTimeSeconds: 1,
    onError: () => {},
  }).start();
  sources.push(source);
  return source;
}

async function send(url: string, bodies: string[]) {
  for (const body of bodies) {
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: body,
        MessageAttributes: { origin: { DataType: 'String', StringValue: 'test' } },
      }),
    );
  }
}

async function queueDepth(url: string): Promise<number> {
  const a = await sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  );
  return Number(a.Attributes!.ApproximateNumberOfMessages) + Number(a.Attributes!.ApproximateNumberOfMessagesNotVisible);
}

describe('SqsEventSource', () => {
  it('builds Lambda-shaped records and a Lambda-like context', async () => {
    // Prepare
    const q = await queueWithDlq(5);
    const events: SQSEvent[] = [];
    let remainingMs = 0;
    let functionName = '';
    await send(q.url, ['{"hello":1}']);

    // Act
    startSource(q, async (event, context) => {
      events.push(event);
      remainingMs = context.getRemainingTimeInMillis();
      functionName = context.functionName;
    });
    await waitFor('one invocation', () => events.length === 1);

    // Assess
    const record = events[0]!.Records[0]!;
    expect(record).toMatchObject({
      body: '{"hello":1}',
      md5OfBody: createHash('md5').update('{"hello":1}').digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: q.arn,
      awsRegion: region,
      messageAttributes: { origin: { dataType: 'String', stringValue: 'test' } },
      attributes: { ApproximateReceiveCount: '1' },
    });
    expect(record.messageId).toBeTruthy();
    expect(record.receiptHandle).toBeTruthy();
    expect(Number(record.attributes.SentTimestamp)).toBeGreaterThan(0);
    expect(Number(record.attributes.ApproximateFirstReceiveTimestamp)).toBeGreaterThan(0);
    expect(remainingMs).toBeGreaterThan(0);
    expect(functionName).toBe('router');
    await waitFor('deleted after success', async () => (await queueDepth(q.url)) === 0);
  });

  it('deletes the records that succeeded and redelivers only those listed in batchItemFailures', async () => {
    // Prepare
    const q = await queueWithDlq(5);
    const seen: { body: string; receiveCount: string }[] = [];
    await send(q.url, ['a', 'b', 'c']);

    // Act
    startSource(q, async (event) => {
      const failures: { itemIdentifier: string }[] = [];
      for (const r of event.Records) {
        seen.push({ body: r.body, receiveCount: r.attributes.ApproximateReceiveCount });
        if (r.body === 'b' && r.attributes.ApproximateReceiveCount === '1') failures.push({ itemIdentifier: r.messageId });
      }
      return { batchItemFailures: failures };
    });
    await waitFor('b redelivered', () => seen.some((s) => s.body === 'b' && s.receiveCount === '2'), 8_000);
    await waitFor('queue drained', async () => (await queueDepth(q.url)) === 0, 8_000);

    // Assess
    expect(seen.filter((s) => s.body === 'a')).toEqual([{ body: 'a', receiveCount: '1' }]);
    expect(seen.filter((s) => s.body === 'c')).toEqual([{ body: 'c', receiveCount: '1' }]);
    expect(seen.filter((s) => s.body === 'b').map((s) => s.receiveCount)).toEqual(['1', '2']);
  });

  it('redelivers the whole batch when the handler throws', async () => {
    // Prepare
    const q = await queueWithDlq(5);
    const seen: { body: string; receiveCount: string }[] = [];
    let calls = 0;
    await send(q.url, ['x', 'y']);

    // Act
    const source = startSource(q, async (event) => {
      calls++;
      for (const r of event.Records) seen.push({ body: r.body, receiveCount: r.attributes.ApproximateReceiveCount });
      if (event.Records.some((r) => r.attributes.ApproximateReceiveCount === '1')) throw new Error('boom');
    });
    await waitFor('both redelivered', () => seen.filter((s) => s.receiveCount === '2').length === 2, 8_000);
    await waitFor('queue drained', async () => (await queueDepth(q.url)) === 0, 8_000);

    // Assess
    expect(seen.map((s) => `${s.body}${s.receiveCount}`).sort()).toEqual(['x1', 'x2', 'y1', 'y2']);
    expect(source.stats.handlerErrors).toBeGreaterThanOrEqual(1);
    expect(calls).toBe(source.stats.invocations);
  });

  it('lets a record that keeps failing move to the DLQ after maxReceiveCount receives', async () => {
    // Prepare
    const q = await queueWithDlq(2);
    let deliveries = 0;
    await send(q.url, ['poison']);

    // Act
    startSource(q, async (event) => {
      deliveries += event.Records.length;
      return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
    });
    const inDlq = await waitFor(
      'message in the DLQ',
      async () => (await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.dlqUrl, WaitTimeSeconds: 1 }))).Messages?.[0],
      10_000,
    );

    // Assess
    expect(inDlq.Body).toBe('poison');
    expect(deliveries).toBe(2);
    expect(await queueDepth(q.url)).toBe(0);
  });

  it('keeps the visibility a handler set on a failed record, as Lambda does (the router backs outages off this way)', async () => {
    // Prepare: queue visibility 1 s; the handler fails both records and sets one's
    // visibility to 0 (back now) and the other's to 600 s (backed off).
    const q = await queueWithDlq(5);
    const seen: { body: string; receiveCount: string }[] = [];
    await send(q.url, ['now', 'later']);

    // Act
    startSource(q, async (event) => {
      for (const r of event.Records) {
        seen.push({ body: r.body, receiveCount: r.attributes.ApproximateReceiveCount });
        await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: q.url, ReceiptHandle: r.receiptHandle, VisibilityTimeout: r.body === 'now' ? 0 : 600 }));
      }
      return { batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) };
    });
    // 'now' comes back at once, again and again; past its 4th receive, 'later' (whose
    // queue visibility of 1 s ran out several times over) must still be held.
    await waitFor("'now' received 4 times", () => seen.filter((s) => s.body === 'now').length >= 4, 10_000);

    // Assess
    expect(seen.filter((s) => s.body === 'later').map((s) => s.receiveCount)).toEqual(['1']);
    expect(seen.filter((s) => s.body === 'now').map((s) => s.receiveCount).slice(0, 4)).toEqual(['1', '2', '3', '4']);
    const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.url, AttributeNames: ['ApproximateNumberOfMessagesNotVisible'] }));
    expect(Number(a.Attributes!.ApproximateNumberOfMessagesNotVisible)).toBeGreaterThanOrEqual(1);
  });

  it('never hands an invocation more than batchSize records, with several pollers', async () => {
    // Prepare
    const q = await queueWithDlq(5);
    const sizes: number[] = [];
    const bodies: string[] = [];
    await send(q.url, ['1', '2', '3', '4', '5', '6', '7']);

    // Act
    startSource(
      q,
      async (event) => {
        sizes.push(event.Records.length);
        bodies.push(...event.Records.map((r) => r.body));
      },
      { batchSize: 2, concurrency: 2 },
    );
    await waitFor('all delivered', () => bodies.length >= 7);

    // Assess
    expect(Math.max(...sizes)).toBeLessThanOrEqual(2);
    expect(bodies.sort()).toEqual(['1', '2', '3', '4', '5', '6', '7']);
  });

  it('stops while long-polling without losing messages sent afterwards', async () => {
    // Prepare
    const q = await queueWithDlq(5);
    let calls = 0;
    const source = startSource(q, async () => {
      calls++;
    });
    await new Promise((r) => setTimeout(r, 200));

    // Act
    await source.stop();
    await send(q.url, ['late']);

    // Assess
    expect(calls).toBe(0);
    expect(await queueDepth(q.url)).toBe(1);
  });
});

describe('succeededRecords (Lambda partial batch response rules)', () => {
  const records = ['m1', 'm2', 'm3'].map((messageId) => ({ messageId }) as SQSRecord);
  it.each([
    ['no response', { ok: true as const, response: undefined }, ['m1', 'm2', 'm3']],
    ['empty failures', { ok: true as const, response: { batchItemFailures: [] } }, ['m1', 'm2', 'm3']],
    ['one failure', { ok: true as const, response: { batchItemFailures: [{ itemIdentifier: 'm2' }] } }, ['m1', 'm3']],
    ['unknown id fails the batch', { ok: true as const, response: { batchItemFailures: [{ itemIdentifier: 'zz' }] } }, []],
    ['empty id fails the batch', { ok: true as const, response: { batchItemFailures: [{ itemIdentifier: '' }] } }, []],
    ['a throw fails the batch', { ok: false as const }, []],
  ])('%s', (_, outcome, expected) => {
    expect(succeededRecords(records, outcome).map((r) => r.messageId)).toEqual(expected);
  });
});

describe('ScheduledInvoker', () => {
  it('invokes on schedule with an EventBridge-shaped event and never overlaps runs', async () => {
    // Prepare
    let active = 0;
    let maxActive = 0;
    const events: { source: string; 'detail-type': string }[] = [];
    const invoker = new ScheduledInvoker({
      region,
      intervalMs: 10,
      handler: async (event) => {
        active++;
        maxActive = Math.max(maxActive, active);
        events.push(event);
        await new Promise((r) => setTimeout(r, 30));
        active--;
      },
    });

    // Act
    invoker.start();
    void invoker.runOnce();
    await waitFor('three runs', () => invoker.runs >= 3);
    await invoker.stop();
    const runsAtStop = invoker.runs;
    await new Promise((r) => setTimeout(r, 60));

    // Assess
    expect(maxActive).toBe(1);
    expect(events[0]).toMatchObject({ source: 'aws.events', 'detail-type': 'Scheduled Event', region });
    expect(invoker.runs).toBe(runsAtStop);
  });
});

describe('SqsEventSource batching window (batches above 10, decision 33)', () => {
  it('gathers up to batchSize records over several receives within the window, in one invocation', async () => {
    // Prepare: 35 messages waiting; the visibility outlasts the window (as the tunables require)
    const q = await queueWithDlq(5, 30);
    await send(q.url, Array.from({ length: 35 }, (_, i) => `m${i}`));
    const batches: number[] = [];
    // Act
    startSource(q, async (event: SQSEvent) => {
      batches.push(event.Records.length);
      return { batchItemFailures: [] };
    }, { batchSize: 25, batchWindowSeconds: 2 });
    // Assess: a first batch of 25 (not 10), then the remaining 10 once the window ran out
    await waitFor('all 35 invoked', () => batches.reduce((a, b) => a + b, 0) === 35, 20_000);
    expect(batches[0]).toBe(25);
    expect(batches).toEqual([25, 10]);
  });

  it('refuses a batch above 10 without a window, as Lambda does', async () => {
    const q = await queueWithDlq(5);
    expect(() => startSource(q, async () => ({ batchItemFailures: [] }), { batchSize: 11 })).toThrow(/needs batchWindowSeconds/);
  });
});
