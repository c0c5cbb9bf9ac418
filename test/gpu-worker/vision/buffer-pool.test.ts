/**
 * The input buffer pool (gpu-worker/vision/buffer-pool.ts, decision 37): buffers are
 * reused, but never one still in use, never one twice, and one that went to another
 * thread only once it came back.
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { BufferPool, INPUT_POOL_MAX_BYTES, inputPoolBytes } from '../../../gpu-worker/vision/buffer-pool.ts';

/** Moves `buffer` through a real MessageChannel and back, as the inference thread does: the original is detached, a new object arrives. */
async function roundTrip(buffer: ArrayBuffer): Promise<ArrayBuffer> {
  const { port1, port2 } = new MessageChannel();
  try {
    const echoed = new Promise<ArrayBuffer>((resolve) => port1.once('message', (b: ArrayBuffer) => resolve(b)));
    port2.once('message', (b: ArrayBuffer) => (port2 as MessagePort).postMessage(b, [b]));
    port1.postMessage(buffer, [buffer]);
    return await echoed;
  } finally {
    port1.close();
    port2.close();
  }
}

describe('BufferPool', () => {
  it('hands out a released buffer again, of the same size only, and a new one otherwise', () => {
    // Prepare
    const pool = new BufferPool(1 << 20);
    const a = pool.acquire(1024);
    // Act
    const released = pool.release(a);
    const again = pool.acquire(1024);
    const other = pool.acquire(2048);
    // Assess
    expect(released).toBe(true);
    expect(again).toBe(a);
    expect(other).not.toBe(a);
    expect(other.byteLength).toBe(2048);
    expect([pool.allocated, pool.reused]).toEqual([2, 1]);
  });

  it('never hands out a buffer still lent, however many are asked for', () => {
    // Prepare
    const pool = new BufferPool(1 << 20);
    const lent = Array.from({ length: 8 }, () => pool.acquire(512));
    pool.release(lent[3]!);
    pool.release(lent[5]!);
    // Act: four more while six are still lent.
    const more = Array.from({ length: 4 }, () => pool.acquire(512));
    // Assess: the two released come back, the others are new; no buffer is held twice.
    const stillLent = lent.filter((_, i) => i !== 3 && i !== 5);
    expect(more.filter((b) => stillLent.includes(b))).toEqual([]);
    expect(new Set([...stillLent, ...more]).size).toBe(stillLent.length + more.length);
    expect(more).toContain(lent[3]);
    expect(more).toContain(lent[5]);
  });

  it('refuses a second release, a buffer it did not lend, and a detached one', async () => {
    // Prepare
    const pool = new BufferPool(1 << 20);
    const a = pool.acquire(64);
    const moved = pool.acquire(64);
    await roundTrip(moved); // `moved` is detached now
    // Act
    const first = pool.release(a);
    const second = pool.release(a);
    const foreign = pool.release(new ArrayBuffer(64));
    const detached = pool.release(moved);
    // Assess: `a` is in the free list once, so two acquires give `a` and then a new buffer.
    expect([first, second, foreign, detached]).toEqual([true, false, false, false]);
    expect(pool.refused).toBe(3);
    const x = pool.acquire(64);
    const y = pool.acquire(64);
    expect(x).toBe(a);
    expect(y).not.toBe(a);
  });

  it('takes a buffer back from another thread only once the one it lent is detached, and hands out what came back', async () => {
    // Prepare
    const pool = new BufferPool(1 << 20);
    const lent = pool.acquire(256);
    new Uint8Array(lent).fill(7);
    const notMoved = pool.acquire(256);
    // Act
    const cameBack = await roundTrip(lent);
    const refusedAttached = pool.releaseMoved(notMoved, new ArrayBuffer(256));
    const refusedWrongSize = pool.releaseMoved(lent, new ArrayBuffer(128));
    const accepted = pool.releaseMoved(lent, cameBack);
    const twice = pool.releaseMoved(lent, cameBack);
    // Assess
    expect([refusedAttached, refusedWrongSize, accepted, twice]).toEqual([false, false, true, false]);
    const next = pool.acquire(256);
    expect(next).toBe(cameBack);
    expect(new Uint8Array(next)[0]).toBe(7); // the same memory, contents as the thread left them
  });

  it('passes a loan to the object that came back from another thread, which is then released like any other', async () => {
    // Prepare
    const pool = new BufferPool(1 << 20);
    const lent = pool.acquire(128);
    // Act
    const cameBack = await roundTrip(lent);
    const adopted = pool.adoptMoved(lent, cameBack);
    const again = pool.adoptMoved(lent, cameBack);
    // Assess: still in use (not handed out), released once, then handed out.
    expect([adopted, again]).toEqual([true, false]);
    expect(pool.acquire(128)).not.toBe(cameBack);
    expect(pool.release(cameBack)).toBe(true);
    expect(pool.release(cameBack)).toBe(false);
    expect(pool.acquire(128)).toBe(cameBack);
  });

  it('holds at most maxFreeBytes idle and lets the rest go', () => {
    // Prepare
    const pool = new BufferPool(3000);
    const buffers = Array.from({ length: 4 }, () => pool.acquire(1000));
    // Act
    const kept = buffers.map((b) => pool.release(b));
    // Assess
    expect(kept).toEqual([true, true, true, false]);
    expect(pool.heldBytes).toBe(3000);
    pool.clear();
    expect(pool.heldBytes).toBe(0);
    expect(pool.acquire(1000)).not.toBe(buffers[0]);
  });

  it('sizes the processor pool from the model input and batch size, capped', () => {
    const uint8 = { inputWidth: 640, inputHeight: 640, layout: 'uint8-nhwc' } as const;
    expect(inputPoolBytes(uint8, 1, 10)).toBe(640 * 640 * 3 * 14);
    expect(inputPoolBytes(uint8, 8, 10)).toBe(Math.min(INPUT_POOL_MAX_BYTES, 640 * 640 * 3 * 42));
    expect(inputPoolBytes({ ...uint8, layout: 'float32-nchw' }, 8, 10)).toBe(INPUT_POOL_MAX_BYTES);
  });
});
