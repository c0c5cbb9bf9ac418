/**
 * The hot spare (decision 75) with real processes on the local stack: the task is the
 * supervisor (gpu-worker/supervisor-main.ts) forking the lab's worker twice; the test kills
 * the primary worker process with SIGKILL, as an out-of-memory kill or a native crash would.
 * The spare, already started, takes the slot: no new task, nothing lost or doubled, and the
 * video's state (the stats processor's counter) carries on.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { assertNoOverlappingTenure, results, startTestStack, summary, uploadFrames, waitFor, type TestStack } from '../../harness/pipeline.ts';

let stack: TestStack | undefined;

afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/** A process's environment variable (Linux /proc). */
function envOf(pid: number, name: string): string | undefined {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((kv) => kv.startsWith(`${name}=`))?.slice(name.length + 1);
}

/** The child of `pid` started as `role` (its SUPERVISED_ROLE; a promoted spare keeps its own). */
function childWithRole(pid: number, role: 'primary' | 'spare'): number | undefined {
  const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  return children.find((c) => {
    try {
      return readFileSync(`/proc/${c}/environ`, 'utf8').split('\0').includes(`SUPERVISED_ROLE=${role}`);
    } catch {
      return false;
    }
  });
}

describe('hot spare', () => {
  it('kill -9 of the worker process: the spare beside it takes the slot at once; no new task, nothing lost or doubled, state continues', async () => {
    // Prepare: slow frames so the kill lands mid-video; the supervisor as the task's entry.
    stack = await startTestStack({
      workerEntry: 'gpu-worker/supervisor-main.ts',
      tunables: { slotCount: 1, hotSpare: true },
      workerEnv: { WORKER_ENTRY: 'lab/worker-main.ts', STATS_PROCESSOR_DELAY_MS: '120' },
    });
    const frames = Array.from({ length: 40 }, (_, f) => f);
    await uploadFrames(stack, 'hs', frames, { end: 39 });
    await waitFor('some progress', async () => (await results(stack!, 'hs')).length >= 8, 60_000);
    const task = stack.launcher.workers().find((w) => w.alive)!;
    const primary = await waitFor('the primary worker process', async () => childWithRole(task.pid, 'primary'));
    const spare = await waitFor('the spare worker process', async () => childWithRole(task.pid, 'spare'));
    const victimId = (await results(stack, 'hs')).at(-1)!.worker;
    expect(envOf(primary, 'WORKER_ID')).toBe(victimId);
    const spareId = envOf(spare, 'WORKER_ID')!;

    // Act
    const killedAtMs = Date.now();
    process.kill(primary, 'SIGKILL');
    await waitFor('hs complete', async () => (await summary(stack!, 'hs'))?.status === 'complete', 90_000);

    // Assess: every frame once, in order, the counter continuing across the takeover.
    const items = (await results(stack, 'hs')).sort((a, b) => a.frame - b.frame);
    expect(items.map((r) => r.frame)).toEqual(frames);
    expect(items.every((r) => r.status === 'ok')).toBe(true);
    expect(items.map((r) => r.detections[0]!.trackId)).toEqual(frames.map((f) => f + 1));
    const tenure = assertNoOverlappingTenure(items);
    expect(tenure.workers[0]).toBe(victimId);
    const successor = items.find((r) => r.worker !== victimId)!;
    // The spare that was there took over (worker ids `<task's id>/<n>`), and it still runs.
    expect(successor.worker).toBe(spareId);
    expect(spareId.split('/')[0]).toBe(victimId.split('/')[0]);
    expect(() => process.kill(spare, 0)).not.toThrow();
    // Issue 42's target for this case is 3 s; no visibility window and no task start is waited for.
    expect((successor.committedAtMs - killedAtMs) / 1000).toBeLessThan(3);
    // One task throughout: the janitor launched nothing.
    expect(stack.launcher.workers()).toHaveLength(1);
  }, 180_000);
});
