import { describe, expect, it } from 'vitest';
import { DetectedAhead } from '../../../gpu-worker/vision/detected-ahead.ts';
import { deferred } from '../../../harness/wait.ts';

/** A run function whose calls wait until released, recorded by image. */
function gatedRuns() {
  const calls: { image: Uint8Array; gate: ReturnType<typeof deferred<string>> }[] = [];
  const run = (image: Uint8Array) => {
    const gate = deferred<string>();
    calls.push({ image, gate });
    return gate.promise;
  };
  return { calls, run };
}

const img = (n: number) => Uint8Array.of(n);
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('frames detected ahead (decision 42)', () => {
  it('hands the detection started ahead to the frame with those very bytes, once', async () => {
    const ahead = new DetectedAhead<string>(8, 2);
    const { calls, run } = gatedRuns();
    const a = img(1);
    ahead.offer(a, run);
    ahead.offer(a, run);
    calls[0]!.gate.resolve('dets-1');
    const first = ahead.take(a);
    expect(await first).toBe('dets-1');
    expect(ahead.take(a)).toBeUndefined();
    // Equal bytes in another array are another fetch: not the frame that was detected.
    ahead.offer(img(9), run);
    expect(ahead.take(img(9))).toBeUndefined();
    expect(calls.map((c) => c.image[0])).toEqual([1, 9]);
    expect({ started: ahead.started, used: ahead.used }).toEqual({ started: 2, used: 1 });
  });

  it('runs at most maxRunning at once; the rest wait in order and start as places free', async () => {
    const ahead = new DetectedAhead<string>(8, 2);
    const { calls, run } = gatedRuns();
    const images = [1, 2, 3, 4].map(img);
    for (const i of images) ahead.offer(i, run);
    expect(calls.map((c) => c.image[0])).toEqual([1, 2]);
    calls[1]!.gate.resolve('2');
    await tick();
    expect(calls.map((c) => c.image[0])).toEqual([1, 2, 3]);
    calls[0]!.gate.reject(new Error('corrupt'));
    await tick();
    expect(calls.map((c) => c.image[0])).toEqual([1, 2, 3, 4]);
    // A failure is kept for the frame's round to see, not thrown here.
    await expect(ahead.take(images[0]!)!).rejects.toThrow('corrupt');
  });

  it('gives a frame still waiting its turn back to the round (undefined), and never runs it', async () => {
    const ahead = new DetectedAhead<string>(8, 1);
    const { calls, run } = gatedRuns();
    const [a, b] = [img(1), img(2)];
    ahead.offer(a, run);
    ahead.offer(b, run);
    expect(ahead.take(b)).toBeUndefined();
    calls[0]!.gate.resolve('a');
    await tick();
    expect(calls.map((c) => c.image[0])).toEqual([1]);
    expect({ takenQueued: ahead.takenQueued, size: ahead.size }).toEqual({ takenQueued: 1, size: 1 });
  });

  it('holds at most maxFrames: the oldest queued goes first, then the oldest finished; running work is never dropped', async () => {
    const ahead = new DetectedAhead<string>(3, 1);
    const { calls, run } = gatedRuns();
    const images = [1, 2, 3, 4, 5, 6].map(img);
    // 1 runs; 2 and 3 wait. 4 pushes out 2 (oldest queued), 5 pushes out 3.
    for (const i of images.slice(0, 5)) ahead.offer(i, run);
    expect([1, 2, 3, 4, 5].map((n) => ahead.has(images[n - 1]!))).toEqual([true, false, false, true, true]);
    calls[0]!.gate.resolve('1');
    await tick();
    // 4 runs now, 5 waits, 1 is finished: 6 pushes out 5 (queued) before 1 (finished).
    ahead.offer(images[5]!, run);
    expect([1, 4, 5, 6].map((n) => ahead.has(images[n - 1]!))).toEqual([true, true, false, true]);
    ahead.offer(img(7), run);
    // 7 pushes out 6, the only one queued; 1 (finished) stays and is still used.
    expect(ahead.has(images[5]!)).toBe(false);
    expect(calls.map((c) => c.image[0])).toEqual([1, 4]);
    expect(ahead.dropped).toBe(4);
    await expect(ahead.take(images[0]!)!).resolves.toBe('1');
  });

  it('ignores a hint when every place is running', () => {
    const ahead = new DetectedAhead<string>(2, 2);
    const { calls, run } = gatedRuns();
    for (const n of [1, 2, 3]) ahead.offer(img(n), run);
    expect(calls.map((c) => c.image[0])).toEqual([1, 2]);
    expect({ size: ahead.size, refused: ahead.refused, dropped: ahead.dropped }).toEqual({ size: 2, refused: 1, dropped: 0 });
  });

  it('does nothing at maxFrames 0 (off), and clear() forgets everything held or queued', async () => {
    const off = new DetectedAhead<string>(0, 2);
    const { calls, run } = gatedRuns();
    off.offer(img(1), run);
    expect(calls).toEqual([]);
    const ahead = new DetectedAhead<string>(4, 1);
    const [a, b] = [img(1), img(2)];
    ahead.offer(a, run);
    ahead.offer(b, run);
    ahead.clear();
    calls[0]!.gate.resolve('a');
    await tick();
    expect(calls).toHaveLength(1);
    expect(ahead.take(a)).toBeUndefined();
    expect(ahead.size).toBe(0);
  });

  it('keeps a run that throws synchronously as a rejected detection', async () => {
    const ahead = new DetectedAhead<string>(4, 1);
    const a = img(1);
    ahead.offer(a, () => {
      throw new Error('no model');
    });
    await expect(ahead.take(a)!).rejects.toThrow('no model');
  });
});
