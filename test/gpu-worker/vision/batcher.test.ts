import { describe, expect, it } from 'vitest';
import { MicroBatcher } from '../../../gpu-worker/vision/batcher.ts';
import { deferred } from '../../../harness/wait.ts';

/** A batcher whose run records each batch as "stream:item" strings and echoes the inputs. */
function recordingBatcher(batchSize: number, maxBatchWaitMs: number, gate?: () => Promise<void>) {
  const batches: string[][] = [];
  const batcher = new MicroBatcher<string, string>({
    batchSize,
    maxBatchWaitMs,
    run: async (inputs, streams) => {
      batches.push(inputs.map((x, i) => `${streams[i]}:${x}`));
      if (gate) await gate();
      return inputs.map((x) => `done-${x}`);
    },
  });
  return { batcher, batches };
}

describe('MicroBatcher', () => {
  it('pushes a full batch with frames of several videos in one call', async () => {
    const { batcher, batches } = recordingBatcher(4, 60_000);
    const results = await Promise.all([
      batcher.submit('a', Promise.resolve('1')),
      batcher.submit('b', Promise.resolve('1')),
      batcher.submit('a', Promise.resolve('2')),
      batcher.submit('c', Promise.resolve('1')),
    ]);
    expect(results).toEqual(['done-1', 'done-1', 'done-2', 'done-1']);
    expect(batches).toHaveLength(1);
    expect([...batches[0]].sort()).toEqual(['a:1', 'a:2', 'b:1', 'c:1']);
  });

  it('pushes a partial batch once the wait passes', async () => {
    const { batcher, batches } = recordingBatcher(8, 5);
    const results = await Promise.all([batcher.submit('a', Promise.resolve('1')), batcher.submit('b', Promise.resolve('1'))]);
    expect(results).toEqual(['done-1', 'done-1']);
    expect(batches).toEqual([['a:1', 'b:1']]);
  });

  it('keeps each video in submission order even when a later frame is ready first', async () => {
    // Prepare: frame 1 of video a decodes after frame 2.
    const { batcher, batches } = recordingBatcher(1, 0);
    const first = deferred<string>();
    const p1 = batcher.submit('a', first.promise);
    const p2 = batcher.submit('a', Promise.resolve('2'));
    await new Promise((r) => setTimeout(r, 10));
    // Assess: nothing ran while the head was not ready.
    expect(batches).toEqual([]);
    // Act
    first.resolve('1');
    await Promise.all([p1, p2]);
    expect(batches).toEqual([['a:1'], ['a:2']]);
  });

  it('serves videos round-robin so a busy video does not starve the others', async () => {
    const { batcher, batches } = recordingBatcher(4, 0);
    const all: Promise<string>[] = [];
    for (let i = 0; i < 12; i++) all.push(batcher.submit('busy', Promise.resolve(String(i))));
    all.push(batcher.submit('quiet', Promise.resolve('q1')));
    all.push(batcher.submit('quiet', Promise.resolve('q2')));
    await Promise.all(all);
    // The first batch takes what was ready then; quiet's frames are in the earliest batches after they arrive.
    const quietBatches = batches.map((b, i) => (b.some((x) => x.startsWith('quiet')) ? i : -1)).filter((i) => i >= 0);
    expect(quietBatches[0]).toBeLessThanOrEqual(1);
    expect(batches.flat().filter((x) => x.startsWith('busy'))).toEqual(Array.from({ length: 12 }, (_, i) => `busy:${i}`));
  });

  it('alternates videos within a batch', async () => {
    // Prepare: six frames (four of a, two of b) become ready together.
    const { batcher, batches } = recordingBatcher(4, 20);
    const ready = deferred<void>();
    const gated = (v: string) => ready.promise.then(() => v);
    const all = ['1', '2', '3', '4'].map((v) => batcher.submit('a', gated(v)));
    all.push(batcher.submit('b', gated('1')), batcher.submit('b', gated('2')));
    // Act
    ready.resolve();
    await Promise.all(all);
    // Assess: one frame per video per round, each video in order; the rest follow.
    expect(batches).toEqual([['a:1', 'b:1', 'a:2', 'b:2'], ['a:3', 'a:4']]);
  });

  it('runs one batch at a time while the next batch keeps preparing, then runs it full at once', async () => {
    // Prepare: the first inference blocks on a gate.
    const gate = deferred<void>();
    let calls = 0;
    const { batcher, batches } = recordingBatcher(2, 60_000, () => (++calls === 1 ? gate.promise : Promise.resolve()));
    const first = [batcher.submit('a', Promise.resolve('1')), batcher.submit('b', Promise.resolve('1'))];
    await new Promise((r) => setTimeout(r, 5));
    // Act: the next frames finish preparing while batch 1 is still running.
    const second = [batcher.submit('a', Promise.resolve('2')), batcher.submit('b', Promise.resolve('2'))];
    await new Promise((r) => setTimeout(r, 5));
    expect(batches).toHaveLength(1);
    gate.resolve();
    await Promise.all([...first, ...second]);
    // Assess: batch 2 ran right after batch 1 (the wait is 60 s, so it did not wait for a timer).
    expect(batches).toHaveLength(2);
    expect(batches[0]).toEqual(['a:1', 'b:1']);
    expect([...batches[1]].sort()).toEqual(['a:2', 'b:2']);
  });

  it('fails only the item whose input failed', async () => {
    const { batcher, batches } = recordingBatcher(2, 0);
    const bad = batcher.submit('a', Promise.reject(new Error('corrupt')));
    const good = batcher.submit('a', Promise.resolve('2'));
    await expect(bad).rejects.toThrow('corrupt');
    await expect(good).resolves.toBe('done-2');
    expect(batches).toEqual([['a:2']]);
  });

  it('rejects every item of a batch whose run throws, and keeps going', async () => {
    let n = 0;
    const batcher = new MicroBatcher<string, string>({
      batchSize: 1,
      maxBatchWaitMs: 0,
      run: async (inputs) => {
        if (n++ === 0) throw new Error('boom');
        return inputs;
      },
    });
    await expect(batcher.submit('a', Promise.resolve('1'))).rejects.toThrow('boom');
    await expect(batcher.submit('a', Promise.resolve('2'))).resolves.toBe('2');
  });

  describe('background streams (detect ahead, decision 42)', () => {
    it('fill only the places the foreground leaves, whichever was submitted first', async () => {
      // Prepare: batch 1 holds the GPU; meanwhile 3 background and 3 foreground items become ready
      const gate = deferred<void>();
      let calls = 0;
      const { batcher, batches } = recordingBatcher(4, 30, () => (++calls === 1 ? gate.promise : Promise.resolve()));
      const first = ['1', '2', '3', '4'].map((x) => batcher.submit('z', Promise.resolve(x)));
      await new Promise((r) => setTimeout(r, 5));
      const ahead = ['a1', 'a2', 'a3'].map((x) => batcher.submit('#ahead', Promise.resolve(x), 'background'));
      const live = ['1', '2', '3'].map((x) => batcher.submit('v', Promise.resolve(x)));
      await new Promise((r) => setTimeout(r, 5));
      // Act
      gate.resolve();
      await Promise.all([...first, ...ahead, ...live]);
      // Assess: the next batch takes every foreground item and fills with the oldest background one
      expect(batches.slice(1)).toEqual([['v:1', 'v:2', 'v:3', '#ahead:a1'], ['#ahead:a2', '#ahead:a3']]);
    });

    it('run on their own when nothing else is ready (the model would idle otherwise)', async () => {
      const { batcher, batches } = recordingBatcher(4, 0);
      await expect(batcher.submit('#ahead', Promise.resolve('x'), 'background')).resolves.toBe('done-x');
      expect(batches).toEqual([['#ahead:x']]);
    });

    it('never push a foreground item out of a full batch', async () => {
      const gate = deferred<void>();
      let calls = 0;
      const { batcher, batches } = recordingBatcher(2, 30, () => (++calls === 1 ? gate.promise : Promise.resolve()));
      const first = [batcher.submit('z', Promise.resolve('0')), batcher.submit('z', Promise.resolve('00'))];
      await new Promise((r) => setTimeout(r, 5));
      const ahead = ['a1', 'a2'].map((x) => batcher.submit('#ahead', Promise.resolve(x), 'background'));
      const live = ['1', '2', '3'].map((x) => batcher.submit('v', Promise.resolve(x)));
      await new Promise((r) => setTimeout(r, 5));
      gate.resolve();
      await Promise.all([...first, ...ahead, ...live]);
      expect(batches.slice(1)).toEqual([['v:1', 'v:2'], ['v:3', '#ahead:a1'], ['#ahead:a2']]);
    });
  });
});
