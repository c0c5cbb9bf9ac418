/**
 * A fresh stack raises no alarm: S3's `s3:TestEvent` (sent when the bucket notification
 * is configured, here by the local notifier as in AWS) is acknowledged and counted, not
 * dead-lettered, so every DLQ is empty after start; and the janitor's alarm gauges
 * (slot DLQ messages, slots with work and no owner) read 0.
 *
 * The router and janitor run in this process: their Powertools logs and EMF metric lines
 * go to stdout, which this file captures (metrics are enabled here, unlike other tests).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import { SlotQueues } from '../../core/ingest/sqs/slot-queues.ts';
import { drainQueue, startTestStack, waitFor, type TestStack } from '../../harness/pipeline.ts';

const SLOTS = 2;
const stdout: string[] = [];
const saved = { write: process.stdout.write, metricsDisabled: process.env.POWERTOOLS_METRICS_DISABLED, logLevel: process.env.POWERTOOLS_LOG_LEVEL };
let stack: TestStack;

beforeAll(async () => {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
  process.stdout.write = ((chunk: string | Uint8Array) => {
    stdout.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  stack = await startTestStack({ tunables: { slotCount: SLOTS } });
});

afterAll(async () => {
  await stack?.stop();
  process.stdout.write = saved.write;
  for (const [k, v] of [
    ['POWERTOOLS_METRICS_DISABLED', saved.metricsDisabled],
    ['POWERTOOLS_LOG_LEVEL', saved.logLevel],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

/** The JSON lines written so far (Powertools logs and EMF documents). */
function jsonLines(): Record<string, unknown>[] {
  return stdout
    .join('')
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as Record<string, unknown>];
      } catch {
        return [];
      }
    });
}

/** EMF documents of one emitter that carry a given metric. */
function emf(service: string, metric: string): Record<string, unknown>[] {
  return jsonLines().filter((d) => d._aws !== undefined && d.service === service && metric in d);
}

const queueMessages = async (url: string): Promise<number> => {
  const r = await stack.clients.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  );
  return Number(r.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(r.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
};

describe('a fresh stack is quiet', () => {
  it('acknowledges the s3:TestEvent of the notification setup: counted and logged, the ingest queue drained, the ingest DLQ empty', async () => {
    // Act: wait for the router to have handled the TestEvent
    const counted = await waitFor('S3TestEvents metric from the router', () => emf('router', METRIC_NAMES.router.s3TestEvents)[0]);
    await waitFor('ingest queue drained', async () => (await queueMessages(stack.wiring.ingestQueueUrl)) === 0);

    // Assess
    expect(counted[METRIC_NAMES.router.s3TestEvents]).toBe(1);
    expect(jsonLines().some((d) => d.service === 'router' && d.message === 's3 test event acknowledged' && d.level === 'INFO')).toBe(true);
    expect(await queueMessages(stack.wiring.ingestDlqUrl)).toBe(0);
    expect(await drainQueue(stack, stack.wiring.ingestDlqUrl)).toEqual([]);
    expect(emf('router', METRIC_NAMES.router.eventsRejected)).toEqual([]);
  });

  it('leaves every slot DLQ empty, and the janitor\'s alarm gauges read 0', async () => {
    // Act: a janitor run after the router has settled
    const reported = await waitFor('janitor gauges', () => emf('janitor', METRIC_NAMES.janitor.slotDlqMessages).at(-1));
    const queues = new SlotQueues(stack.clients.sqs, stack.wiring.slotQueueUrlPrefix);

    // Assess
    for (let slot = 0; slot < SLOTS; slot++) expect(await queues.dlqDepth(slot), `slot ${slot} DLQ`).toBe(0);
    expect(reported[METRIC_NAMES.janitor.slotDlqMessages]).toBe(0);
    expect(reported[METRIC_NAMES.janitor.slotsWithWorkNoOwner]).toBe(0);
    for (const counter of [METRIC_NAMES.janitor.taskLaunchFailures, METRIC_NAMES.janitor.taskStartTimeouts]) {
      expect(emf('janitor', counter), counter).toEqual([]);
      expect(emf('router', counter), counter).toEqual([]);
    }
  });
});
