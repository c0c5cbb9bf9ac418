/**
 * The crash-loop breaker (decision 28) with real worker processes on the local stack: a
 * frame whose processing kills the process (WORKER_CRASH_ON_KEY: SIGKILL when the model is
 * handed that frame, as an out-of-memory or a native crash would) ends as one `failed`
 * record with reason `crashed-worker` after at most 3 crashes, the video goes on past it
 * and completes, and the slot's other videos commit again from the first successor on
 * (decision 29: it took the slot from an owner that never released it, so it runs the
 * videos it took alone, least suspect first).
 *
 * The figures (crashes before the frame was parked, seconds from the first crash until the
 * other videos committed again) are printed, not asserted against a time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { frameKey } from '../../core/keys.ts';
import { results, startTestStack, summary, type TestStack } from '../support/pipeline.ts';
import { CRASH_LOOP, runCrashLoop } from '../support/crash-loop.ts';

let stack: TestStack | undefined;

afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

const { FRAMES, POISON, OTHERS, VIDEOS } = CRASH_LOOP;

describe('crash-loop breaker', () => {
  it('a frame that kills the worker ends as one crashed-worker record after at most 3 crashes; every other frame is ok and the others resume', async () => {
    // Prepare: one slot; every worker dies when handed the poison frame
    const poisonKey = frameKey(POISON.video, POISON.frame);
    stack = await startTestStack(CRASH_LOOP.stackOptions);
    const s = stack;
    // Act
    const figures = await runCrashLoop(s);
    console.log(`crash-loop figures: ${JSON.stringify(figures)}`);
    // Assess: the poison frame is one failed record, crashed-worker
    const poison = (await results(s, POISON.video)).sort((a, b) => a.frame - b.frame);
    expect(poison.map((r) => r.frame)).toEqual(Array.from({ length: FRAMES }, (_, f) => f));
    const bad = poison.filter((r) => r.status !== 'ok');
    expect(bad.map((r) => [r.frame, r.status, r.reason])).toEqual([[POISON.frame, 'failed', 'crashed-worker']]);
    expect(bad[0]!.key).toBe(poisonKey);
    // ... after at least one and at most 3 crashes
    expect(figures.crashes).toBeGreaterThanOrEqual(1);
    expect(figures.crashes).toBeLessThanOrEqual(3);
    // Every other frame of every video: exactly one ok record, and every video completed
    for (const v of OTHERS) {
      const items = (await results(s, v)).sort((a, b) => a.frame - b.frame);
      expect(items.map((r) => r.frame)).toEqual(Array.from({ length: FRAMES }, (_, f) => f));
      expect(items.every((r) => r.status === 'ok')).toBe(true);
    }
    for (const v of VIDEOS) {
      const sum = await summary(s, v);
      expect(sum?.status).toBe('complete');
      expect(sum!.framesOk + sum!.framesFailed).toBe(FRAMES);
    }
    // The poison video went on after the parked frame, under the worker that parked it or later
    expect(poison.filter((r) => r.frame > POISON.frame).every((r) => r.committedAtMs >= bad[0]!.committedAtMs)).toBe(true);
    // The first successor claimed the slot as taken over from a dead owner and ran every
    // video it took alone, one after the other (decision 29)
    expect(Number.isFinite(figures.othersResumedSeconds)).toBe(true);
    const launched = s.launcher.workers().sort((a, b) => a.startedAtMs - b.startedAtMs);
    const firstCrashed = launched.findIndex((w) => !w.alive && w.exitSignal === 'SIGKILL');
    const firstSuccessor = launched[firstCrashed + 1]!;
    const linesOfFirst = s.workerLines.filter((l) => l.includes(firstSuccessor.workerId));
    expect(linesOfFirst.find((l) => l.includes('slot claimed'))).toContain('"takenOver":true');
    const isolatedOrder = linesOfFirst.filter((l) => l.includes('running it isolated')).map((l) => VIDEOS.find((v) => l.includes(`"videoId":"${v}"`)));
    expect([...isolatedOrder].sort()).toEqual([...VIDEOS].sort());
    // The other videos committed again from the first successor on: every one whose turn
    // came before the poison video's there (nothing tells the first successor which video
    // killed its predecessor), and the rest from the second on, where the poison video,
    // marked with a death, runs last. Here the poison video is adopted last.
    const before = isolatedOrder.slice(0, isolatedOrder.indexOf(POISON.video));
    expect(figures.othersResumedBySuccessor).toEqual(Object.fromEntries(OTHERS.map((v) => [v, before.includes(v) ? 1 : 2])));
    expect(before).toEqual(OTHERS);
    // A line names the frame and its key
    expect(s.workerLines.some((l) => l.includes('frame parked, it killed the worker') && l.includes(poisonKey))).toBe(true);
  }, 300_000);
});
