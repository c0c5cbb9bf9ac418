/**
 * Receive ahead: while a round runs, the worker receives the next messages and starts their
 * frames' GETs (and hands the bytes to the processor to decode ahead), so the next round
 * need not wait for them. The cases, run on the SQS FIFO model (several messages of a
 * group per receive, group blocking) on the twins with a fake clock by
 * worker-receive-ahead.test.ts, and on fauxqs (one message per group per receive) on the
 * emulators by worker-receive-ahead.int.test.ts, with a slow StatsProcessor so that rounds
 * last long enough to receive during them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { WorkerHarness, wrapProcessor, type HarnessWorker, type WorkerHarnessOptions } from '../../../harness/worker-harness.ts';
import { CountingFrameStore } from '../../../harness/worker-doubles.ts';

const VIDEOS = 12;
const FRAMES = 8;
/** Per process call: rounds long enough for the receive ahead to land inside them. */
const SLOW_MODEL_MS = 150;
const frameNumbers = Array.from({ length: FRAMES }, (_, i) => i);

function expectEveryFrameOkOnceInOrder(items: readonly FrameResultItem[]): void {
  expect(items.map((r) => r.frame)).toEqual(frameNumbers);
  expect(items.map((r) => r.status)).toEqual(frameNumbers.map(() => 'ok'));
  // StatsProcessor: trackId = frames the video's state had seen, so every frame once, in order.
  expect(items.map((r) => r.detections[0]?.trackId)).toEqual(frameNumbers.map((f) => f + 1));
}

/** Registers the cases on a harness started with `backend` (the backend, the slot queues' backend, the clock). */
export function receiveAheadCases(name: string, backend: Pick<WorkerHarnessOptions, 'backend' | 'clock' | 'queueBackend'>): void {
  describe(`worker receive ahead (${name})`, () => {
    let h: WorkerHarness;

    beforeAll(async () => {
      // One receive per round (no fan-out, decision 30): with several receives in flight the
      // first round takes in most of this small backlog, and nothing is left to receive ahead.
      // Hedged GETs off: each frame must be read exactly once for the count below to mean
      // anything (on a loaded machine a fauxqs GET past the hedge delay was read twice).
      h = await WorkerHarness.start({ ...backend, slots: 2, tunables: { firstFrameNumber: 0, reorderWaitMs: 60_000, receiveConcurrency: 1, fetchHedgeMs: 0 } });
    });

    afterAll(async () => {
      await h?.stop();
    });

    async function queueVideos(slot: number): Promise<string[]> {
      const videos = Array.from({ length: VIDEOS }, (_, i) => h.videoId(`v${i}`));
      for (const v of videos) {
        await h.pinVideo(v, slot);
        await h.putFrames(v, frameNumbers);
        await h.putEnd(v, FRAMES - 1);
      }
      // Interleaved like live cameras, so every receive can bring several videos.
      for (const f of frameNumbers) for (const v of videos) await h.sendFrames(slot, v, [f]);
      for (const v of videos) await h.sendEnd(slot, v);
      return videos;
    }

    it("fetches the next round's frames during this one, each frame once, and every video's frames stay in order", async () => {
      // Prepare
      const slot = 0;
      const videos = await queueVideos(slot);
      let counting: CountingFrameStore | undefined;
      // The bytes the worker hinted to decode ahead, and how many frames later came with those very bytes.
      const hinted = new WeakSet<Uint8Array>();
      let processedFromHint = 0;
      const worker = h.createWorker(slot, {
        statsDelayMs: SLOW_MODEL_MS,
        frames: (inner) => (counting = new CountingFrameStore(inner)),
        processor: (inner) =>
          wrapProcessor(inner, {
            prepareAhead: (image) => hinted.add(image),
            process: (frames) => {
              processedFromHint += frames.filter((f) => hinted.has(f.image)).length;
              return inner.process(frames);
            },
          }),
      });

      // Act
      worker.start();
      await Promise.all(videos.map((v) => h.waitForSummary(v, (s) => s.status === 'complete', 120_000)));
      const exit = await worker.stop();

      // Assess
      expect(exit).toBe('drained');
      for (const v of videos) expectEveryFrameOkOnceInOrder(await h.frameResults(v));
      const { started, used } = worker.worker.prefetchedFrames;
      expect(used).toBeGreaterThan(0);
      expect(used).toBeLessThanOrEqual(started);
      // Prefetched bytes were handed to the processor to decode ahead, and each such frame's round brought the same bytes.
      expect(processedFromHint).toBe(used);
      // A prefetched frame is not fetched a second time by its round.
      const frameGets = [...counting!.reads].filter(([key]) => !key.endsWith('_end'));
      expect(frameGets).toHaveLength(VIDEOS * FRAMES);
      expect(frameGets.filter(([, n]) => n !== 1)).toEqual([]);
    });

    it('hands messages received ahead back to the queue at once when it drains, and a successor finishes every video in order', async () => {
      // Prepare
      const slot = 1;
      const videos = await queueVideos(slot);
      let first: HarnessWorker | undefined;
      let stopping: Promise<unknown> | undefined;
      first = h.createWorker(slot, {
        processor: (inner) =>
          wrapProcessor(inner, {
            process: async (frames) => {
              const out = await inner.process(frames);
              await new Promise((r) => setTimeout(r, SLOW_MODEL_MS));
              // Drain in the middle of a round whose successors were received ahead.
              if (!stopping && first!.worker.prefetchedFrames.started > 0) stopping = first!.stop();
              return out;
            },
          }),
      });

      // Act
      first.start();
      const exit = await first.done;
      // Every message visible now (fauxqs hands out one per group per receive, so receive until none is left).
      const visibleAtOnce: Awaited<ReturnType<typeof h.queues.receive>> = [];
      for (let got = await h.queues.receive(slot, 10, 0); got.length > 0; got = await h.queues.receive(slot, 10, 0)) visibleAtOnce.push(...got);
      await h.queues.extendVisibility(slot, visibleAtOnce.map((m) => m.receiptHandle), 0);
      const successor = h.createWorker(slot).start();
      await Promise.all(videos.map((v) => h.waitForSummary(v, (s) => s.status === 'complete', 120_000)));
      await successor.stop();

      // Assess: messages the first worker had received (ahead) are visible right after it
      // stopped, not a visibility timeout later...
      expect(exit).toBe('drained');
      expect(stopping).toBeDefined();
      expect(visibleAtOnce.filter((m) => m.receiveCount >= 2).length).toBeGreaterThan(0);
      // ...and nothing was lost, doubled or reordered across the hand-over.
      for (const v of videos) expectEveryFrameOkOnceInOrder(await h.frameResults(v));
    });
  });
}
