/**
 * The crash-loop breaker (decisions 28, 29, 41) with real worker processes on the local
 * stack: a frame whose processing kills the process (WORKER_CRASH_ON_KEY: SIGKILL when the
 * model is handed that frame, as an out-of-memory or a native crash would) ends as one
 * `failed` record with reason `crashed-worker`, the video goes on past it and completes,
 * and the slot's other videos commit again from the first successor on.
 *
 * The poison video is adopted first, so it is the first to run isolated:
 * - with the crash probe (the default, decision 41), the first successor tries the poison
 *   frame in a child process, which dies on it twice, parks it, and commits every other
 *   video: one crash in all, the owner's;
 * - without it (`crashProbeDeaths: 0`, decision 29 alone), the first successor dies on the
 *   frame before any other video's turn, the second runs the others first, and the frame
 *   is parked after at most 3 crashes.
 *
 * The figures (crashes before the frame was parked, seconds from the first crash until the
 * other videos committed again) are printed, not asserted against a time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { frameKey } from '../../core/ingest/keys.ts';
import { results, startTestStack, summary, type TestStack } from '../../harness/pipeline.ts';
import { CRASH_LOOP, runCrashLoop, type CrashLoopFigures } from '../../harness/crash-loop.ts';

let stack: TestStack | undefined;

afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

const { FRAMES, POISON, OTHERS, VIDEOS } = CRASH_LOOP;
const poisonKey = frameKey(POISON.video, POISON.frame);

/** What both modes guarantee: one crashed-worker record for the poison frame, every other frame ok, every video complete. */
async function expectEveryFrameRecorded(s: TestStack): Promise<void> {
  const poison = (await results(s, POISON.video)).sort((a, b) => a.frame - b.frame);
  expect(poison.map((r) => r.frame)).toEqual(Array.from({ length: FRAMES }, (_, f) => f));
  const bad = poison.filter((r) => r.status !== 'ok');
  expect(bad.map((r) => [r.frame, r.status, r.reason])).toEqual([[POISON.frame, 'failed', 'crashed-worker']]);
  expect(bad[0]!.key).toBe(poisonKey);
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
  // A line names the frame and its key
  expect(s.workerLines.some((l) => l.includes('frame parked, it killed the worker') && l.includes(poisonKey))).toBe(true);
}

/** The first successor of the crashed owner: its claim was a takeover, and the order it ran the videos alone in. */
function firstSuccessor(s: TestStack): { claim: string | undefined; isolatedOrder: (string | undefined)[] } {
  const launched = s.launcher.workers().sort((a, b) => a.startedAtMs - b.startedAtMs);
  const firstCrashed = launched.findIndex((w) => !w.alive && w.exitSignal === 'SIGKILL');
  const lines = s.workerLines.filter((l) => l.includes(launched[firstCrashed + 1]!.workerId));
  return {
    claim: lines.find((l) => l.includes('slot claimed')),
    isolatedOrder: lines.filter((l) => l.includes('running it isolated')).map((l) => VIDEOS.find((v) => l.includes(`"videoId":"${v}"`))),
  };
}

async function run(crashProbeDeaths?: number): Promise<CrashLoopFigures> {
  stack = await startTestStack(CRASH_LOOP.stackOptions(crashProbeDeaths));
  const figures = await runCrashLoop(stack);
  console.log(`crash-loop figures (crashProbeDeaths ${crashProbeDeaths ?? 'default'}): ${JSON.stringify(figures)}`);
  await expectEveryFrameRecorded(stack);
  return figures;
}

describe('crash-loop breaker', () => {
  it('with the crash probe: the first successor parks the poison frame after two deaths of its probe child, with no crash of its own, and every other video commits from it on', async () => {
    const figures = await run();
    // Only the owner crashed; the first successor parked the frame and committed every other video
    expect(figures.crashes).toBe(1);
    expect(figures.parkedBySuccessor).toBe(1);
    expect(figures.othersResumedBySuccessor).toEqual(Object.fromEntries(OTHERS.map((v) => [v, 1])));
    expect(figures.probeDeaths).toBe(2);
    // ... although the poison video was the first it ran alone
    const first = firstSuccessor(stack!);
    expect(first.claim).toContain('"takenOver":true');
    expect(first.isolatedOrder[0]).toBe(POISON.video);
    expect([...first.isolatedOrder].sort()).toEqual([...VIDEOS].sort());
  }, 300_000);

  it('without the crash probe: at most 3 crashes, and the others commit from the second successor on when the poison video runs alone first', async () => {
    const figures = await run(0);
    expect(figures.crashes).toBeGreaterThanOrEqual(2);
    expect(figures.crashes).toBeLessThanOrEqual(3);
    expect(figures.probeDeaths).toBe(0);
    const first = firstSuccessor(stack!);
    expect(first.claim).toContain('"takenOver":true');
    expect(first.isolatedOrder[0]).toBe(POISON.video);
    // The first successor died on the poison frame before any other video's turn (nothing
    // tells it which video killed its predecessor); the second runs the poison video, now
    // marked with a death, last.
    expect(figures.othersResumedBySuccessor).toEqual(Object.fromEntries(OTHERS.map((v) => [v, 2])));
  }, 300_000);
});
