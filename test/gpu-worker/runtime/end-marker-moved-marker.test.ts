/**
 * A video released complete, adopted by an owner that then dies, and its end marker
 * corrected to a later frame (the real workers on the in-memory twins, on a fake clock;
 * found by the simulation, seed 5742). The successor takes the video over from a dead owner
 * and runs it isolated (decision 29): its first write is the crash-loop marker, which
 * re-commits the last checkpoint, still `complete` for the old end. The marker landing once
 * released the video as finished: the session's new end and the frames past the old end it
 * had taken were dropped with it (a frame found by listing, its notification late, then
 * never got a record). Whether a video finished is the session's word
 * (`VideoSession.applyCommitted`), never the flag a marker carries.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endMarkerKey } from '../../../core/ingest/keys.ts';
import { ProcessGate } from '../../../harness/process-gate.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

describe('worker: a crash-loop marker for a video whose end marker moved later', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('does not release the video as finished: the frames up to the new end are processed ok', async () => {
    // Prepare: frames 0-1 and an end marker saying 1; worker A completes and releases the video.
    const slot = 0;
    const v = h.videoId('moved-marker');
    await h.putFrames(v, [0, 1, 2, 3, 4]);
    await h.putEnd(v, 1);
    await h.pinVideo(v, slot);
    await h.sendFrames(slot, v, [0, 1]);
    // Each marker version is its own message (its ETag), as S3's notifications are.
    const sendEnd = (eTag: string) => h.queues.send(slot, [{ message: { kind: 'end', videoId: v, bucket: h.bucket, key: endMarkerKey(v), eventTime: new Date().toISOString(), eTag } }]);
    await sendEnd('end-1');
    const a = h.createWorker(slot, { gate: new ProcessGate() }).start();
    await h.waitForSummary(v, (s) => s.status === 'complete' && s.endFrame === 1);
    await h.waitFor('A released the video', async () => ((await h.leases.getVideo(v)).state === 'released' ? true : undefined));
    await a.stop();

    // The video is pinned again (as the router does for a late notification) and worker B
    // adopts it at start, checkpoint still complete for end 1; B dies before it reads a message.
    await h.pinVideo(v, slot);
    const gateB = new ProcessGate();
    const b = h.createWorker(slot, { gate: gateB }).start();
    await h.waitFor('B adopted the video', () => (b.logsMatching(/^video adopted/).length > 0 ? true : undefined));
    gateB.kill();

    // Act: the marker is corrected to 4 and frames 2-4 arrive; C takes the slot over from the dead owner.
    await h.putEnd(v, 4);
    await sendEnd('end-2');
    await h.sendFrames(slot, v, [2, 3, 4]);
    const c = h.createWorker(slot, { gate: new ProcessGate() }).start();
    await h.waitForResults(v, 5, 120_000);
    await h.waitForSummary(v, (s) => s.status === 'complete' && s.endFrame === 4, 120_000);
    await c.stop();

    // Assess: C ran the video isolated (so its first write was a marker), and every frame up
    // to the new end was processed by C, none recorded after-end-of-stream.
    expect(c.logsMatching(/^crash-loop breaker: video taken over from a dead owner/, ['warn']).map((l) => l.fields?.videoId)).toEqual([v]);
    expect(c.logsMatching(/^end marker changed/, ['warn']).map((l) => l.fields?.markerEndFrame)).toEqual([4]);
    const items = await h.frameResults(v);
    expect(items.map((r) => [r.frame, r.status, r.reason ?? '', r.worker])).toEqual([
      [0, 'ok', '', a.workerId],
      [1, 'ok', '', a.workerId],
      ...[2, 3, 4].map((f) => [f, 'ok', '', c.workerId]),
    ]);
    const lease = await h.leases.getVideo(v);
    expect(lease.checkpoint?.sequencer.endFrame).toBe(4);
    expect(lease.checkpoint?.sequencer.nextFrame).toBe(5);
  }, 60_000);
});
