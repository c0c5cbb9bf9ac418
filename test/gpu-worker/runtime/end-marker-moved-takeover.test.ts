/**
 * A corrected end marker, then kill -9 of the owner before it found the frames past the old
 * end again (the real workers on the in-memory twins, on a fake clock; found by the
 * simulation, seed 165). Those frames were recorded `after-end-of-stream` and their messages
 * deleted, so the successor finds them by listing S3, and runs them isolated (taken over from
 * a dead owner, decision 29): one frame per round, each commit finding the frame's record
 * standing (`VideoSession.settleExisting`). A plan whose only frame was such a frame once
 * returned nothing while its sequencer had moved on: nothing committed the move, every
 * later conflict restored the old checkpoint, and the video was released idle with its
 * buffer, never complete.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endMarkerKey } from '../../../core/ingest/keys.ts';
import { ProcessGate } from '../../../harness/process-gate.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

describe('worker: a corrected end marker, then a takeover from a dead owner', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('the successor, running the video isolated, completes it: every frame past the old end keeps its one record', async () => {
    // Prepare: frames 0-7, an end marker saying 1; frames 2-7 arrive after the end and get
    // their `after-end-of-stream` records from worker A.
    const slot = 0;
    const v = h.videoId('moved-takeover');
    await h.pinVideo(v, slot);
    await h.putFrames(v, [0, 1, 2, 3, 4, 5, 6, 7]);
    await h.putEnd(v, 1);
    await h.sendFrames(slot, v, [0, 1]);
    const sendEnd = (eTag: string) => h.queues.send(slot, [{ message: { kind: 'end', videoId: v, bucket: h.bucket, key: endMarkerKey(v), eventTime: new Date().toISOString(), eTag } }]);
    await sendEnd('end-1');
    const gateA = new ProcessGate();
    const a = h.createWorker(slot, { gate: gateA }).start();
    await h.waitForSummary(v, (s) => s.status === 'complete');
    await h.sendFrames(slot, v, [2, 3, 4, 5, 6, 7]);
    await h.waitForResults(v, 8);

    // Act: the marker is corrected to 7; A takes the new end and is killed before it lists
    // the frames again. B takes the slot over from the dead owner.
    await h.putEnd(v, 7);
    await sendEnd('end-2');
    await h.waitForSummary(v, (s) => s.endFrame === 7, 60_000);
    gateA.kill();
    const b = h.createWorker(slot, { gate: new ProcessGate() }).start();
    await h.waitForSummary(v, (s) => s.status === 'complete' && s.endFrame === 7, 120_000);
    await b.stop();

    // Assess: B ran the video isolated, and every frame kept its one record.
    expect(b.logsMatching(/^crash-loop breaker: video taken over from a dead owner/, ['warn']).map((l) => l.fields?.videoId)).toEqual([v]);
    expect(b.logsMatching(/already has a record; it stands/).length).toBeGreaterThanOrEqual(2);
    const items = await h.frameResults(v);
    expect(items.map((r) => [r.frame, r.status, r.reason ?? '', r.worker])).toEqual([
      [0, 'ok', '', a.workerId],
      [1, 'ok', '', a.workerId],
      ...[2, 3, 4, 5, 6, 7].map((f) => [f, 'failed', 'after-end-of-stream', a.workerId]),
    ]);
    const lease = await h.leases.getVideo(v);
    expect(lease.checkpoint?.complete).toBe(true);
    expect(lease.checkpoint?.sequencer.buffered).toEqual([]);
  }, 60_000);
});
