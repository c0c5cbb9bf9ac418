import { describe, expect, it } from 'vitest';
import { Float32Pool } from '../../gpu-worker/vision/buffer-pool.ts';

describe('input buffer pool', () => {
  it('hands out shared buffers, and a buffer given back to the next take of its length', () => {
    // Prepare
    const pool = new Float32Pool();

    // Act
    const first = pool.take(12);
    pool.give(first);
    const again = pool.take(12);
    const other = pool.take(12);

    // Assess: shared memory, so a run on the inference thread reads it in place instead of detaching it.
    expect(first.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(first.length).toBe(12);
    expect(again).toBe(first);
    expect(other).not.toBe(first);
    expect({ created: pool.created, reused: pool.reused }).toEqual({ created: 2, reused: 1 });
  });

  it('never hands one buffer to two takers when it is given back twice', () => {
    // Prepare
    const pool = new Float32Pool();
    const buffer = pool.take(4);

    // Act
    pool.give(buffer);
    pool.give(buffer);
    const a = pool.take(4);
    const b = pool.take(4);

    // Assess
    expect(a).toBe(buffer);
    expect(b).not.toBe(buffer);
  });

  it('keeps only whole shared buffers of its own kind, by length', () => {
    // Prepare
    const pool = new Float32Pool();
    const whole = pool.take(8);

    // Act: a view into it, and a plain array, are not taken back.
    pool.give(whole.subarray(0, 4));
    pool.give(new Float32Array(8));
    const forFour = pool.take(4);

    // Assess
    expect(forFour.length).toBe(4);
    expect(pool.heldBytes).toBe(0);
    expect(pool.reused).toBe(0);
  });

  it('holds at most its idle-byte bound, and nothing after clear()', () => {
    // Prepare: room for two buffers of 4 floats.
    const pool = new Float32Pool(2 * 4 * Float32Array.BYTES_PER_ELEMENT);
    const buffers = [pool.take(4), pool.take(4), pool.take(4)];

    // Act
    for (const b of buffers) pool.give(b);
    const held = pool.heldBytes;
    pool.clear();

    // Assess
    expect(held).toBe(32);
    expect(pool.heldBytes).toBe(0);
    expect(pool.take(4)).not.toBe(buffers[0]);
  });
});
