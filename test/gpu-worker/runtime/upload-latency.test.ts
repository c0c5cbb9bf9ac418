/**
 * `UploadToRecordMs` end to end: the real worker on the in-memory twins (SQS FIFO model,
 * lease table, S3) and a fake clock. Each frame message carries S3's `eventTime`; once the commit carrying the
 * frame's record answers, the worker reports the time since it, once per `ok` frame, and
 * nothing for a failed frame or an operator's replay.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

let h: WorkerHarness;

beforeAll(async () => {
  h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0 } });
});

afterAll(async () => {
  await h?.stop();
});

describe('upload -> record latency', () => {
  it('reports the time from eventTime to the landed commit for each ok frame, and no sample for a failed frame or a replay', async () => {
    // Prepare: 6 frames "uploaded" 5 s ago, 200 ms apart (their eventTime); frame 2 is a
    // zero-byte object (failed: empty-object); frame 5 arrives only as an operator replay.
    const slot = 0;
    const video = h.videoId('latency');
    const frames = [0, 1, 2, 3, 4, 5];
    await h.pinVideo(video, slot);
    await h.putFrames(video, frames);
    const uploadedAtMs = new Map(frames.map((f) => [f, Date.now() - 5_000 + f * 200]));
    const message = (f: number) => ({ ...h.frameMessage(video, f, f === 2 ? 0 : undefined), eventTime: new Date(uploadedAtMs.get(f)!).toISOString() });
    const sent = await h.queues.send(slot, [0, 1, 2, 3, 4].map((f) => ({ message: message(f) })));
    const replay = await h.queues.send(slot, [{ message: { ...message(5), replayTag: 'r1' }, replayTag: 'r1' }]);
    expect([...sent, ...replay].every((o) => o.ok)).toBe(true);
    const worker = h.createWorker(slot);

    // Act
    worker.start();
    const results = await h.waitForResults(video, frames.length);
    const seenAtMs = Date.now();
    await worker.stop();

    // Assess: one sample per ok frame that was uploaded (not replayed). Each lies between its
    // record's round start (committedAtMs, stamped before the commit) and the moment the
    // test saw the records, measured from that frame's upload; sorted, the samples keep those
    // bounds elementwise whatever frame each belongs to.
    expect(results.map((r) => `${r.frame}:${r.status}`)).toEqual(['0:ok', '1:ok', '2:failed', '3:ok', '4:ok', '5:ok']);
    const uploaded = results.filter((r) => r.status === 'ok' && r.frame !== 5);
    const ascending = (xs: number[]) => [...xs].sort((a, b) => a - b);
    const lower = ascending(uploaded.map((r) => r.committedAtMs - uploadedAtMs.get(r.frame)!));
    const upper = ascending(uploaded.map((r) => seenAtMs - uploadedAtMs.get(r.frame)!));
    const samples = ascending(worker.metrics.filter((m) => m.name === METRIC_NAMES.worker.uploadToRecordMs).map((m) => m.value));
    expect(samples).toHaveLength(uploaded.length);
    samples.forEach((ms, i) => {
      expect(ms).toBeGreaterThanOrEqual(lower[i]!);
      expect(ms).toBeLessThanOrEqual(upper[i]!);
    });
    // The upload was 5 s before the worker started: every sample includes that wait.
    expect(samples.every((ms) => ms >= 4_000)).toBe(true);
  });
});
