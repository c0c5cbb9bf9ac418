/**
 * The decode thread (gpu-worker/vision/decode-thread.ts): the same letterbox bytes,
 * geometry and errors as the main thread's `prepareFrameUint8`, its buffer to and from
 * the pool, and a processor whose frames still decode (on the main thread) once the
 * thread has ended.
 */
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrameInput } from '../../../core/ports.ts';
import { BufferPool } from '../../../gpu-worker/vision/buffer-pool.ts';
import { DecodeThread, DecodeThreadDiedError } from '../../../gpu-worker/vision/decode-thread.ts';
import { createVisionProcessor } from '../../../gpu-worker/vision/index.ts';
import { ImageDecodeError, prepareFrameUint8 } from '../../../gpu-worker/vision/preprocess.ts';
import { generateClip } from '../../../gpu-worker/vision/synthetic/generate.ts';
import { noisy } from '../../support/noisy-image.ts';


describe('DecodeThread', () => {
  let thread: DecodeThread;

  beforeAll(async () => {
    thread = await DecodeThread.start();
  });
  afterAll(async () => {
    await thread?.stop();
  });

  it.each([
    ['a 640x480 JPEG', 640, 480, 'jpeg', 640, 640],
    ['a 1920x1080 JPEG (shrunk on load)', 1920, 1080, 'jpeg', 640, 640],
    ['a portrait 333x517 PNG', 333, 517, 'png', 320, 320],
  ] as const)('letterboxes %s exactly as the main thread does, into a pooled buffer', async (_label, width, height, format, inputWidth, inputHeight) => {
    // Prepare
    const image = await noisy(width, height, format);
    const pool = new BufferPool(1 << 24);
    // Act
    const onMain = await prepareFrameUint8(image, inputWidth, inputHeight);
    const inThread = await thread.prepare(image, inputWidth, inputHeight, 26_214_400, pool);
    // Assess: same bytes and geometry; the caller's image is intact; the buffer is the pool's to reuse.
    expect(inThread.geometry).toEqual(onMain.geometry);
    expect(Buffer.from(inThread.hwc).equals(Buffer.from(onMain.hwc))).toBe(true);
    expect(image.length).toBeGreaterThan(0);
    expect(pool.release(inThread.hwc.buffer as ArrayBuffer)).toBe(true);
    expect(pool.acquire(inputWidth * inputHeight * 3)).toBe(inThread.hwc.buffer);
  });

  it('rejects a corrupt and an oversized frame with the main thread\'s reason, and gives the buffer back', async () => {
    // Prepare
    const pool = new BufferPool(1 << 24);
    const corrupt = (await noisy(64, 48, 'jpeg')).subarray(0, 200);
    const huge = await sharp({ create: { width: 4000, height: 4000, channels: 3, background: '#000' } }).png().toBuffer();
    // Act
    const errors = await Promise.all([thread.prepare(corrupt, 64, 64, 26_214_400, pool), thread.prepare(huge, 64, 64, 1_000_000, pool)].map((p) => p.then(() => undefined, (e: unknown) => e)));
    // Assess
    expect(errors.map((e) => [e instanceof ImageDecodeError, (e as ImageDecodeError).reason])).toEqual([
      [true, 'corrupt-image'],
      [true, 'image-too-large'],
    ]);
    expect(pool.refused).toBe(0);
    expect(pool.heldBytes).toBe(2 * 64 * 64 * 3);
  });

  it('says once when it ends by itself, and not when it is stopped', async () => {
    const deaths: string[] = [];
    const dying = await DecodeThread.start((why) => deaths.push(why));
    // As if it ran out of its heap: the thread ends under it.
    await (dying as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await new Promise((r) => setTimeout(r, 50));
    expect(dying.dead).toBe(true);
    expect(deaths).toHaveLength(1);
    await dying.stop();
    const stopped: string[] = [];
    const calm = await DecodeThread.start((why) => stopped.push(why));
    await calm.stop();
    await new Promise((r) => setTimeout(r, 50));
    expect(stopped).toEqual([]);
  });

  it('rejects every decode once stopped', async () => {
    const stopped = await DecodeThread.start();
    await stopped.stop();
    expect(stopped.dead).toBe(true);
    await expect(stopped.prepare(await noisy(8, 8, 'png'), 8, 8, 1000, new BufferPool(1 << 20))).rejects.toBeInstanceOf(DecodeThreadDiedError);
  });
});

describe('the processor with and without its decode thread', () => {
  it('starts no decode thread by default (decision 40: decoding on the main thread is cheaper), and one when asked', async () => {
    const p = createVisionProcessor({ batchSize: 1, maxBatchWaitMs: 2, scoreThreshold: 0.25 });
    await p.start();
    try {
      expect(p.provider).toBe('cpu');
      expect((p as unknown as { decoder: DecodeThread | undefined }).decoder).toBeUndefined();
    } finally {
      await p.stop();
    }
    const asked = createVisionProcessor({ batchSize: 1, maxBatchWaitMs: 2, scoreThreshold: 0.25, decodeInThread: true });
    await asked.start();
    try {
      expect((asked as unknown as { decoder: DecodeThread | undefined }).decoder).toBeInstanceOf(DecodeThread);
    } finally {
      await asked.stop();
    }
  });

  it('gives the same outcomes, and keeps decoding on the main thread once the thread has ended', async () => {
    // Prepare
    const clip = await generateClip({ seed: 21, frames: 16, objects: 5, width: 320, height: 240, format: 'jpeg' });
    const frames = (videoId: string, from: number, to: number): FrameInput[] => clip.frames.slice(from, to).map((f) => ({ videoId, frame: f.frame, image: f.image }));
    const run = async (decodeInThread: boolean, endThreadHalfway: boolean) => {
      const p = createVisionProcessor({ batchSize: 1, maxBatchWaitMs: 2, scoreThreshold: 0.25, decodeInThread });
      await p.start();
      try {
        p.openVideo('v', undefined);
        const first = await p.process(frames('v', 0, 8));
        // The thread ends (as if it died): later frames must still decode, on the main thread.
        if (endThreadHalfway) await (p as unknown as { decoder: DecodeThread }).decoder.stop();
        const second = await p.process(frames('v', 8, 16));
        return [...first, ...second];
      } finally {
        await p.stop();
      }
    };
    // Act
    const onMain = await run(false, false);
    const inThread = await run(true, false);
    const threadEnded = await run(true, true);
    // Assess
    expect(onMain.every((o) => o.status === 'ok')).toBe(true);
    expect(inThread).toEqual(onMain);
    expect(threadEnded).toEqual(onMain);
  });
});
