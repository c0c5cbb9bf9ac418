/**
 * JPEG/PNG decode and letterbox in a thread of their own (`decodeInThread`, the uint8 path:
 * decision 37; off by default since decision 40, which frees sharp's output at once and
 * so took away what the thread saved: the decode-placement bench then measured the main
 * thread 0.1-0.4 core-ms per frame cheaper, with a small heap or 2 million live objects).
 *
 * Why: sharp returns each frame's pixels as a new Buffer (0.9 MB for 640x480). The pool
 * cannot reuse it and postMessage cannot move it. It is garbage in the heap of whichever
 * thread called sharp, and V8 starts major collections over it, whose cost grows with
 * that heap. Here the Buffer is garbage in this thread's heap, which holds little else,
 * and the letterbox travels to the main thread in a pooled buffer that is moved, not
 * copied. Measured apart from the processor (decision 37: the decode-placement bench, in
 * git history): 0.3-0.4 core-ms per frame more with a small main heap, 2.5-2.8 less with
 * 2 million live objects on it.
 *
 * Errors keep their meaning: a frame the thread cannot decode rejects with the same
 * {@link ImageDecodeError} and reason as on the main thread. If the thread dies, every
 * pending and later decode rejects with {@link DecodeThreadDiedError}; the processor
 * then decodes those frames on the main thread, so no frame fails because of it.
 *
 * This module is also the thread's entry point (`workerData.role === 'decode-thread'`).
 */
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { BufferPool } from './buffer-pool.ts';
import { decodeForLetterbox, ImageDecodeError, letterboxInto, releaseDecoded, type ImageRejectReason, type LetterboxGeometry, type PreparedFrameUint8 } from './preprocess.ts';

const ROLE = 'decode-thread';
/** The decode thread's name, also its OS thread name (`comm` in /proc; at most 15 characters). */
export const DECODE_THREAD_NAME = 'vision-decode';

interface Request {
  readonly id: number;
  readonly image: Uint8Array;
  readonly inputWidth: number;
  readonly inputHeight: number;
  readonly maxSourcePixels: number;
  /** Where the letterbox goes: moved here, moved back in the reply either way. */
  readonly buffer: ArrayBuffer;
}

type Reply =
  | { readonly id: number; readonly ok: true; readonly buffer: ArrayBuffer; readonly geometry: LetterboxGeometry }
  | { readonly id: number; readonly ok: false; readonly buffer: ArrayBuffer; readonly message: string; readonly reason?: ImageRejectReason };

/** Every decode pending on, or sent to, a decode thread that ended. */
export class DecodeThreadDiedError extends Error {
  override name = 'DecodeThreadDiedError';
}

/** The main thread's side: one thread, decodes in flight matched to replies by id. */
export class DecodeThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private failure: Error | undefined;

  private constructor(worker: Worker, onDeath: ((why: string) => void) | undefined) {
    this.worker = worker;
    worker.on('message', (reply: Reply) => {
      const waiter = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (this.pending.size === 0) worker.unref();
      waiter?.resolve(reply);
    });
    const die = (why: string) => {
      if (this.failure) return;
      this.failure = new DecodeThreadDiedError(`decode thread ended: ${why}`);
      for (const w of this.pending.values()) w.reject(this.failure);
      this.pending.clear();
      onDeath?.(why);
    };
    worker.on('error', (error) => die(error instanceof Error ? error.message : String(error)));
    worker.on('exit', (code) => die(`exit code ${code}`));
    worker.unref();
  }

  /**
   * Starts the thread; resolves once it is ready to decode. `onDeath` is called once if
   * the thread ends by itself (an error, an exit, running out of its heap), not on {@link stop}.
   */
  static async start(onDeath?: (why: string) => void): Promise<DecodeThread> {
    // Named, so /proc and profilers tell it from the inference thread (Node names the OS thread after it).
    const worker = new Worker(new URL(import.meta.url), { workerData: { role: ROLE }, name: DECODE_THREAD_NAME });
    await new Promise<void>((resolve, reject) => {
      worker.once('message', () => resolve());
      worker.once('error', reject);
    });
    worker.removeAllListeners('error');
    return new DecodeThread(worker, onDeath);
  }

  /** Whether the thread has ended (decodes then reject with {@link DecodeThreadDiedError}). */
  get dead(): boolean {
    return this.failure !== undefined;
  }

  /**
   * Decodes and letterboxes `image` into a buffer of `pool`, as `prepareFrameUint8` does
   * on the main thread; the same bytes, geometry and errors. The JPEG bytes are copied to
   * the thread (the caller keeps its array); the letterbox buffer is moved there and back.
   */
  async prepare(image: Uint8Array, inputWidth: number, inputHeight: number, maxSourcePixels: number, pool: BufferPool): Promise<PreparedFrameUint8> {
    if (this.failure) throw this.failure;
    const lent = pool.acquire(inputWidth * inputHeight * 3);
    const id = this.nextId++;
    const reply = await new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.ref();
      this.worker.postMessage({ id, image, inputWidth, inputHeight, maxSourcePixels, buffer: lent } satisfies Request, [lent]);
    });
    pool.adoptMoved(lent, reply.buffer);
    if (reply.ok) return { hwc: new Uint8Array(reply.buffer), geometry: reply.geometry };
    pool.release(reply.buffer);
    throw reply.reason ? new ImageDecodeError(reply.message, reply.reason) : new Error(reply.message);
  }

  /** Ends the thread; pending decodes reject. */
  async stop(): Promise<void> {
    this.failure ??= new DecodeThreadDiedError('decode thread stopped');
    for (const w of this.pending.values()) w.reject(this.failure);
    this.pending.clear();
    await this.worker.terminate();
  }
}

/** The thread's side: decode, letterbox into the buffer it was given, move the buffer back. */
function serve(): void {
  const port = parentPort!;
  port.on('message', async (r: Request) => {
    try {
      const { rgb, geometry } = await decodeForLetterbox(r.image, r.inputWidth, r.inputHeight, r.maxSourcePixels);
      letterboxInto(new Uint8Array(r.buffer), rgb, r.inputWidth, geometry);
      // sharp's Buffer freed now, not by this heap's next full collection (decision 40).
      releaseDecoded(rgb);
      port.postMessage({ id: r.id, ok: true, buffer: r.buffer, geometry } satisfies Reply, [r.buffer]);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const reason = error instanceof ImageDecodeError ? error.reason : undefined;
      port.postMessage({ id: r.id, ok: false, buffer: r.buffer, message, ...(reason ? { reason } : {}) } satisfies Reply, [r.buffer]);
    }
  });
  port.postMessage('ready');
}

if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE) serve();
