/**
 * The live-rate gather (decision 31) holds nothing while it waits: on the SQS FIFO model
 * (several messages of a group per receive, a group blocked while any of its messages is
 * in flight), at a live rate, every receive the worker makes finds every message it
 * received before already deleted, so no video's group is blocked by the gather, and a
 * receive carries several videos' frames. The queue is wrapped to count what is received
 * and deleted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlotQueues } from '../../../core/ingest/sqs/slot-queues.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

const VIDEOS = 5;
const FRAMES = 7;
/** Each camera sends a frame this often, the cameras' phases spread evenly. */
const CAMERA_PERIOD_MS = 800;
const GATHER_MS = 600;
const frameNumbers = Array.from({ length: FRAMES }, (_, i) => i);

let h: WorkerHarness;

beforeAll(async () => {
  h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 60_000, receiveGatherMs: GATHER_MS } });
});

afterAll(async () => {
  await h?.stop();
});

/** SlotQueues that records, at each receive, how many handles received earlier were not yet deleted. */
class WatchedQueues extends SlotQueues {
  readonly outstandingAtReceive: number[] = [];
  readonly receivedPerCall: number[] = [];
  readonly #outstanding = new Set<string>();

  override async receive(slot: number, maxMessages: number, waitSeconds: number, abortSignal?: AbortSignal) {
    this.outstandingAtReceive.push(this.#outstanding.size);
    const got = await super.receive(slot, maxMessages, waitSeconds, abortSignal);
    for (const m of got) this.#outstanding.add(m.receiptHandle);
    if (got.length > 0) this.receivedPerCall.push(got.length);
    return got;
  }

  override async delete(slot: number, receiptHandles: readonly string[]) {
    for (const r of receiptHandles) this.#outstanding.delete(r);
    return super.delete(slot, receiptHandles);
  }
}

describe('the live-rate gather', () => {
  it('receives only once every earlier message is deleted (no group blocked while gathering), with several videos per receive', async () => {
    // Prepare
    const slot = 0;
    const videos = Array.from({ length: VIDEOS }, (_, i) => h.videoId(`cam${i}`));
    for (const v of videos) {
      await h.pinVideo(v, slot);
      await h.putFrames(v, frameNumbers);
    }
    const queues = new WatchedQueues(h.model!.asClient(), h.wiring.slotQueueUrlPrefix);
    const worker = h.createWorker(slot, { extraDeps: { queues } }).start();
    // Every video adopted (its frame 0 recorded) before counting: adoption at start is not a live rate.
    for (const v of videos) await h.sendFrames(slot, v, [0]);
    for (const v of videos) await h.waitForResults(v, 1, 60_000);
    queues.outstandingAtReceive.length = 0;
    queues.receivedPerCall.length = 0;

    // Act: a live rate, each camera a frame every CAMERA_PERIOD_MS
    const startMs = Date.now();
    for (const f of frameNumbers.slice(1)) {
      for (const [i, v] of videos.entries()) {
        const dueMs = startMs + (((f - 1) * VIDEOS + i) * CAMERA_PERIOD_MS) / VIDEOS;
        await new Promise((r) => setTimeout(r, Math.max(0, dueMs - Date.now())));
        await h.sendFrames(slot, v, [f]);
      }
    }
    for (const v of videos) await h.waitForResults(v, FRAMES, 60_000);
    await worker.stop();

    // Assess: every frame once, in order
    for (const v of videos) {
      const items = await h.frameResults(v);
      expect(items.map((r) => `${r.frame}:${r.status}`)).toEqual(frameNumbers.map((f) => `${f}:ok`));
      expect(items.map((r) => r.detections[0]?.trackId)).toEqual(frameNumbers.map((f) => f + 1));
    }
    // Nothing held across a receive: each one came after the previous round's delete.
    expect(queues.outstandingAtReceive.filter((n) => n > 0)).toEqual([]);
    // And the receives gathered: several frames (of several videos: at most one per video per camera period) each.
    const frames = VIDEOS * (FRAMES - 1);
    expect(queues.receivedPerCall.reduce((a, b) => a + b, 0)).toBe(frames);
    expect(queues.receivedPerCall.length).toBeLessThanOrEqual(frames / 2);
  }, 120_000);
});
