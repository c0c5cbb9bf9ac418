/**
 * Scale to zero and back: a worker that owns no video, finds none pinned to its slot and
 * receives nothing for `workerIdleExitSeconds` releases its slot and exits 0; frames that
 * arrive later launch a task again, and the videos' state continues from their checkpoints.
 *
 * The whole cycle on the local stack (router, janitor, worker processes); the worker's rule
 * alone, on the twins, is idle-exit.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { results, startTestStack, uploadFrames, waitFor, waitForFrames, type TestStack } from '../../../harness/pipeline.ts';
import type { WorkerInfo } from '../../../local/local-task-launcher.ts';

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
