/**
 * A backlog of segments (issue 34): one receive brings many segments of a video, whose
 * messages stay in flight (blocking the video's FIFO group) until each segment's last frame
 * is committed, while the video's rounds run through the frames already in hand. The loop
 * must go from one round to the next as soon as the commit lands, never into a long poll
 * that nothing can answer (found by bench/gpu-sim.ts --source segments: a 5-s stall after
 * the first round, the GPU idle).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'video', 'fixtures');
/** 45 frames, B-frames, MP4. */
const MP4_45 = new Uint8Array(readFileSync(path.join(FIXTURES, 'bframes-45.mp4')));

describe('worker: a backlog of segments', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    // Long polls as long as SQS's (the harness caps them at 1 s by default, which would hide a wasted one).
    h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0 }, model: { longPollCapMs: 20_000 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('runs round after round from the frames in hand, without waiting out a long poll between them', async () => {
    const v = h.videoId('seg-backlog');
    await h.pinVideo(v, 0);
    // 10 segments: one receive takes them all (10 messages), and rounds of at most 80 frames follow.
    const firsts = Array.from({ length: 10 }, (_, i) => i * 45);
    for (const n of firsts) await h.putSegment(v, n, MP4_45, { frames: 45 });
    // No end marker yet: nothing else is in the queue while the segments' messages are in flight.
    for (const n of firsts) await h.sendSegment(0, v, n);
    const worker = h.createWorker(0).start();
    await h.waitForResults(v, 450, 60_000);
    await h.putEnd(v, 449);
    await h.sendEnd(0, v);
    const summary = await h.waitForSummary(v, (s) => s.status === 'complete', 60_000);
    await worker.stop();
    expect(summary).toMatchObject({ framesOk: 450, framesFailed: 0, framesGap: 0 });
    // Each round stamps its records when it starts: consecutive rounds are a round's work
    // apart (well under a second here), not a long poll's 5 s.
    const stamps = [...new Set((await h.frameResults(v)).map((r) => r.committedAtMs))].sort((a, b) => a - b);
    expect(stamps.length).toBeGreaterThan(4);
    const gaps = stamps.slice(1).map((t, i) => t - stamps[i]!);
    expect(Math.max(...gaps)).toBeLessThan(4_000);
  }, 90_000);
});
