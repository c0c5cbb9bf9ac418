/**
 * A corrected end marker after frames past the old end were recorded `after-end-of-stream`
 * (the real worker on the in-memory twins: the SQS FIFO model, the lease table's twin and the
 * S3 twin, on a fake clock, so the idle release takes no real minute): the video takes the
 * new end, each of those frames keeps its one record and is settled at once (no backoff
 * per frame: with N such frames the video once took N growing backoffs, up to 30 s each, to
 * complete), and the warning names the replay that processes them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endMarkerKey } from '../../../core/ingest/keys.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';
import { waitFor } from '../../../harness/wait.ts';

describe('worker: an end marker corrected after frames past the old end were recorded', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it.each([
    { when: 'as it comes', released: false },
    { when: 'once the video is released and unpinned', released: true },
  ])('moves the end ($when), keeps every frame at one record, settles the recorded ones without backing off, and names the replay', async ({ released }) => {
    // Prepare: frames 0-3 and an end marker saying 3; the video completes.
    const slot = 0;
    const v = h.videoId('moved');
    await h.pinVideo(v, slot);
    await h.putFrames(v, [0, 1, 2, 3, 4, 5, 6, 7]);
    await h.putEnd(v, 3);
    await h.sendFrames(slot, v, [0, 1, 2, 3]);
    const sendEnd = (eTag: string) => h.queues.send(slot, [{ message: { kind: 'end', videoId: v, bucket: h.bucket, key: endMarkerKey(v), eventTime: new Date().toISOString(), eTag } }]);
    await sendEnd('end-1');
    const worker = h.createWorker(slot).start();
    await h.waitForSummary(v, (s) => s.status === 'complete');
    // Frames 4-7 arrive after the end: each gets its `after-end-of-stream` record.
    await h.sendFrames(slot, v, [4, 5, 6, 7]);
    await h.waitForResults(v, 8);

    // Act: the marker is corrected to 7 (a new upload: a new ETag, so not deduplicated).
    // Whether the video is still owned or already released and unpinned when it comes, the
    // video takes the new end.
    await h.putEnd(v, 7);
    if (released) await waitFor('the video released', async () => (await h.leases.getVideo(v)).pinnedSlot === undefined);
    await sendEnd('end-2');
    await h.waitForSummary(v, (s) => s.status === 'complete' && s.endFrame === 7);
    await worker.stop();

    // Assess
    const items = await h.frameResults(v);
    expect(items.map((r) => [r.frame, r.status, r.reason ?? ''])).toEqual([
      [0, 'ok', ''],
      [1, 'ok', ''],
      [2, 'ok', ''],
      [3, 'ok', ''],
      [4, 'failed', 'after-end-of-stream'],
      [5, 'failed', 'after-end-of-stream'],
      [6, 'failed', 'after-end-of-stream'],
      [7, 'failed', 'after-end-of-stream'],
    ]);
    expect(worker.metricTotal(METRIC_NAMES.worker.endMarkersChanged)).toBe(1);
    const warned = worker.logsMatching(/^end marker changed; frames already recorded after-end-of-stream keep that record$/, ['warn']);
    expect(warned.map((l) => l.fields?.command)).toEqual([`affinity replay ${v} --from 4`]);
    // Settled at once, not as failed rounds: no backoff for a frame whose record stands.
    expect(worker.logsMatching(/retrying after a backoff/).filter((l) => l.fields?.reason === 'record-exists')).toEqual([]);
  });
});
