/**
 * Scale to zero and back: a worker that owns no video, finds none pinned to its slot and
 * receives nothing for `workerIdleExitSeconds` releases its slot and exits 0; frames that
 * arrive later launch a task again, and the videos' state continues from their checkpoints.
 *
 * First the worker's rule alone (worker harness: the real worker in this process), then the
 * whole cycle on the local stack (router, janitor, worker processes).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { LeaseStore } from '../../../core/aws/lease-store.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { WorkerHarness } from '../../support/worker-harness.ts';
import { results, startTestStack, uploadFrames, waitFor, waitForFrames, type TestStack } from '../../support/pipeline.ts';
import type { WorkerInfo } from '../../../local/local-task-launcher.ts';

describe('worker idle exit (worker harness)', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ slots: 2, tunables: { videoIdleReleaseSeconds: 2, routerPinCacheSeconds: 1, workerIdleExitSeconds: 1 } });
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

describe('local stack: the fleet drains to zero when idle and comes back for new frames', () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await startTestStack({ tunables: { slotCount: 2, videoIdleReleaseSeconds: 2, routerPinCacheSeconds: 1, workerIdleExitSeconds: 3 } });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  async function slotItem(slot: number) {
    return (await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: `slot#${slot}` }, ConsistentRead: true }))).Item;
  }

  async function videoItem(videoId: string) {
    return (await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: `video#${videoId}` }, ConsistentRead: true }))).Item;
  }

  /** Waits until every worker started so far has exited, and returns them. */
  function allExited(what: string): Promise<WorkerInfo[]> {
    return waitFor(what, () => {
      const all = stack.launcher.workers();
      return all.length > 0 && all.every((w) => !w.alive) ? all : undefined;
    }, 60_000);
  }

  it('a worker exits 0 after its videos are released and nothing comes; a new upload launches one that continues the video', async () => {
    // Prepare: one video processed by the first worker
    await uploadFrames(stack, 'scale', [0, 1, 2, 3, 4]);
    const first = await waitForFrames(stack, 'scale', 5);
    const firstWorker = stack.launcher.workers().find((w) => w.workerId === first[0]!.worker)!;

    // Act 1: nothing more comes
    const idleFleet = await allExited('the idle fleet to drain to zero');

    // Assess 1: it exited on its own, cleanly, with its slot released and the video checkpointed
    const exited = idleFleet.find((w) => w.pid === firstWorker.pid)!;
    expect(exited.exitCode).toBe(0);
    expect(exited.exitSignal).toBeNull();
    expect(stack.workerLines.some((l) => l.startsWith(`[slot-${exited.slot} ${exited.pid}]`) && l.includes('idle: released slot and exiting'))).toBe(true);
    const slot = await slotItem(exited.slot);
    expect(slot?.owner).toBeUndefined();
    expect(slot?.releasedAtMs).toBeGreaterThan(0);
    expect((await videoItem('scale'))?.state).toBe('released');

    // Act 2: more frames of the same video, and a new video
    await uploadFrames(stack, 'scale', [5, 6, 7]);
    await uploadFrames(stack, 'scale-new', [0, 1, 2]);
    const resumed = await waitForFrames(stack, 'scale', 8);
    const fresh = await waitForFrames(stack, 'scale-new', 3);

    // Assess 2: processed by workers launched after the idle exit; the video's state went
    // on from its checkpoint (StatsProcessor trackId = frames the video has seen)
    const lastExitMs = Math.max(...idleFleet.map((w) => w.exitedAtMs ?? 0));
    const later = stack.launcher.workers().filter((w) => w.startedAtMs >= lastExitMs);
    expect(later.length).toBeGreaterThanOrEqual(1);
    const laterIds = new Set(later.map((w) => w.workerId));
    const byFrame = [...resumed].sort((a, b) => a.frame - b.frame);
    expect(byFrame.map((r) => r.status)).toEqual(Array(8).fill('ok'));
    expect(byFrame.map((r) => r.detections[0]!.trackId)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(byFrame.slice(5).every((r) => laterIds.has(r.worker))).toBe(true);
    expect(byFrame[5]!.token).toBeGreaterThan(byFrame[4]!.token);
    expect([...fresh].sort((a, b) => a.frame - b.frame).map((r) => r.detections[0]!.trackId)).toEqual([1, 2, 3]);
    expect(fresh.every((r) => laterIds.has(r.worker))).toBe(true);

    // Act 3 & Assess 3: and it drains to zero again, every exit clean
    const again = await allExited('the fleet to drain to zero again');
    expect(again.filter((w) => laterIds.has(w.workerId)).map((w) => w.exitCode)).toEqual(later.map(() => 0));
    expect((await results(stack, 'scale')).length).toBe(8);
  });
});
