import { describe, expect, it } from 'vitest';
import { PreparedAhead } from '../../../gpu-worker/vision/prepared-ahead.ts';
import type { PreparedFrame } from '../../../gpu-worker/vision/preprocess.ts';

function frameOf(image: Uint8Array): PreparedFrame {
  return {
    chw: Float32Array.from(image),
    geometry: { sourceWidth: 1, sourceHeight: 1, scale: 1, padLeft: 0, padTop: 0, resizedWidth: 1, resizedHeight: 1 },
  };
}

/** A prepare function that counts its calls. */
function counting(): { calls: Uint8Array[]; prepare: (image: Uint8Array) => Promise<PreparedFrame> } {
  const calls: Uint8Array[] = [];
  return { calls, prepare: async (image) => (calls.push(image), frameOf(image)) };
}

describe('frames prepared ahead', () => {
  it('hands the decode started ahead to the frame with those very bytes, once', async () => {
    // Prepare
    const ahead = new PreparedAhead(4);
    const { calls, prepare } = counting();
    const bytes = Uint8Array.of(7, 8);

    // Act
    ahead.start(bytes, prepare);
    ahead.start(bytes, prepare);
    const first = ahead.take(bytes);
    const second = ahead.take(bytes);

    // Assess
    expect(calls).toEqual([bytes]);
    expect((await first!).chw).toEqual(Float32Array.of(7, 8));
    expect(second).toBeUndefined();
    expect({ started: ahead.started, used: ahead.used, size: ahead.size }).toEqual({ started: 1, used: 1, size: 0 });
  });

  it('does not match equal bytes fetched afresh: only the same object is the same frame', () => {
    // Prepare
    const ahead = new PreparedAhead(4);
    ahead.start(Uint8Array.of(1, 2, 3), counting().prepare);

    // Act
    const taken = ahead.take(Uint8Array.of(1, 2, 3));

    // Assess
    expect(taken).toBeUndefined();
    expect(ahead.used).toBe(0);
  });

  it('holds at most its bound, dropping the oldest first', async () => {
    // Prepare
    const ahead = new PreparedAhead(2);
    const [a, b, c] = [Uint8Array.of(1), Uint8Array.of(2), Uint8Array.of(3)];
    const { prepare } = counting();

    // Act: each decode ends before the next starts.
    for (const image of [a, b, c]) {
      ahead.start(image, prepare);
      await new Promise((r) => setImmediate(r));
    }

    // Assess
    expect(ahead.size).toBe(2);
    expect(ahead.take(a)).toBeUndefined();
    expect(ahead.take(b)).toBeDefined();
    expect(ahead.take(c)).toBeDefined();
  });

  it("keeps a failed decode for the frame's own processing to report, and never raises it unasked", async () => {
    // Prepare: an unhandled rejection would fail the test run.
    const ahead = new PreparedAhead(4);
    const corrupt = Uint8Array.of(0);
    const dropped = Uint8Array.of(1);
    const failing = async (): Promise<PreparedFrame> => {
      throw new Error('corrupt');
    };

    // Act
    ahead.start(corrupt, failing);
    ahead.start(dropped, failing);
    ahead.clear();
    ahead.start(corrupt, failing);
    await new Promise((r) => setTimeout(r, 10));

    // Assess
    await expect(ahead.take(corrupt)!).rejects.toThrow('corrupt');
    expect(ahead.take(dropped)).toBeUndefined();
  });

  it('runs at most its bound of decodes at once, dropped ones included, and takes hints again once they end', async () => {
    // Prepare: decodes that end only when told to.
    const ahead = new PreparedAhead(2);
    const finish: (() => void)[] = [];
    const calls: Uint8Array[] = [];
    const slow = (image: Uint8Array) => {
      calls.push(image);
      return new Promise<PreparedFrame>((resolve) => finish.push(() => resolve(frameOf(image))));
    };
    const [a, b, c, d] = [Uint8Array.of(1), Uint8Array.of(2), Uint8Array.of(3), Uint8Array.of(4)];

    // Act
    ahead.start(a, slow);
    ahead.start(b, slow);
    ahead.start(c, slow);
    for (const f of finish.splice(0)) f();
    await new Promise((r) => setImmediate(r));
    ahead.start(d, slow);

    // Assess: c was ignored while a and b ran; d started once they had ended.
    expect(calls).toEqual([a, b, d]);
    expect({ started: ahead.started, skipped: ahead.skipped }).toEqual({ started: 3, skipped: 1 });
    expect(ahead.take(c)).toBeUndefined();
    expect(ahead.take(d)).toBeDefined();
  });

  it('holds nothing with a bound of 0', () => {
    // Prepare
    const ahead = new PreparedAhead(0);
    const { calls, prepare } = counting();

    // Act
    ahead.start(Uint8Array.of(1), prepare);

    // Assess
    expect(calls).toEqual([]);
    expect(ahead.size).toBe(0);
  });
});
