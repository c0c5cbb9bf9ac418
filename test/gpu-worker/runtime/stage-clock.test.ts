/** Per-stage accounting (gpu-worker/runtime/stage-clock.ts) on a manual clock. */
import { describe, expect, it } from 'vitest';
import { boundingStage, StageClock } from '../../../gpu-worker/runtime/stage-clock.ts';

function manual() {
  let t = 0;
  return { now: () => t, at: (ms: number) => void (t = ms) };
}

describe('StageClock', () => {
  it('busy time is the union of overlapping operations; op time their sum', () => {
    const c = manual();
    const clock = new StageClock(c.now);
    const a = clock.begin('fetch');
    c.at(10);
    const b = clock.begin('fetch');
    c.at(30);
    a(1);
    c.at(40);
    b(2);
    c.at(100);
    const r = clock.report();
    expect(r.windowMs).toBe(100);
    expect(r.stages.fetch).toMatchObject({ ops: 2, items: 3, busyMs: 40, opMs: 60, busyShare: 0.4, concurrency: 1.5 });
  });

  it('an operation still running counts up to now; reset starts a new window', () => {
    const c = manual();
    const clock = new StageClock(c.now);
    const end = clock.begin('commit');
    c.at(50);
    expect(clock.report().stages.commit.busyMs).toBe(50);
    clock.reset();
    c.at(80);
    end(4);
    expect(clock.report().stages.commit).toMatchObject({ ops: 1, items: 4, busyMs: 30 });
  });

  it('spans added by the caller and queueing', () => {
    const c = manual();
    const clock = new StageClock(c.now);
    clock.add('track', 5, 8);
    clock.queued('infer', 12);
    c.at(10);
    expect(clock.report().stages.track).toMatchObject({ busyMs: 5, items: 8 });
    expect(clock.report().stages.infer.queuedMs).toBe(12);
  });

  it.each([
    ['the GPU busy 95%: infer bounds', { infer: 95, commit: 60 }, 'infer'],
    ['the GPU busy 40%, commit busy 70%: commit bounds', { infer: 40, commit: 70, fetch: 50 }, 'commit'],
    ['the GPU busy 20%, fetch busy 80%: fetch bounds', { infer: 20, commit: 30, fetch: 80 }, 'fetch'],
  ])('boundingStage: %s', (_name, shares: Record<string, number>, expected) => {
    const c = manual();
    const clock = new StageClock(c.now);
    for (const [stage, share] of Object.entries(shares)) clock.add(stage as 'infer', share);
    c.at(100);
    expect(boundingStage(clock.report()).stage).toBe(expected);
  });
});
