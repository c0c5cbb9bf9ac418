/**
 * Issue 9 on the SQS FIFO model (several messages of a group per receive, group
 * blocking, receipt handles, partial deletes) with the real worker, LeaseStore on
 * the lease table's twin and the S3 twin, on a fake clock: one bad frame, one slow call or one failing video
 * costs seconds and one record, never a video or the slot.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { parseSlotMessage } from '../../../core/ingest/messages.ts';
import { FrameStore } from '../../../core/ingest/s3/frame-store.ts';
import { throttled, type SqsFifoModel } from '../../../core/ingest/memory/sqs-fifo-model.ts';
import { s3Error, WorkerHarness, wrapProcessor } from '../../../harness/worker-harness.ts';
import { waitFor } from '../../../harness/wait.ts';

let h: WorkerHarness;
let model: SqsFifoModel;

beforeAll(async () => {
  h = await WorkerHarness.start({
    backend: 'memory',
    clock: 'fake',
    slots: 8,
    tunables: {
      firstFrameNumber: 0,
      reorderWaitMs: 1000,
      slotQueueVisibilitySeconds: 2,
      slotLeaseTtlSeconds: 6,
      heartbeatIntervalSeconds: 2,
      videoIdleReleaseSeconds: 3,
      routerPinCacheSeconds: 2,
    },
  });
  model = h.model!;
});

afterEach(() => model.clearFaults());

afterAll(async () => {
  await h?.stop();
});

const range = (n: number) => Array.from({ length: n }, (_, i) => i);
const byFrame = (items: readonly { frame: number; status: string; reason?: string }[]) => Object.fromEntries(items.map((r) => [r.frame, `${r.status}${r.reason ? `:${r.reason}` : ''}`]));

describe('fault isolation', () => {
  it('gives an unreadable frame one failed record with the S3 error code, and the other video of the batch all ok', async () => {
    // Prepare: frame 1 of "poisoned" is in GLACIER; "unrelated" shares the slot and the batches
    const slot = 0;
    const poisoned = h.videoId('poisoned');
    const unrelated = h.videoId('unrelated');
    for (const v of [poisoned, unrelated]) await h.pinVideo(v, slot);
    await h.putFrames(poisoned, range(6));
    await h.putFrames(unrelated, range(4));
    await h.putEnd(poisoned, 5);
    await h.putEnd(unrelated, 3);
    // Frame 1 comes after 2 and 3: it is buffered across a commit before its turn.
    await h.sendFrames(slot, poisoned, [0, 2, 3]);
    const w = h.createWorker(slot, { frameFault: (_b, key) => (key.endsWith(`${poisoned}/000001.jpg`) ? s3Error('InvalidObjectState', 'The operation is not valid for the object storage class') : undefined) }).start();
    await h.waitForResults(poisoned, 1);
    await h.sendFrames(slot, poisoned, [1, 4, 5]);
    await h.sendFrames(slot, unrelated, range(4));
    await h.sendEnd(slot, poisoned);
    await h.sendEnd(slot, unrelated);
    // Assess
    await h.waitForSummary(unrelated, (s) => s.status === 'complete');
    await h.waitForSummary(poisoned, (s) => s.status === 'complete');
    expect(byFrame(await h.frameResults(unrelated))).toEqual({ 0: 'ok', 1: 'ok', 2: 'ok', 3: 'ok' });
    expect(byFrame(await h.frameResults(poisoned))).toEqual({ 0: 'ok', 1: 'failed:InvalidObjectState', 2: 'ok', 3: 'ok', 4: 'ok', 5: 'ok' });
    expect(model.pending(h.dlqUrl(slot))).toEqual([]);
    await w.stop();
  });

  it('parks the frames of a video whose processing keeps failing, while the other video flows, with no stale work', async () => {
    // Prepare: the model "explodes" on every batch of one video
    const slot = 1;
    const broken = h.videoId('broken');
    const fine = h.videoId('fine');
    for (const v of [broken, fine]) await h.pinVideo(v, slot);
    await h.putFrames(broken, range(3));
    await h.putFrames(fine, range(8));
    const w = h
      .createWorker(slot, {
        processor: (inner) =>
          wrapProcessor(inner, {
            process: async (frames) => {
              if (frames.some((f) => f.videoId === broken)) throw new Error('model exploded');
              return inner.process(frames);
            },
          }),
      })
      .start();
    // Act
    await h.sendFrames(slot, broken, range(3));
    await h.sendFrames(slot, fine, range(8));
    // Assess: the fine video is untouched, in order; the broken one ends as failure records
    const fineItems = await h.waitForResults(fine, 8);
    expect(fineItems.map((r) => `${r.status}:${r.detections[0]?.trackId}`)).toEqual(range(8).map((f) => `ok:${f + 1}`));
    const brokenItems = await h.waitForResults(broken, 3, 60_000);
    expect(byFrame(brokenItems)).toEqual({ 0: 'failed:processing-error', 1: 'failed:processing-error', 2: 'failed:processing-error' });
    expect(await w.metricTotalReaching(METRIC_NAMES.worker.framesParked, 3)).toBe(3);
    expect(w.metricTotal(METRIC_NAMES.worker.videoRollbacks)).toBeGreaterThanOrEqual(4);
    expect(w.logsMatching(/order-violation|frame-out-of-order/)).toEqual([]);
    await w.stop();
  });
});

describe('idempotent everywhere: redeliveries after partial deletes change nothing', () => {
  it('settles a redelivered after-end frame once, without dead-lettering it or stalling its batch', async () => {
    const slot = 2;
    const video = h.videoId('after-end');
    const other = h.videoId('bystander');
    for (const v of [video, other]) await h.pinVideo(v, slot);
    await h.putFrames(video, [0, 1, 2, 9]);
    await h.putFrames(other, range(3));
    await h.putEnd(video, 2);
    // The first two deletes of frame 9's message fail: it comes back twice.
    model.failDeletes((c) => c.message !== undefined && parseSlotMessage(c.message.body)?.videoId === video && frameNumber(c.message.body) === 9, { times: 2 });
    const w = h.createWorker(slot).start();
    await h.sendFrames(slot, video, [0, 1, 2]);
    await h.sendEnd(slot, video);
    await h.sendFrames(slot, video, [9]);
    await h.sendFrames(slot, other, range(3));
    // Assess
    await waitFor('frame 9 delivered three times', async () => (model.deliveries(h.slotUrl(slot)).filter((d) => frameNumber(d.body) === 9 && parseSlotMessage(d.body)?.videoId === video).length >= 3 ? true : undefined), 30_000);
    await waitFor('queue drained', async () => (model.pending(h.slotUrl(slot)).length === 0 ? true : undefined), 30_000);
    expect(byFrame(await h.frameResults(video))).toEqual({ 0: 'ok', 1: 'ok', 2: 'ok', 9: 'failed:after-end-of-stream' });
    expect(byFrame(await h.frameResults(other))).toEqual({ 0: 'ok', 1: 'ok', 2: 'ok' });
    expect(await h.summary(video)).toMatchObject({ framesFailed: 1, framesOk: 3 });
    expect(model.pending(h.dlqUrl(slot))).toEqual([]);
    await w.stop();
  });

  it('forwards a stray frame once, even when its delete fails and it is redelivered', async () => {
    // Prepare: the video lives on slot 4 (no worker there); its frames reached slot 3
    const slot = 3;
    const home = 4;
    const video = h.videoId('stray');
    await h.pinVideo(video, home);
    await h.putFrames(video, range(3));
    model.failDeletes((c) => c.message !== undefined && parseSlotMessage(c.message.body)?.videoId === video, { times: 3 });
    const w = h.createWorker(slot).start();
    // Act
    await h.sendFrames(slot, video, range(3));
    // Assess: every frame forwarded (more than once), but the home queue holds each once
    await waitFor('stray queue drained', async () => (model.pending(h.slotUrl(slot)).length === 0 ? true : undefined), 30_000);
    expect(w.metricTotal(METRIC_NAMES.worker.framesForwarded)).toBeGreaterThanOrEqual(4);
    const home3 = model.pending(h.slotUrl(home)).map((m) => frameNumber(m.body)).sort();
    expect(home3).toEqual([0, 1, 2]);
    await w.stop();
  });
});

describe('a worker that survives transient errors', () => {
  it('survives a throttled receive, adoption, forward, dead-letter, end-marker read, delete and release, and finishes the video', async () => {
    // Prepare
    const slot = 5;
    const video = h.videoId('survivor');
    const elsewhere = h.videoId('elsewhere');
    await h.pinVideo(elsewhere, 6);
    await h.putFrames(video, range(5));
    await h.putFrames(elsewhere, [0]);
    await h.putEnd(video, 4);
    await h.sendFrames(slot, video, range(5));
    await h.sendEnd(slot, video);
    await h.sendFrames(slot, elsewhere, [0]);
    await model.send(new SendMessageCommand({ QueueUrl: h.slotUrl(slot), MessageBody: 'not a slot message', MessageGroupId: 'junk', MessageDeduplicationId: 'junk-1' }));
    // Each of these fails once.
    const timeout = () => Object.assign(new Error('request timed out'), { name: 'TimeoutError', $metadata: {} });
    const at = (url: string) => (input: Readonly<Record<string, unknown>>) => input.QueueUrl === url;
    model.throwOn('ReceiveMessage', throttled, 1, at(h.slotUrl(slot)));
    model.throwOn('SendMessageBatch', throttled, 1, at(h.slotUrl(6)));
    model.throwOn('SendMessage', throttled, 1, at(h.dlqUrl(slot)));
    model.throwOn('DeleteMessageBatch', throttled, 1, at(h.slotUrl(slot)));
    const leases = LeaseStore.forWiring(h.clients.ddb, h.wiring, h.tunables);
    failOnce(leases, 'adoptVideo', timeout);
    failOnce(leases, 'releaseVideo', timeout);
    let endReads = 0;
    const w = h
      .createWorker(slot, {
        extraDeps: { leases },
        frames: (inner) =>
          Object.assign(Object.create(inner) as FrameStore, {
            getText: async (bucket: string, key: string) => {
              if (++endReads === 1) throw s3Error('SlowDown', 'Please reduce your request rate', 503);
              return inner.getText(bucket, key);
            },
          }),
      })
      .start();
    // Assess: the video completes, is released, the junk is dead-lettered, the stray forwarded
    await h.waitForSummary(video, (s) => s.status === 'complete', 60_000);
    expect(byFrame(await h.frameResults(video))).toEqual({ 0: 'ok', 1: 'ok', 2: 'ok', 3: 'ok', 4: 'ok' });
    await waitFor('video released', async () => {
      const item = (await h.clients.ddb.send(new GetCommand({ TableName: h.wiring.leasesTable, Key: { pk: `video#${video}` }, ConsistentRead: true }))).Item;
      return item?.state === 'released' ? true : undefined;
    }, 30_000);
    await waitFor('junk dead-lettered', async () => (model.pending(h.dlqUrl(slot)).some((m) => m.body === 'not a slot message') ? true : undefined), 30_000);
    await waitFor('stray forwarded', async () => (model.pending(h.slotUrl(6)).length === 1 ? true : undefined), 30_000);
    expect(w.crashed).toBeUndefined();
    expect(w.leaseLost).toBeUndefined();
    const survived = new Set(w.metrics.filter((m) => m.name === METRIC_NAMES.worker.workerErrors).map((m) => m.dimensions.Where));
    // The video was not pinned when the worker started: its first message meets the failing adoption.
    // The end marker whose read failed was held in the process and taken on the next try ('accept'), not rolled back.
    for (const where of ['receive', 'ensure-owned', 'forward', 'dead-letter', 'delete', 'release', 'accept']) expect(survived).toContain(where);
    expect(w.metrics.some((m) => m.name === METRIC_NAMES.worker.videoRollbacks)).toBe(false);
    expect(await w.stop()).toBe('drained');
  });
});

function frameNumber(body: string): number | undefined {
  const m = parseSlotMessage(body);
  return m?.kind === 'frame' ? m.frame : undefined;
}

/** Makes one method of an object throw once, then behave. */
function failOnce<T extends object>(target: T, method: keyof T & string, error: () => Error): void {
  const original = (target[method] as (...args: unknown[]) => unknown).bind(target);
  let failed = false;
  Object.assign(target, {
    [method]: async (...args: unknown[]) => {
      if (!failed) {
        failed = true;
        throw error();
      }
      return original(...args);
    },
  });
}
