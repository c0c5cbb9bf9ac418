/**
 * One case of issue 19, item 3, end to end (test/system/outages-{dynamodb,sqs,s3}.int.test.ts:
 * one file per service, so that the three 65-s outages run side by side in the defaults
 * lane of vitest.config.ts, each on its own stack): an outage of DynamoDB, SQS or S3 in
 * the middle of a stream, longer than the slot queue's redrive window, with a kill -9 of
 * the slots' workers during it, moves nothing to any DLQ; once it ends every uploaded
 * frame has exactly one record and every video with an end marker completes.
 *
 * Real parts: the local stack (DynamoDB Local, fauxqs, the router behind its SQS event
 * source, the janitor, worker processes), every one of them reaching the emulators through
 * the outage proxies of test/support/outage-proxy.ts, so the production SDK clients of
 * every process see HTTP 503 ServiceUnavailable while a service is down (S3: reads and
 * listings fail, uploads still land). Only the emulated S3 notifications reach fauxqs
 * directly, as S3 delivers (and retries) them on its own side.
 *
 * That this can fail: a worker that hands a failed round's messages back (as before the
 * worker's rebuild) fails the S3 case, with slot messages received 10 times and 4 of them
 * in the slot DLQ (bench/README.md, "Outage timeline").
 *
 * Time is not scaled: leases, heartbeats, slot-queue visibility, receive counts and the
 * launch grace are the defaults users get (only the reorder wait, the idle release and the
 * router's pin cache stay short). The redrive window is slotQueueMaxReceiveCount ×
 * slotQueueVisibilitySeconds = 10 × 5 s = 50 s; each outage lasts 65 s.
 *
 * With OUTAGE_TIMELINE_FILE set, each case appends its timeline as one JSON line there
 * (bench/outage.ts runs the three files that way for the closing note).
 */
import { appendFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { DEFAULT_TUNABLES } from '../../core/config.ts';
import { sleep } from '../../core/async.ts';
import { outageProxies, type OutageProxies, type OutageService } from './outage-proxy.ts';
import { results, startTestStack, summary, uploadFrames, waitFor, type TestStack } from '../../harness/pipeline.ts';

/** How long each outage lasts: past the redrive window (10 receives × 5 s) at the defaults. */
const OUTAGE_MS = 65_000;
/**
 * When, into the outage, every live worker gets SIGKILL: before a worker cut off from
 * DynamoDB exits on its own. It gives up once a failed heartbeat leaves less than a
 * heartbeat's margin of its last confirmed lease (15 s - 5 s), and that lease may have
 * been confirmed a heartbeat (5 s) before the outage began: so as early as 5 s in. (At
 * 8 s, as before, the kill found no live worker in runs where the heartbeat's phase put
 * that exit first.)
 */
const KILL_AFTER_MS = 3_000;
/** One frame per video this often while the stream runs (during the outage too). */
const FRAME_EVERY_MS = 2_000;
const VIDEOS = 4;

let stack: TestStack;
let proxies: OutageProxies;

async function queueDepth(url: string): Promise<number> {
  const a = await stack.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
  return Number(a.Attributes!.ApproximateNumberOfMessages) + Number(a.Attributes!.ApproximateNumberOfMessagesNotVisible);
}

/** Messages in the ingest DLQ and in every slot DLQ. */
async function dlqMessages(): Promise<{ ingest: number; slots: number }> {
  let slots = 0;
  for (const s of stack.resources.slots) slots += await queueDepth(s.dlq.url);
  return { ingest: await queueDepth(stack.wiring.ingestDlqUrl), slots };
}

/** What one case measured, in ms since the outage started (the closing note's timeline). */
interface Timeline {
  service: OutageService;
  outageStartIso: string;
  outageEndMs: number;
  killedAtMs: number;
  killedWorkers: number;
  lastRecordAtMs: number;
  framesUploaded: number;
  framesUploadedDuringOutage: number;
  requestsRefused: number;
  /** Highest receive count any message reached from the outage's start on (redrive at slotQueueMaxReceiveCount / ingestMaxReceiveCount). */
  maxReceiveCount: { slot: number; ingest: number };
  dlqMessages: { ingest: number; slots: number };
}

/**
 * Streams VIDEOS videos, takes `service` down for OUTAGE_MS while the stream goes on,
 * kills every live worker KILL_AFTER_MS into it, brings the service back, ends every
 * video, and checks records and DLQs.
 */
async function rideOut(service: OutageService): Promise<void> {
  const videos = Array.from({ length: VIDEOS }, (_, i) => `${service}-out-${i}`);
  const next = new Map(videos.map((v) => [v, 0]));
  const uploadRound = async () => {
    for (const v of videos) {
      const f = next.get(v)!;
      await uploadFrames(stack, v, [f]);
      next.set(v, f + 1);
    }
  };
  for (let i = 0; i < 3; i++) await uploadRound();
  await waitFor('first frames recorded', async () => {
    for (const v of videos) if ((await results(stack, v)).length < 3) return false;
    return true;
  }, 120_000);

  const refusedBefore = proxies.switch.refused[service];
  const startedAt = Date.now();
  const uploadedBefore = [...next.values()].reduce((a, b) => a + b, 0);
  proxies.switch.maxReceiveCount.clear();
  proxies.switch.down(service);
  let killedAtMs = -1;
  let killedWorkers = 0;
  // On a timer, not between upload rounds: a round's uploads slow down on a loaded machine,
  // and a kill that slipped past the workers' own lease-lost exit would find none alive.
  const killer = setTimeout(() => {
    for (const w of stack.launcher.workers()) {
      if (!w.alive) continue;
      process.kill(w.pid, 'SIGKILL');
      killedWorkers++;
    }
    killedAtMs = Date.now() - startedAt;
  }, KILL_AFTER_MS);
  while (Date.now() - startedAt < OUTAGE_MS) {
    await uploadRound();
    await sleep(FRAME_EVERY_MS);
  }
  clearTimeout(killer);
  const uploadedDuring = [...next.values()].reduce((a, b) => a + b, 0) - uploadedBefore;
  proxies.switch.up(service);
  const outageEndMs = Date.now() - startedAt;
  const refused = proxies.switch.refused[service] - refusedBefore;

  // The stream goes on a little after the outage, then every video ends.
  for (let i = 0; i < 3; i++) {
    await uploadRound();
    await sleep(FRAME_EVERY_MS);
  }
  for (const v of videos) await uploadFrames(stack, v, [], { end: next.get(v)! - 1 });

  let lastRecordAtMs = 0;
  for (const v of videos) {
    const last = next.get(v)! - 1;
    const s = await waitFor(`${v} complete`, async () => {
      const sum = await summary(stack, v);
      return sum?.status === 'complete' ? sum : undefined;
    }, 300_000, 1000);
    const items = await results(stack, v);
    // Exactly one record per uploaded frame, each a processed frame.
    expect(items.map((r) => r.frame)).toEqual(Array.from({ length: last + 1 }, (_, f) => f));
    expect(items.filter((r) => r.status !== 'ok' && r.status !== 'late')).toEqual([]);
    expect((s.framesOk ?? 0) + (s.framesLate ?? 0)).toBe(last + 1);
    for (const r of items) lastRecordAtMs = Math.max(lastRecordAtMs, r.committedAtMs - startedAt);
  }
  const dlq = await dlqMessages();
  const receives = [...proxies.switch.maxReceiveCount];
  const maxOf = (slotQueues: boolean) => Math.max(0, ...receives.filter(([q]) => q.includes(`-slot-`) === slotQueues && !q.includes('-dlq')).map(([, n]) => n));
  const timeline: Timeline = {
    service,
    outageStartIso: new Date(startedAt).toISOString(),
    outageEndMs,
    killedAtMs,
    killedWorkers,
    lastRecordAtMs,
    framesUploaded: [...next.values()].reduce((a, b) => a + b, 0),
    framesUploadedDuringOutage: uploadedDuring,
    requestsRefused: refused,
    maxReceiveCount: { slot: maxOf(true), ingest: maxOf(false) },
    dlqMessages: dlq,
  };
  console.log(`[outage-timeline] ${JSON.stringify(timeline)}`);
  if (process.env.OUTAGE_TIMELINE_FILE) appendFileSync(process.env.OUTAGE_TIMELINE_FILE, `${JSON.stringify(timeline)}\n`);
  // The outage really hit the stack, and a worker really died during it.
  expect(refused).toBeGreaterThan(0);
  expect(killedWorkers).toBeGreaterThan(0);
  expect(dlq).toEqual({ ingest: 0, slots: 0 });
  expect(timeline.maxReceiveCount.slot).toBeLessThan(stack.tunables.slotQueueMaxReceiveCount);
}

/**
 * Registers the case for `service` in the calling test file: its own stack behind its own
 * outage proxies (started in beforeAll, stopped in afterAll), and one test.
 */
export function outageCase(service: OutageService, title: string): void {
  describe('an outage pauses every process, never dead-letters (default leases, visibility and receive counts)', () => {
    beforeAll(async () => {
      proxies = outageProxies();
      stack = await startTestStack({
        wrapEndpoints: (direct) => proxies.wrap(direct),
        tunables: {
          slotCount: 2,
          // The defaults users get for leases, visibility, receive counts and launch grace.
          slotLeaseTtlSeconds: DEFAULT_TUNABLES.slotLeaseTtlSeconds,
          heartbeatIntervalSeconds: DEFAULT_TUNABLES.heartbeatIntervalSeconds,
          slotQueueVisibilitySeconds: DEFAULT_TUNABLES.slotQueueVisibilitySeconds,
          slotQueueMaxReceiveCount: DEFAULT_TUNABLES.slotQueueMaxReceiveCount,
          taskStartGraceSeconds: DEFAULT_TUNABLES.taskStartGraceSeconds,
        },
      });
      // Every queue URL names the proxy: SDK clients without an explicit endpoint send to it.
      for (const url of [stack.wiring.ingestQueueUrl, stack.wiring.ingestDlqUrl, stack.wiring.slotQueueUrlPrefix]) expect(url.startsWith(`${stack.endpoints.sqs}/`)).toBe(true);
      expect(stack.tunables.slotQueueMaxReceiveCount * stack.tunables.slotQueueVisibilitySeconds * 1000).toBeLessThan(OUTAGE_MS);
      expect(stack.tunables.ingestMaxReceiveCount).toBe(DEFAULT_TUNABLES.ingestMaxReceiveCount);
      expect(stack.tunables.ingestVisibilitySeconds).toBe(DEFAULT_TUNABLES.ingestVisibilitySeconds);
    }, 120_000);

    afterAll(async () => {
      await stack?.stop();
      await proxies?.stop();
    });

    it(title, async () => {
      await rideOut(service);
    }, 600_000);
  });
}
