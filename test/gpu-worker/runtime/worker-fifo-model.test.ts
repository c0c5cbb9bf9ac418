/**
 * The real worker on the SQS FIFO model (real SQS semantics: several messages of one
 * group per receive, group blocking, receipt handles, partial batch failures), with the
 * real LeaseStore on the lease table's twin and frames on the S3 twin, on a fake clock.
 * The same worker on fauxqs (one message per group per receive) is
 * worker-fifo-model.int.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { parseSlotMessage } from '../../../core/ingest/messages.ts';
import type { SqsFifoModel } from '../../../core/ingest/memory/sqs-fifo-model.ts';
import { shuffledWithinWindows, WorkerHarness, wrapProcessor } from '../../../harness/worker-harness.ts';
import { waitFor } from '../../../harness/wait.ts';

const FRAMES = 30;
const WINDOW = 5;

let h: WorkerHarness;
let model: SqsFifoModel;

beforeAll(async () => {
  h = await WorkerHarness.start({
    backend: 'memory',
    clock: 'fake',
    slots: 2,
    // Short visibility so that messages whose delete failed come back within seconds.
    tunables: { slotQueueVisibilitySeconds: 2, slotLeaseTtlSeconds: 6, heartbeatIntervalSeconds: 2, firstFrameNumber: 0 },
  });
  model = h.model!;
});

afterEach(() => model.clearFaults());

afterAll(async () => {
  await h?.stop();
});

const frameNumbers = Array.from({ length: FRAMES }, (_, i) => i);

/** trackId of the StatsProcessor's one detection = frames the video's state had seen. */
function trackIds(items: readonly FrameResultItem[]): number[] {
  return items.map((r) => r.detections[0]?.trackId ?? -1);
}

function expectEveryFrameOkOnceInOrder(items: readonly FrameResultItem[], frames: readonly number[] = frameNumbers): void {
  expect(items.map((r) => r.frame)).toEqual(frames);
  expect(items.map((r) => r.status)).toEqual(frames.map(() => 'ok'));
  // The tracker saw frame n as its (n+1)-th frame: every frame once, in frame order.
  expect(trackIds(items)).toEqual(frames.map((f) => f + 1));
}

function frameOf(body: string): number | 'end' | undefined {
  const m = parseSlotMessage(body);
  if (!m) return undefined;
  return m.kind === 'end' ? 'end' : m.frame;
}

describe('worker on the SQS FIFO model', () => {
  it('processes 3 videos of 30 shuffled frames: each frame one ok result, in order, with multi-message group receives', async () => {
    // Prepare: frames in S3, then every message queued (shuffled within windows of 5,
    // videos interleaved window by window), then the end markers; the worker starts last.
    const slot = 0;
    const videos = [h.videoId('a'), h.videoId('b'), h.videoId('c')];
    const orders = videos.map((_, i) => shuffledWithinWindows(frameNumbers, WINDOW, 17 + i));
    for (const v of videos) {
      await h.pinVideo(v, slot);
      await h.putFrames(v, frameNumbers);
      await h.putEnd(v, FRAMES - 1);
    }
    for (let start = 0; start < FRAMES; start += WINDOW) {
      for (const [i, v] of videos.entries()) await h.sendFrames(slot, v, orders[i]!.slice(start, start + WINDOW));
    }
    for (const v of videos) await h.sendEnd(slot, v);
    const seen = new Map<string, number[]>();
    const worker = h.createWorker(slot, {
      tunables: { firstFrameNumber: 0 },
      processor: (inner) =>
        wrapProcessor(inner, {
          process: (frames) => {
            for (const f of frames) seen.set(f.videoId, [...(seen.get(f.videoId) ?? []), f.frame]);
            return inner.process(frames);
          },
        }),
    });

    // Act
    worker.start();
    const summaries = await Promise.all(videos.map((v) => h.waitForSummary(v, (s) => s.status === 'complete')));
    const exit = await worker.stop();

    // Assess
    expect(exit).toBe('drained');
    for (const v of videos) expectEveryFrameOkOnceInOrder(await h.frameResults(v));
    // The processor got every frame of every video once, in frame order.
    expect(videos.map((v) => seen.get(v))).toEqual(videos.map(() => frameNumbers));
    for (const s of summaries) {
      expect({ ok: s.framesOk, late: s.framesLate, failed: s.framesFailed, gap: s.framesGap, first: s.firstFrame, last: s.lastFrame, end: s.endFrame }).toEqual({
        ok: FRAMES,
        late: 0,
        failed: 0,
        gap: 0,
        first: 0,
        last: FRAMES - 1,
        end: FRAMES - 1,
      });
      expect(s.ownerChanges).toBe(1);
    }
    // Real SQS hands out several messages of one group per receive (fauxqs never does).
    expect(model.maxGroupRunPerReceive(h.slotUrl(slot))).toBeGreaterThan(1);
    // Every message deleted, none dead-lettered, none delivered twice.
    expect(model.pending(h.slotUrl(slot))).toEqual([]);
    expect(model.messages(h.dlqUrl(slot))).toEqual([]);
    expect(model.deliveries(h.slotUrl(slot)).filter((d) => d.receiveCount > 1)).toEqual([]);
    expect(await worker.metricTotalReaching(METRIC_NAMES.worker.framesProcessed, 3 * FRAMES)).toBe(3 * FRAMES);
    // The slot-queue age the fleet alarm watches: one sample per non-empty receive, never negative.
    const ages = worker.metrics.filter((m) => m.name === METRIC_NAMES.worker.slotMessageAgeMs).map((m) => m.value);
    expect(ages.length).toBeGreaterThan(0);
    expect(ages.every((a) => a >= 0)).toBe(true);
  });

  it('lets redeliveries after failed deletes (during and after the video) change nothing', async () => {
    // Prepare: the first delete of every 7th frame and of the end message fails, so those
    // messages come back after the visibility timeout — frame 28 and the end message
    // only after the video is complete.
    const slot = 1;
    const video = h.videoId('redelivered');
    await h.pinVideo(video, slot);
    await h.putFrames(video, frameNumbers);
    await h.putEnd(video, FRAMES - 1);
    const failing = (f: number | 'end' | undefined) => f === 'end' || (typeof f === 'number' && f % 7 === 0);
    model.failDeletes((ctx) => ctx.message !== undefined && ctx.message.receiveCount === 1 && failing(frameOf(ctx.message.body)), { code: 'InternalError' });
    await h.sendFrames(slot, video, shuffledWithinWindows(frameNumbers, WINDOW, 99));
    await h.sendEnd(slot, video);
    const url = h.slotUrl(slot);
    const worker = h.createWorker(slot, { tunables: { firstFrameNumber: 0 } });

    // Act
    worker.start();
    await h.waitForSummary(video, (s) => s.status === 'complete');
    // Every failed delete redelivered and deleted: nothing left on the queue.
    await waitFor('slot queue drained', () => model.pending(url).length === 0, 30_000);
    const exit = await worker.stop();

    // Assess: the faults really happened, and the redeliveries came back.
    const failedDeletes = model.calls('DeleteMessageBatch').flatMap((c) => c.failedEntries ?? []);
    const redelivered = model.deliveries(url).filter((d) => d.receiveCount > 1).map((d) => frameOf(d.body));
    expect(failedDeletes).toHaveLength(6); // frames 0, 7, 14, 21, 28 and the end message
    expect(redelivered.sort()).toEqual([0, 14, 21, 28, 7, 'end'].sort());
    expect(exit).toBe('drained');
    // Nothing changed: one ok result per frame, in order, and the summary counts of a clean run.
    const items = await h.frameResults(video);
    expectEveryFrameOkOnceInOrder(items);
    expect(new Set(items.map((r) => r.token))).toEqual(new Set([1]));
    const s = (await h.summary(video))!;
    expect({ status: s.status, ok: s.framesOk, late: s.framesLate, failed: s.framesFailed, gap: s.framesGap, end: s.endFrame }).toEqual({
      status: 'complete',
      ok: FRAMES,
      late: 0,
      failed: 0,
      gap: 0,
      end: FRAMES - 1,
    });
    expect(model.messages(h.dlqUrl(slot))).toEqual([]);
    // A duplicate is not a change of owner: the video was adopted once, under token 1,
    // and no takeover was reported.
    expect({
      ownerChanges: s.ownerChanges,
      token: s.token,
      owners: s.owners.map((o) => o.token),
      takeoverMetric: worker.metricTotal(METRIC_NAMES.worker.videoTakeovers),
    }).toEqual({ ownerChanges: 1, token: 1, owners: [1], takeoverMetric: 0 });
  });
});
