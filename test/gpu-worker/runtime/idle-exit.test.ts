/**
 * Scale to zero, the worker's rule alone: a worker that owns no video, finds none pinned to
 * its slot and receives nothing for `workerIdleExitSeconds` releases its slot and exits 0
 * (the real worker in this process, on the twins, with a fake clock). The whole cycle on the
 * local stack (router, janitor, worker processes) is idle-exit.int.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

describe('worker idle exit (worker harness)', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 2, tunables: { videoIdleReleaseSeconds: 2, routerPinCacheSeconds: 1, workerIdleExitSeconds: 1 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('releases its slot and ends with `idle` when nothing comes for workerIdleExitSeconds', async () => {
    // Prepare
    const w = h.createWorker(1);

    // Act
    const reason = await w.start().done;

    // Assess
    expect(reason).toBe('idle');
    const [slot] = (await h.leases.getSlots(2)).filter((s) => s.slot === 1);
    expect(slot?.owner).toBeUndefined();
    expect(slot?.expiresAtMs).toBeLessThanOrEqual(Date.now());
    expect(w.logsMatching(/^idle: released slot and exiting$/)).toHaveLength(1);
  });

  it('adopts a video pinned to its slot that it never received frames for, and exits only once that video is released', async () => {
    // Prepare: the router pins a video right after the worker's start-up adoption, and its
    // frames have not come yet (the pin always precedes the first frame)
    const videoId = h.videoId('pinned-late');
    const inner = LeaseStore.forWiring(h.clients.ddb, h.wiring, h.tunables);
    let pinned = false;
    const racing: LeaseStore = Object.assign(Object.create(inner) as LeaseStore, {
      async listPinned(slot: number): Promise<string[]> {
        const found = await inner.listPinned(slot);
        if (!pinned) {
          pinned = true;
          await h.pinVideo(videoId, slot);
        }
        return found;
      },
    });
    const w = h.createWorker(0, { extraDeps: { leases: racing } });

    // Act
    const reason = await w.start().done;

    // Assess: the video was adopted and released (not left pinned to a slot without an
    // owner), and the worker left only after that
    expect(reason).toBe('idle');
    expect(pinned).toBe(true);
    const video = (await h.clients.ddb.send(new GetCommand({ TableName: h.wiring.leasesTable, Key: { pk: `video#${videoId}` }, ConsistentRead: true }))).Item;
    expect(video?.state).toBe('released');
    expect(video?.pinnedSlot).toBeUndefined();
    const order = w.logs.map((l) => l.message);
    expect(order.indexOf('video adopted')).toBeGreaterThanOrEqual(0);
    expect(order.indexOf('video released')).toBeGreaterThan(order.indexOf('video adopted'));
    expect(order.indexOf('idle: released slot and exiting')).toBeGreaterThan(order.indexOf('video released'));
    expect(w.metricTotal(METRIC_NAMES.worker.videosReleased, { Why: 'idle' })).toBe(1);
  });
});
