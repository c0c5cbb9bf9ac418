/**
 * Read ahead by predicted key (decision 39), the real worker on the SQS FIFO model (10
 * messages of one group per receive, group blocking) with S3 objects on the S3 twin (its ETag
 * semantics are checked against fauxqs by test/core/ingest/contract.int.test.ts), a fake clock, and
 * messages carrying each object's ETag, as S3 events do: behind a backlog, a video's
 * next frames are fetched while its current ones run, each frame is fetched once, and
 * every frame still gets exactly one record, in order.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { WorkerHarness, wrapProcessor } from '../../../harness/worker-harness.ts';
import { CountingFrameStore, inOrderTrackIds, testJpeg, trackIds } from '../../../harness/worker-doubles.ts';
import { waitFor } from '../../../harness/wait.ts';
import { SimulatedGpuProcessor } from '../../../lab/worker/simulated-gpu.ts';

const FRAMES = 45;
const frameNumbers = Array.from({ length: FRAMES }, (_, i) => i);

function expectEveryFrameOkOnceInOrder(items: readonly FrameResultItem[]): void {
  expect(items.map((r) => r.frame)).toEqual(frameNumbers);
  expect(items.map((r) => r.status)).toEqual(frameNumbers.map(() => 'ok'));
  // StatsProcessor: trackId = frames the video's state had seen, so every frame once, in order.
  expect(items.map((r) => r.detections[0]?.trackId)).toEqual(frameNumbers.map((f) => f + 1));
}

describe('worker read ahead (SQS FIFO model)', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    // Hedged GETs off: each frame must be read exactly once for the count below to mean anything.
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0, fetchHedgeMs: 0 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  /** Every frame of each video in S3 and queued, then its end marker: a backlog. */
  async function queueWholeVideos(slot: number, videos: readonly string[]): Promise<void> {
    for (const v of videos) {
      await h.pinVideo(v, slot);
      await h.putFrames(v, frameNumbers);
      await h.putEnd(v, FRAMES - 1);
      // The harness's messages carry each object's ETag, as the router's do from S3 events.
      await h.sendFrames(slot, v, frameNumbers);
      await h.sendEnd(slot, v);
    }
  }

  it("fetches a backlogged video's next frames before their messages come, uses them under the message's ETag, and reads each frame once", async () => {
    // Prepare: two videos' frames in S3, every message queued with the object's ETag, the worker last.
    const slot = 0;
    const videos = [h.videoId('ra'), h.videoId('rb')];
    await queueWholeVideos(slot, videos);
    let counting: CountingFrameStore | undefined;
    const worker = h.createWorker(slot, { statsDelayMs: 50, frames: (inner) => (counting = new CountingFrameStore(inner)) });

    // Act
    worker.start();
    await Promise.all(videos.map((v) => h.waitForSummary(v, (s) => s.status === 'complete', 120_000)));
    const exit = await worker.stop();

    // Assess
    expect(exit).toBe('drained');
    for (const v of videos) expectEveryFrameOkOnceInOrder(await h.frameResults(v));
    const { readAhead } = worker.worker.prefetchedFrames;
    // Receives of 10 after the first bring frames read ahead, confirmed by their messages' ETags.
    expect(readAhead.used).toBeGreaterThanOrEqual(10);
    // Every frame read once: a frame read ahead is not fetched again by its round.
    const frameReads = [...counting!.reads].filter(([key]) => !key.endsWith('_end'));
    const ofUploaded = frameReads.filter(([key]) => frameNumbers.some((f) => videos.some((v) => key === h.frameMessage(v, f).key)));
    expect(ofUploaded).toHaveLength(videos.length * FRAMES);
    expect(ofUploaded.filter(([, n]) => n !== 1)).toEqual([]);
    // Past a video's end a prediction costs one read of a key that does not exist (its last
    // predicted key, read first): 40-49 after the receive of 30-39, so 40-44 are not read ahead.
    expect(frameReads.length - ofUploaded.length).toBe(readAhead.missed);
    expect(readAhead.missed).toBeLessThanOrEqual(videos.length);
  });

  it('never uses bytes read ahead of a version its message does not announce: an object overwritten after the read ahead is processed as re-uploaded', async () => {
    // Prepare: 30 frames in S3; only the first 10 messages queued, so the worker reads 10-19 ahead.
    const slot = 0;
    const v = h.videoId('rw');
    const frames = Array.from({ length: 30 }, (_, i) => i);
    await h.pinVideo(v, slot);
    await h.putFrames(v, frames);
    const send = (from: number, to: number) => h.sendFrames(slot, v, frames.slice(from, to));
    await send(0, 10);
    const original = await testJpeg();
    const seen = new Map<number, Uint8Array>();
    // Frames read ahead are hinted to the processor for detection ahead (decision 42).
    const hinted = new Map<number, Uint8Array>();
    const worker = h.createWorker(slot, {
      statsDelayMs: 50,
      processor: (inner) =>
        wrapProcessor(inner, {
          process: (batch) => {
            for (const f of batch) if (f.videoId === v) seen.set(f.frame, f.image);
            return inner.process(batch);
          },
          detectAhead: (f) => void hinted.set(f.frame, f.image),
        }),
    });

    // Act: once 10-19 are read ahead, frame 15 is overwritten (a re-upload: other bytes, a
    // new ETag), and only then are the messages of 10-29 sent, 15's announcing the new
    // version (the harness's message carries the ETag of the last put).
    worker.start();
    await waitFor('frames 10-19 read ahead', () => worker.worker.prefetchedFrames.readAhead.started >= 10);
    const replacement = Buffer.concat([original, Buffer.from('re-uploaded')]);
    await h.putFrames(v, [15], replacement);
    await send(10, 20);
    await send(20, 30);
    await h.putEnd(v, 29);
    await h.sendEnd(slot, v);
    await h.waitForSummary(v, (s) => s.status === 'complete', 120_000);
    await worker.stop();

    // Assess: every frame once, in order; frame 15 ran with the bytes its message announced.
    const items = await h.frameResults(v);
    expect(items.map((r) => r.frame)).toEqual(frames);
    expect(items.map((r) => r.status)).toEqual(frames.map(() => 'ok'));
    expect(Buffer.from(seen.get(15)!).equals(replacement)).toBe(true);
    expect(Buffer.from(seen.get(14)!).equals(original)).toBe(true);
    expect(worker.worker.prefetchedFrames.readAhead.missed).toBeGreaterThanOrEqual(1);
    // Detect ahead keys by the byte array: frame 14's round got the very array hinted (its
    // detection ahead is used); frame 15's got other bytes, so its stale hint is never used.
    expect([...hinted.keys()].filter((f) => f >= 10 && f < 20).sort((a, b) => a - b)).toEqual([10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect(hinted.has(0)).toBe(false);
    expect(seen.get(14)).toBe(hinted.get(14));
    expect(seen.get(15)).not.toBe(hinted.get(15));
    expect(Buffer.from(hinted.get(15)!).equals(original)).toBe(true);
  });

  it('detects frames read ahead before their round (decision 42) and records the very tracks a plain run gives, every frame once, in order', async () => {
    // Prepare: a simulated GPU with detect ahead (its detections are a function of video and
    // frame, its track IDs the real ByteTrack's); the reference runs the frames in order, alone.
    const slot = 0;
    const videos = [h.videoId('da'), h.videoId('db')];
    await queueWholeVideos(slot, videos);
    const gpu = new SimulatedGpuProcessor({ batchSize: 8, maxBatchWaitMs: 5, perFrameMs: 5 }, undefined, 160);
    const worker = h.createWorker(slot, { processor: () => gpu });

    // Act
    worker.start();
    await Promise.all(videos.map((v) => h.waitForSummary(v, (s) => s.status === 'complete', 120_000)));
    await worker.stop();

    // Assess
    expect(gpu.detectedAhead.used).toBeGreaterThanOrEqual(10);
    for (const v of videos) {
      const items = await h.frameResults(v);
      expect(items.map((r) => r.frame)).toEqual(frameNumbers);
      expect(items.map((r) => r.status)).toEqual(frameNumbers.map(() => 'ok'));
      expect(items.map((r) => trackIds(r.detections))).toEqual(await inOrderTrackIds(v, frameNumbers));
    }
  });
});
