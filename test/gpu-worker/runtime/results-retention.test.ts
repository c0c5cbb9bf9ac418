/**
 * `resultsRetentionDays` end to end (decision 55): the real worker on the in-memory twins
 * writes each frame record with `ttlEpochSeconds` = its commit time + the retention, and
 * the summary without one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getSummary } from '../../../core/commit/dynamodb/results-reader.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

const DAYS = 45;
let h: WorkerHarness;

beforeAll(async () => {
  h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0, resultsRetentionDays: DAYS } });
});

afterAll(async () => {
  await h?.stop();
});

describe('resultsRetentionDays', () => {
  it('gives every frame record, ok or failed, its commit time + the retention as TTL, and the summary none', async () => {
    // Prepare: 4 frames, frame 2 a zero-byte object (failed: empty-object)
    const slot = 0;
    const video = h.videoId('retention');
    await h.pinVideo(video, slot);
    await h.putFrames(video, [0, 1, 3]);
    await h.putFrames(video, [2], new Uint8Array(0));
    await h.sendFrames(slot, video, [0, 1, 2, 3]);
    const worker = h.createWorker(slot);

    // Act
    worker.start();
    const results = await h.waitForResults(video, 4);
    await worker.stop();

    // Assess
    expect(results.map((r) => `${r.frame}:${r.status}`)).toEqual(['0:ok', '1:ok', '2:failed', '3:ok']);
    for (const r of results) expect(r.ttlEpochSeconds).toBe(Math.floor(r.committedAtMs / 1000) + DAYS * 86_400);
    const summary = await getSummary(h.results, video);
    expect(summary).toBeDefined();
    expect(summary).not.toHaveProperty('ttlEpochSeconds');
  });
});
