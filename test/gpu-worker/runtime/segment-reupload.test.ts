/**
 * A segment re-uploaded with other bytes within SQS's 5-minute deduplication window (issue
 * 40): its message must reach the worker, which warns with the replay that re-runs the
 * recorded frames (`SegmentsReuploaded`); a duplicated notification of the same upload is
 * still dropped by FIFO deduplication. The real worker on the in-memory twins (the SQS FIFO
 * model deduplicates as SQS does), real H.264, on the real clock (see PATIENCE_MS).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'video', 'fixtures');
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(path.join(FIXTURES, name)));
/** The same 45 frames in two byte layouts (so two ETags). */
const MP4_45 = fixture('bframes-45.mp4');
const MP4_45_FASTSTART = fixture('bframes-45-faststart.mp4');

/**
 * On the real clock: SQS's deduplication window is 5 minutes, and fake time runs ahead of
 * real decoding (untracked by the fake clock), so on a busy machine it could pass the
 * window before the re-upload and let the message through without the fix.
 */
const PATIENCE_MS = 60_000;

describe('worker: a segment re-uploaded with other bytes within five minutes', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('warns once with the replay command; a repeated notification of the same upload is dropped by the queue', async () => {
    // Prepare: segment 0 recorded
    const v = h.videoId('reup');
    await h.pinVideo(v, 0);
    await h.putSegment(v, 0, MP4_45, { frames: 45 });
    await h.sendSegment(0, v, 0);
    const worker = h.createWorker(0).start();
    await h.waitForResults(v, 45, PATIENCE_MS);

    // Act: the uploader puts segment 0 again (other bytes, so another ETag) and S3 notifies it, twice
    await h.putSegment(v, 0, MP4_45_FASTSTART, { frames: 45 });
    await h.sendSegment(0, v, 0);
    await h.sendSegment(0, v, 0);

    // Assess: the re-upload reached the worker and was warned about, naming the replay
    await worker.metricTotalReaching(METRIC_NAMES.worker.segmentsReuploaded, 1, {}, PATIENCE_MS);
    // Its 45 frames are duplicates of recorded ones, counted once: the repeated notification never came.
    await worker.metricTotalReaching(METRIC_NAMES.worker.framesDuplicate, 45, {}, PATIENCE_MS);
    await new Promise((r) => setTimeout(r, 1_000));
    await worker.stop();
    expect(worker.metricTotal(METRIC_NAMES.worker.segmentsReuploaded)).toBe(1);
    expect(worker.metricTotal(METRIC_NAMES.worker.framesDuplicate)).toBe(45);
    const warned = worker.logsMatching(/^segment re-uploaded with other bytes/, ['warn']);
    expect(warned.map((l) => l.fields?.command)).toEqual([`affinity replay ${v} --from 0`]);
    // Every frame keeps its one record.
    expect((await h.frameResults(v)).map((r) => `${r.frame}:${r.status}`)).toEqual(Array.from({ length: 45 }, (_, i) => `${i}:ok`));
  });
});
