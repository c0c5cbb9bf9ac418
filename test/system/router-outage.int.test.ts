/**
 * Issue 19, item 3, ingest side: an outage of DynamoDB or of SQS sends, in the middle of a
 * stream, for longer than the old redrive window, moves nothing to the ingest DLQ; once
 * it ends every uploaded frame is routed and gets exactly one record.
 *
 * Real parts: the local stack (DynamoDB Local, fauxqs, the router's real handler behind
 * the local SQS event source, workers). The outage is a switch on the router's own SDK
 * clients that fails every request attempt with the error AWS returns
 * (`injectedError` of lab/aws/fault-injection.ts, below the SDK's retries, as chaos runs
 * do); workers and janitor are not affected (the worker side of outages is tested apart).
 *
 * Time scale: the receive arithmetic is the defaults' (ingestMaxReceiveCount 576, outage
 * backoff 15 s doubling to 900 s), but the visibility unit is shrunk 60-fold: the ingest
 * queue's visibility timeout is 3 s (180 s / 60) and every visibility the router sets is
 * divided by 60 (rounded up) on its way out. The old redrive window, 5 receives at 180 s
 * (15 minutes), is 15 s here; each outage lasts until records were received at least 7
 * times (the old budget dead-lettered on the 6th receive), i.e. over 25 scaled minutes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import type { Context, SQSEvent } from 'aws-lambda';
import type { InitializeMiddleware, DeserializeMiddleware, MetadataBearer } from '@smithy/types';
import { DEFAULT_TUNABLES } from '../../core/config.ts';
import { injectedError } from '../../lab/aws/fault-injection.ts';
import { functionContext, type FunctionContext } from '../../functions/shared/context.ts';
import { results, startTestStack, summary, uploadFrames, waitFor, type TestStack } from '../../harness/pipeline.ts';

/** The visibility unit is shrunk this much (see the header). */
const VISIBILITY_SCALE = 60;
/** Receives the old ingest budget allowed (the 6th moved a message to the DLQ). */
const OLD_INGEST_MAX_RECEIVE_COUNT = 5;

const outage = { dynamodb: false, slotSends: false };
/** Highest ApproximateReceiveCount the router saw, per ingest message id. */
const receiveCounts = new Map<string, number>();
let stack: TestStack;

/** The router's function context, its clients fitted with the outage switch and the visibility scale. */
function routerContext(): FunctionContext {
  const c = functionContext('router');
  const failDynamo: DeserializeMiddleware<object, MetadataBearer> = (next) => async (args) => {
    if (outage.dynamodb) throw injectedError('dynamodb', '5xx');
    return next(args);
  };
  c.clients.dynamodb.middlewareStack.add(failDynamo, { step: 'deserialize', name: 'testOutage' });
  const failSlotSends: DeserializeMiddleware<object, MetadataBearer> = (next, context) => async (args) => {
    const url = (args.input as { QueueUrl?: string }).QueueUrl ?? '';
    if (outage.slotSends && context.commandName === 'SendMessageBatchCommand' && url.startsWith(c.wiring.slotQueueUrlPrefix)) throw injectedError('sqs', '5xx');
    return next(args);
  };
  const scaleVisibility: InitializeMiddleware<object, MetadataBearer> = (next, context) => async (args) => {
    if (context.commandName === 'ChangeMessageVisibilityBatchCommand') {
      const input = args.input as { Entries?: { VisibilityTimeout?: number }[] };
      for (const e of input.Entries ?? []) e.VisibilityTimeout = Math.ceil((e.VisibilityTimeout ?? 0) / VISIBILITY_SCALE);
    }
    return next(args);
  };
  c.clients.sqs.middlewareStack.add(failSlotSends, { step: 'deserialize', name: 'testOutage' });
  c.clients.sqs.middlewareStack.add(scaleVisibility, { step: 'initialize', name: 'testVisibilityScale' });
  return c;
}

beforeAll(async () => {
  // As startTestStack does, before the handler module builds its Powertools: no EMF lines in the test output.
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const { createRouterHandler } = await import('../../functions/router/handler.ts');
  const handler = createRouterHandler(routerContext);
  stack = await startTestStack({
    tunables: {
      slotCount: 2,
      ingestVisibilitySeconds: DEFAULT_TUNABLES.ingestVisibilitySeconds / VISIBILITY_SCALE,
    },
    routerHandler: async (event: SQSEvent, context: Context) => {
      for (const r of event.Records) {
        const n = Number(r.attributes.ApproximateReceiveCount);
        receiveCounts.set(r.messageId, Math.max(n, receiveCounts.get(r.messageId) ?? 0));
      }
      return handler(event, context);
    },
  });
  // The defaults' receive arithmetic is in force.
  expect(stack.tunables.ingestMaxReceiveCount).toBe(DEFAULT_TUNABLES.ingestMaxReceiveCount);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

async function visibleAndInFlight(url: string): Promise<number> {
  const a = await stack.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
  return Number(a.Attributes!.ApproximateNumberOfMessages) + Number(a.Attributes!.ApproximateNumberOfMessagesNotVisible);
}

async function dlqMessages(): Promise<number> {
  const urls = [stack.wiring.ingestDlqUrl, ...stack.resources.slots.map((s) => s.dlq.url)];
  let n = 0;
  for (const u of urls) n += await visibleAndInFlight(u);
  return n;
}

/** Waits until every frame 0..last of the video has one record and the video is complete. */
async function completeWithOneRecordEach(videoId: string, last: number): Promise<void> {
  const s = await waitFor(`${videoId} complete`, async () => {
    const sum = await summary(stack, videoId);
    return sum?.status === 'complete' ? sum : undefined;
  }, 120_000);
  const items = await results(stack, videoId);
  expect(items.map((r) => r.frame)).toEqual(Array.from({ length: last + 1 }, (_, f) => f));
  expect(items.every((r) => r.status === 'ok' || r.status === 'late')).toBe(true);
  expect((s.framesOk ?? 0) + (s.framesLate ?? 0)).toBe(last + 1);
}

/**
 * Streams frames 0-5 of two known videos, starts the outage, streams frames 6-11 plus the
 * end markers and a new video (whose admission needs DynamoDB), holds the outage past the
 * old budget, ends it, and checks every frame.
 */
async function rideOut(kind: keyof typeof outage, prefix: string): Promise<void> {
  const [a, b, fresh] = [`${prefix}-a`, `${prefix}-b`, `${prefix}-new`];
  receiveCounts.clear();
  await uploadFrames(stack, a, [0, 1, 2, 3, 4, 5]);
  await uploadFrames(stack, b, [0, 1, 2, 3, 4, 5]);
  await waitFor('first frames recorded', async () => (await results(stack, a)).length === 6 && (await results(stack, b)).length === 6);

  const startedAt = Date.now();
  outage[kind] = true;
  await uploadFrames(stack, a, [6, 7, 8, 9, 10, 11], { end: 11 });
  await uploadFrames(stack, fresh, [0, 1, 2, 3], { end: 3 });
  await uploadFrames(stack, b, [6, 7, 8, 9, 10, 11], { end: 11 });
  await waitFor(
    `records received more than ${OLD_INGEST_MAX_RECEIVE_COUNT + 1} times during the ${kind} outage, and 20 scaled minutes`,
    () => Math.max(0, ...receiveCounts.values()) > OLD_INGEST_MAX_RECEIVE_COUNT + 1 && Date.now() - startedAt >= (20 * 60 * 1000) / VISIBILITY_SCALE,
    120_000,
    250,
  );
  const inOutage = await dlqMessages();
  outage[kind] = false;
  const endedAt = Date.now();

  // Every S3 event is routed (deleted from the ingest queue), not only processed: a worker
  // can also find frames and the end marker by listing S3.
  await waitFor('ingest queue drained', async () => (await visibleAndInFlight(stack.wiring.ingestQueueUrl)) === 0, 120_000, 250);
  const routedAt = Date.now();
  await completeWithOneRecordEach(a, 11);
  await completeWithOneRecordEach(b, 11);
  await completeWithOneRecordEach(fresh, 3);
  const recoveredAt = Date.now();
  const after = await dlqMessages();
  // The timeline, for the closing note.
  console.log(
    `[router-outage] ${kind}: outage ${((endedAt - startedAt) / 1000).toFixed(1)} s (x${VISIBILITY_SCALE} = ${(((endedAt - startedAt) / 1000) * VISIBILITY_SCALE / 60).toFixed(0)} scaled minutes; old window 15), ` +
      `max receives ${Math.max(...receiveCounts.values())}, all routed ${((routedAt - endedAt) / 1000).toFixed(1)} s and all recorded ${((recoveredAt - endedAt) / 1000).toFixed(1)} s after it ended, DLQ messages during ${inOutage}, after ${after}`,
  );
  expect(inOutage).toBe(0);
  expect(after).toBe(0);
}

describe('an outage pauses the router, never dead-letters', () => {
  it('DynamoDB failing on every request, past the old redrive window, mid-stream', async () => {
    await rideOut('dynamodb', 'ddb-out');
  }, 300_000);

  it('SQS sends to the slot queues failing, past the old redrive window, mid-stream', async () => {
    await rideOut('slotSends', 'sqs-out');
  }, 300_000);
});
