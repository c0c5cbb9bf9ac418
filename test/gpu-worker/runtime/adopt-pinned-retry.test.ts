/**
 * A successor whose adoption of its slot's pinned videos fails at start (throttled, or the
 * answer lost) retries it on the next turn of its loop (the real workers on the in-memory
 * twins, on a fake clock; found by the simulation, seed 1402). A predecessor's buffered
 * frames have no message left (deleted once buffered), so before the retry they waited for
 * a new message of their video or for the idle rule, and a kill in that window counted as a
 * death on a frame nobody was running.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { ProcessGate } from '../../../harness/process-gate.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';
import { waitFor } from '../../../harness/wait.ts';

describe('worker: the adoption of pinned videos at start fails once', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 600_000, workerIdleExitSeconds: 3600 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('adopts them on the next turn, without a new message, and the buffered frames run', async () => {
    // Prepare: worker A runs frames 0-1 and buffers 3-5 behind frame 2, whose message never
    // comes; A is killed. Frame 2's message is sent only after B took the video, so that
    // nothing but the adoption can open it.
    const slot = 0;
    const v = h.videoId('adopt-retry');
    await h.pinVideo(v, slot);
    await h.putFrames(v, [0, 1, 2, 3, 4, 5]);
        const gateA = new ProcessGate();
    h.createWorker(slot, { gate: gateA }).start();
    await h.sendFrames(slot, v, [0, 1, 3, 4, 5]);
    await waitFor('A committed 0-1 with 3-5 buffered', async () => {
      const ck = (await h.leases.getVideo(v)).checkpoint;
      return ck?.framesOk === 2 && ck.sequencer.buffered.length === 3 ? true : undefined;
    }, 60_000);
    gateA.kill();

    // Act: B's first adoption of the slot's pinned videos fails.
    const leases = LeaseStore.forWiring(h.clients.ddb, h.wiring, h.tunables);
    const adopt = leases.adoptVideo.bind(leases);
    let adoptions = 0;
    Object.assign(leases, {
      adoptVideo: async (...args: Parameters<typeof adopt>) => {
        if (++adoptions === 1) throw Object.assign(new Error('Internal server error (test)'), { name: 'InternalServerError', $fault: 'server' });
        return adopt(...args);
      },
    });
    const b = h.createWorker(slot, { gate: new ProcessGate(), extraDeps: { leases } }).start();

    // Assess: B owns the video a loop turn later, without any message of it; then frame 2
    // releases the buffered frames.
    await waitFor('B owns the video', async () => ((await h.leases.getVideo(v)).owner === b.workerId ? true : undefined), 60_000);
    expect(b.metrics.filter((m) => m.name === METRIC_NAMES.worker.workerErrors).map((m) => m.dimensions.Where)).toContain('adopt-pinned');
    await h.sendFrames(slot, v, [2]);
    await h.waitForResults(v, 6);
    expect((await h.frameResults(v)).map((r) => [r.frame, r.status])).toEqual([0, 1, 2, 3, 4, 5].map((f) => [f, 'ok']));
    expect(adoptions).toBeGreaterThanOrEqual(2);
    await b.stop();
  }, 60_000);
});
