/**
 * Input buffers reused from frame to frame, so that a letterboxed frame (1.2 MB of uint8
 * at 640x640) and a stacked batch (8 of them) are not fresh garbage every time.
 *
 * Why: V8 counts every ArrayBuffer's bytes as external memory, and a few MB of it per
 * frame start a full mark-compact every ~10 frames even though the JS heap itself is
 * ~15 MB; on the 2-core bench machine that garbage collection was 2-3 core-ms of every
 * 640x480 frame, as much as its JPEG decode (decision 37). A buffer also
 * costs its page faults each time it is new.
 *
 * The rule that keeps it safe: a buffer is handed out only from the free list, and only
 * the release of a buffer this pool lent, once, puts it there. So a buffer still in use
 * (in a prepared frame, in a batch on its way to the inference thread) cannot be handed
 * out again, a double release is ignored, and a buffer that never comes back (a frame
 * dropped before its batch, a failed run) is simply left to the garbage collector: the
 * pool tracks what it lent in a WeakMap, so forgetting costs nothing. A buffer moved to
 * the inference thread comes back as a new ArrayBuffer object over the same memory
 * ({@link BufferPool.releaseMoved}): the one lent must then be detached, which proves
 * that nothing on this thread can still write to it.
 * Contents are not cleared: every caller writes every byte it hands on.
 */
/** Most bytes an input pool holds idle, whatever the model and batch size: 64 MiB. */
export const INPUT_POOL_MAX_BYTES = 64 * 1024 * 1024;

/**
 * How many idle bytes the processor's pool may hold: room for the frames in flight (two
 * batches' worth plus the frames decoded ahead) and two stacked batches, at most
 * {@link INPUT_POOL_MAX_BYTES}. 640x640 uint8 at batch 8: 42 frames, 52 MB; at batch 1:
 * 14 frames, 17 MB. On the float fallback path (4 bytes a value) the cap binds sooner,
 * and the rest is garbage as before.
 */
export function inputPoolBytes(
  info: { readonly inputWidth: number; readonly inputHeight: number; readonly layout: 'uint8-nhwc' | 'float32-nchw' },
  batchSize: number,
  aheadFrames: number,
): number {
  const frameBytes = info.inputWidth * info.inputHeight * 3 * (info.layout === 'uint8-nhwc' ? 1 : 4);
  return Math.min(INPUT_POOL_MAX_BYTES, frameBytes * (4 * batchSize + aheadFrames));
}

export class BufferPool {
  /** Free buffers by byte length; the most recently released is handed out first (warm in cache). */
  private readonly free = new Map<number, ArrayBuffer[]>();
  /** Lent and not yet released, with its byte length (a detached buffer reads as 0). Weak: a buffer that never comes back costs nothing here. */
  private readonly lent = new WeakMap<ArrayBuffer, number>();
  /** In a free list now (so a buffer cannot be in one twice). */
  private readonly idle = new WeakSet<ArrayBuffer>();
  private readonly maxFreeBytes: number;
  private freeBytes = 0;
  /** Buffers made new, and buffers handed out again (for tests and the benchmark). */
  allocated = 0;
  reused = 0;
  /** Releases refused: not lent by this pool, already released, detached, or over `maxFreeBytes`. */
  refused = 0;

  /** @param maxFreeBytes most bytes held while nobody uses them; a release past that is dropped. */
  constructor(maxFreeBytes: number) {
    if (!(maxFreeBytes >= 0)) throw new RangeError('maxFreeBytes must be >= 0');
    this.maxFreeBytes = maxFreeBytes;
  }

  /** A buffer of exactly `byteLength` bytes, owned by the caller until released. Its contents are whatever was there. */
  acquire(byteLength: number): ArrayBuffer {
    const list = this.free.get(byteLength);
    let buffer = list?.pop();
    if (buffer) {
      this.idle.delete(buffer);
      this.freeBytes -= byteLength;
      this.reused++;
    } else {
      buffer = new ArrayBuffer(byteLength);
      this.allocated++;
    }
    this.lent.set(buffer, byteLength);
    return buffer;
  }

  /**
   * Gives back a buffer from {@link acquire}, still attached; the caller must not touch it
   * afterwards. Returns whether the pool kept it. Anything else (a buffer it did not lend,
   * a second release, a detached buffer) is refused and left alone.
   */
  release(buffer: ArrayBuffer): boolean {
    // A detached buffer (moved to another thread) reads as 0 bytes long: its memory is no longer this one.
    if (!this.lent.has(buffer) || buffer.byteLength === 0) return this.refuse();
    this.lent.delete(buffer);
    return this.keep(buffer);
  }

  /**
   * Gives back a buffer that was moved to another thread (postMessage transfer) and moved
   * back: `lentBuffer` is the object {@link acquire} returned, now detached, and
   * `cameBack` the object that arrived for the same memory. Refused unless `lentBuffer`
   * is lent, detached, and `cameBack` has its length.
   */
  releaseMoved(lentBuffer: ArrayBuffer, cameBack: ArrayBuffer): boolean {
    return this.adoptMoved(lentBuffer, cameBack) ? this.release(cameBack) : false;
  }

  /**
   * A lent buffer moved to another thread came back as `cameBack` and stays in use: the
   * loan passes to the new object, to be released later. Same checks as {@link releaseMoved}.
   */
  adoptMoved(lentBuffer: ArrayBuffer, cameBack: ArrayBuffer): boolean {
    const byteLength = this.lent.get(lentBuffer);
    if (byteLength === undefined || lentBuffer.byteLength !== 0 || cameBack.byteLength !== byteLength || this.lent.has(cameBack) || this.idle.has(cameBack)) return this.refuse();
    this.lent.delete(lentBuffer);
    this.lent.set(cameBack, byteLength);
    return true;
  }

  private keep(buffer: ArrayBuffer): boolean {
    if (this.idle.has(buffer) || this.freeBytes + buffer.byteLength > this.maxFreeBytes) return this.refuse();
    let list = this.free.get(buffer.byteLength);
    if (!list) {
      list = [];
      this.free.set(buffer.byteLength, list);
    }
    list.push(buffer);
    this.idle.add(buffer);
    this.freeBytes += buffer.byteLength;
    return true;
  }

  private refuse(): false {
    this.refused++;
    return false;
  }

  /** Bytes held in the free lists now. */
  get heldBytes(): number {
    return this.freeBytes;
  }

  /** Drops every free buffer. */
  clear(): void {
    for (const list of this.free.values()) for (const b of list) this.idle.delete(b);
    this.free.clear();
    this.freeBytes = 0;
  }
}
