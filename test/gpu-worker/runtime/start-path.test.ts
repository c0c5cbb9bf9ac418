/**
 * The worker's start path in its start log (issue 42, item 4): how long the processor's
 * start took (CUDA context and model load on the GPU) and how long until the first
 * confirmed lease write (the claim), so that a failover's time on AWS can be split into
 * what ECS did and what the worker did. The real worker on the twins, with a fake clock.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkerHarness } from '../../../harness/worker-harness.ts';
import type { FrameProcessor } from '../../../core/ports.ts';

describe('worker start path (worker harness)', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { workerIdleExitSeconds: 1, videoIdleReleaseSeconds: 2, routerPinCacheSeconds: 1 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('logs the processor start (model load) and the first heartbeat, measured from the run start', async () => {
    // Prepare: a processor whose start (the model load) takes 3 s of the fake clock.
    const slowStart = (inner: FrameProcessor): FrameProcessor =>
      Object.assign(Object.create(inner) as FrameProcessor, {
        start: async () => {
          await new Promise((resolve) => setTimeout(resolve, 3_000));
          await inner.start();
        },
      });
    const w = h.createWorker(0, { processor: slowStart });

    // Act
    await w.start().done;

    // Assess
    const [ready] = w.logsMatching(/^processor ready$/);
    const [claimed] = w.logsMatching(/^slot claimed$/);
    expect(ready?.fields.processorStartMs).toBe(3_000);
    const path = claimed?.fields.startPath as { processorStartMs: number; firstHeartbeatMs: number; processUptimeMs: number };
    expect(path.processorStartMs).toBe(3_000);
    // The claim comes after the model: the first heartbeat waits for it.
    expect(path.firstHeartbeatMs).toBeGreaterThanOrEqual(3_000);
    expect(path.firstHeartbeatMs).toBeLessThan(4_000);
    expect(path.processUptimeMs).toBeGreaterThan(0);
  });
});
