/**
 * The real worker with its slot queues on fauxqs (one message per group per receive, where
 * SQS and the SQS FIFO model give several), the real LeaseStore on DynamoDB Local and real
 * S3 frames on fauxqs. The worker's behaviour on the SQS FIFO model, on the twins, is
 * worker-fifo-model.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { shuffledWithinWindows, WorkerHarness } from '../../../harness/worker-harness.ts';

const FRAMES = 30;
const WINDOW = 5;
const frameNumbers = Array.from({ length: FRAMES }, (_, i) => i);

function expectEveryFrameOkOnceInOrder(items: readonly FrameResultItem[], frames: readonly number[] = frameNumbers): void {
  expect(items.map((r) => r.frame)).toEqual(frames);
  expect(items.map((r) => r.status)).toEqual(frames.map(() => 'ok'));
  // The tracker saw frame n as its (n+1)-th frame: every frame once, in frame order.
  expect(items.map((r) => r.detections[0]?.trackId ?? -1)).toEqual(frames.map((f) => f + 1));
}

describe('the same worker on fauxqs (one message per group per receive)', () => {
  let fx: WorkerHarness;
  beforeAll(async () => {
    fx = await WorkerHarness.start({ slots: 1, queueBackend: 'fauxqs', tunables: { slotQueueVisibilitySeconds: 2, slotLeaseTtlSeconds: 6, heartbeatIntervalSeconds: 2, firstFrameNumber: 0 } });
  });
  afterAll(async () => {
    await fx?.stop();
  });

  it('processes a video of 15 shuffled frames (fewer: one message per receive is slow): each frame one ok result, in order', async () => {
    // Prepare
    const frames = frameNumbers.slice(0, 15);
    const video = fx.videoId('fauxqs');
    await fx.pinVideo(video, 0);
    await fx.putFrames(video, frames);
    await fx.putEnd(video, frames.length - 1);
    await fx.sendFrames(0, video, shuffledWithinWindows(frames, WINDOW, 5));
    await fx.sendEnd(0, video);
    const worker = fx.createWorker(0, { tunables: { firstFrameNumber: 0 } });

    // Act
    worker.start();
    const s = await fx.waitForSummary(video, (x) => x.status === 'complete');
    const exit = await worker.stop();

    // Assess
    expect(exit).toBe('drained');
    expect(fx.model).toBeUndefined();
    expectEveryFrameOkOnceInOrder(await fx.frameResults(video), frames);
    expect({ ok: s.framesOk, gap: s.framesGap, failed: s.framesFailed, ownerChanges: s.ownerChanges }).toEqual({ ok: frames.length, gap: 0, failed: 0, ownerChanges: 1 });
  });
});
