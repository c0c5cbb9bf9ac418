/**
 * A worker of the baseline: seed 000's `CVStreamProcessor` (lock-and-skip), in TypeScript,
 * on the local stack's emulators and the project's `FrameProcessor`. One process per
 * worker, so that `kill -9` is real. Started by {@link ./fleet.ts}; see bench/README.md
 * ("Baseline") for every choice made where the seed is silent.
 *
 * Loop, as the seed's `run()`:
 *  1. ReceiveMessage from the one shared FIFO queue (up to 10, long poll 20 s).
 *  2. For each message: if this worker holds its video's stream, process it; else try the
 *     video's lock; on success the stream is this worker's (a fresh tracker: state lives
 *     only in this process's memory), on failure the message is left alone: it is not
 *     deleted, and reappears after the queue's visibility timeout (the seed's 30 s).
 *  3. Release streams that processed nothing for the idle timeout (the seed's 30 s).
 * A heartbeat renews held locks every renewal interval (the seed's 20 s, lease 60 s).
 *
 * Stronger than the seed's sketch where it is silent (each listed in bench/README.md):
 * the frames of one receive that this worker may process go to the processor as one batch
 * (cross-video inference, as our worker does) and are deleted with DeleteMessageBatch;
 * results are written with BatchWriteItem; a stream whose heartbeat fails is dropped.
 *
 * Environment: the local stack's AWS variables (`localAwsEnv`), the tunables
 * (`tunablesToEnv`, for the processor's settings), FRAME_PROCESSOR (vision | stats), and
 * BASELINE_QUEUE_URL, BASELINE_LOCK_TABLE, BASELINE_RESULTS_TABLE, BASELINE_WORKER_ID,
 * BASELINE_EVENTS_FILE (JSON lines: ready, recv, lock, skip, commit, release, lost),
 * BASELINE_LOCK_TTL_SECONDS, BASELINE_RENEWAL_SECONDS, BASELINE_IDLE_SECONDS.
 */
import { appendFileSync } from 'node:fs';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { DeleteMessageBatchCommand, ReceiveMessageCommand, type Message } from '@aws-sdk/client-sqs';
import { BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { createAwsClients } from '../../core/aws/clients.ts';
import { instrumentAwsClients } from '../../core/aws/instrumentation.ts';
import { tunablesFromEnv } from '../../core/config.ts';
import type { FrameOutcome, FrameProcessor } from '../../core/ports.ts';
import { StatsProcessor } from '../../lab/worker/stats-processor.ts';
import { installLabInstrumentation } from '../../lab/aws/instrumentation.ts';
import { BaselineLockClient } from './lock.ts';

/** The seed's message body. */
export interface BaselineMessage {
  readonly message_id: string;
  readonly video_id: string;
  readonly frame_id: number;
  readonly timestamp: string;
  readonly s3_bucket: string;
  readonly s3_key: string;
}

const env = process.env;
const need = (k: string): string => {
  const v = env[k];
  if (!v) throw new Error(`${k} is not set`);
  return v;
};
const queueUrl = need('BASELINE_QUEUE_URL');
const lockTable = need('BASELINE_LOCK_TABLE');
const resultsTable = need('BASELINE_RESULTS_TABLE');
const workerId = need('BASELINE_WORKER_ID');
const eventsFile = need('BASELINE_EVENTS_FILE');
const lockTtlMs = Number(env.BASELINE_LOCK_TTL_SECONDS ?? 60) * 1000;
const renewalMs = Number(env.BASELINE_RENEWAL_SECONDS ?? 20) * 1000;
const idleMs = Number(env.BASELINE_IDLE_SECONDS ?? 30) * 1000;

const event = (e: string, fields: Record<string, unknown> = {}) => appendFileSync(eventsFile, `${JSON.stringify({ t: Date.now(), w: workerId, e, ...fields })}\n`);

// As our worker under the local stack: the call log, and the lab's faults and latencies when asked for.
installLabInstrumentation();
const clients = instrumentAwsClients(createAwsClients(env), env, 'worker');
const tunables = tunablesFromEnv(env);
const locks = new BaselineLockClient({ ddb: clients.ddb, table: lockTable, owner: workerId, leaseDurationMs: lockTtlMs });

async function createProcessor(): Promise<FrameProcessor> {
  if ((env.FRAME_PROCESSOR ?? 'vision') === 'stats') return new StatsProcessor(0);
  const { createVisionProcessor, visionOptionsFromTunables } = await import('../../gpu-worker/vision/index.ts');
  return createVisionProcessor({
    ...visionOptionsFromTunables(tunables),
    s3Client: clients.s3,
    preferCuda: false,
  });
}
const processor = await createProcessor();
await processor.start();

/** The seed's `active_streams`: videos whose lock this worker holds, and when each last processed a frame. */
const activeStreams = new Map<string, { lastProcessedMs: number }>();
const lockKey = (videoId: string) => `lock:${videoId}`;

function dropStream(videoId: string): void {
  activeStreams.delete(videoId);
  processor.closeVideo(videoId);
}

// The seed's renewal thread: every renewal interval, extend each held lock.
const heartbeat = setInterval(() => {
  void (async () => {
    for (const videoId of [...activeStreams.keys()]) {
      try {
        if (!(await locks.renew(lockKey(videoId)))) {
          event('lost', { v: videoId });
          dropStream(videoId);
        }
      } catch (e) {
        console.error(`[${workerId}] renew ${videoId}: ${String(e)}`);
      }
    }
  })();
}, renewalMs);

async function releaseIdle(): Promise<void> {
  const now = Date.now();
  for (const [videoId, s] of [...activeStreams]) {
    if (now - s.lastProcessedMs <= idleMs) continue;
    dropStream(videoId);
    await locks.release(lockKey(videoId));
    event('release', { v: videoId });
  }
}

async function fetchImage(m: BaselineMessage): Promise<Uint8Array> {
  const r = await clients.s3.send(new GetObjectCommand({ Bucket: m.s3_bucket, Key: m.s3_key }));
  return await r.Body!.transformToByteArray();
}

/** Processes the frames this worker may process, in receive order, and commits, then deletes them. */
async function processAndCommit(items: readonly { msg: Message; body: BaselineMessage }[]): Promise<void> {
  if (items.length === 0) return;
  const images = await Promise.all(items.map((i) => fetchImage(i.body)));
  const outcomes: FrameOutcome[] = await processor.process(items.map((i, k) => ({ videoId: i.body.video_id, frame: i.body.frame_id, image: images[k]! })));
  const committedAtMs = Date.now();
  const records = items.map((i, k) => {
    const o = outcomes[k]!;
    return {
      videoId: i.body.video_id,
      frame: i.body.frame_id,
      status: o.status,
      detections: o.status === 'ok' ? o.detections : [],
      ...(o.status === 'failed' ? { reason: o.reason } : {}),
      worker: workerId,
      committedAtMs,
      key: i.body.s3_key,
    };
  });
  // No fencing: a write from a worker that lost its lock lands like any other.
  for (let k = 0; k < records.length; k += 25) {
    let pending = records.slice(k, k + 25).map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; pending.length > 0; attempt++) {
      const r = await clients.ddb.send(new BatchWriteCommand({ RequestItems: { [resultsTable]: pending } }));
      pending = (r.UnprocessedItems?.[resultsTable] ?? []) as typeof pending;
      if (pending.length > 0) await new Promise((res) => setTimeout(res, 50 * 2 ** Math.min(attempt, 5)));
    }
  }
  for (const r of records) event('commit', { v: r.videoId, f: r.frame });
  for (let k = 0; k < items.length; k += 10) {
    await clients.sqs.send(
      new DeleteMessageBatchCommand({ QueueUrl: queueUrl, Entries: items.slice(k, k + 10).map((i, n) => ({ Id: String(n), ReceiptHandle: i.msg.ReceiptHandle! })) }),
    );
  }
  const now = Date.now();
  for (const i of items) {
    const s = activeStreams.get(i.body.video_id);
    if (s) s.lastProcessedMs = now;
  }
}

// A worker whose parent (the bench) died must not poll on forever: it is an orphan then.
const parentPid = process.ppid;
setInterval(() => {
  if (process.ppid !== parentPid) process.exit(1);
}, 2_000).unref();

let stopping = false;
const stop = () => {
  stopping = true;
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);

event('ready');
while (!stopping) {
  try {
    const askedAt = Date.now();
    const r = await clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 20, MessageSystemAttributeNames: ['All'] }));
    const messages = r.Messages ?? [];
    // For the bench's accounting: fauxqs wakes long polls that then return empty (see fleet.ts).
    event('recv', { n: messages.length, ms: Date.now() - askedAt });
    if (messages.length === 0) {
      await releaseIdle();
      continue;
    }
    const mine: { msg: Message; body: BaselineMessage }[] = [];
    for (const msg of messages) {
      const body = JSON.parse(msg.Body ?? '') as BaselineMessage;
      const videoId = body.video_id;
      if (activeStreams.has(videoId) || (await locks.tryAcquire(lockKey(videoId)))) {
        if (!activeStreams.has(videoId)) {
          activeStreams.set(videoId, { lastProcessedMs: Date.now() });
          // Tracker state lives in this process only: a new owner starts from nothing.
          processor.openVideo(videoId, undefined);
          event('lock', { v: videoId });
        }
        mine.push({ msg, body });
      } else {
        // The seed: neither process nor delete; it reappears after the visibility timeout.
        event('skip', { v: videoId, f: body.frame_id });
      }
    }
    await processAndCommit(mine);
    await releaseIdle();
  } catch (e) {
    console.error(`[${workerId}] loop: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    // The seed sleeps 5 s after an error in its main loop.
    await new Promise((res) => setTimeout(res, 5_000));
  }
}
// The seed's cleanup on shutdown: release every held lock.
clearInterval(heartbeat);
for (const videoId of [...activeStreams.keys()]) await locks.release(lockKey(videoId)).catch(() => false);
await processor.stop();
clients.destroy();
process.exit(0);
