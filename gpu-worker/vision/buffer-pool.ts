/**
 * Float32 buffers for model inputs, reused across frames.
 *
 * A 640x640 input is 4.9 MB, and each frame needed two (its letterboxed planes, then its
 * slot in the stacked batch). Fresh ones cost about 1.5 ms of CPU each in page faults,
 * zeroing and freeing, and most of the pipeline's garbage-collection time
 * (bench/pipeline-cpu.ts): CPU that a GPU host needs for the next frames.
 *
 * The buffers live on shared memory so that the inference thread reads them in place:
 * a plain ArrayBuffer sent to it is transferred, detached here and lost to the pool.
 * A buffer goes back to the pool only once nothing reads it any more (after its copy into
 * a batch, or after its run returned); one that is dropped instead is simply collected.
 */

/** Most bytes kept idle; a 640x640 frame is 4.9 MB, a batch of 8 is 39 MB. */
export const POOL_MAX_IDLE_BYTES = 128 * 1024 * 1024;

export class Float32Pool {
  private readonly maxIdleBytes: number;
  private readonly idle = new Map<number, Float32Array[]>();
  /** Guards against a buffer given back twice, which would hand it to two frames at once. */
  private readonly idleSet = new WeakSet<Float32Array>();
  private idleBytes = 0;
  /** Buffers allocated, and takes served from the pool (for tests and the benchmark). */
  created = 0;
  reused = 0;

  constructor(maxIdleBytes = POOL_MAX_IDLE_BYTES) {
    this.maxIdleBytes = maxIdleBytes;
  }

  /** A buffer of `length` floats with unspecified contents: the caller writes every element it reads. */
  take(length: number): Float32Array {
    const buffer = this.idle.get(length)?.pop();
    if (buffer) {
      this.idleSet.delete(buffer);
      this.idleBytes -= buffer.byteLength;
      this.reused++;
      return buffer;
    }
    this.created++;
    return new Float32Array(new SharedArrayBuffer(length * Float32Array.BYTES_PER_ELEMENT));
  }

  /** Gives back a buffer from {@link take} that nothing reads any more; others are ignored. */
  give(buffer: Float32Array): void {
    const whole = buffer.buffer instanceof SharedArrayBuffer && buffer.byteOffset === 0 && buffer.byteLength === buffer.buffer.byteLength;
    if (!whole || this.idleSet.has(buffer) || this.idleBytes + buffer.byteLength > this.maxIdleBytes) return;
    let list = this.idle.get(buffer.length);
    if (!list) {
      list = [];
      this.idle.set(buffer.length, list);
    }
    list.push(buffer);
    this.idleSet.add(buffer);
    this.idleBytes += buffer.byteLength;
  }

  /** Bytes held idle now. */
  get heldBytes(): number {
    return this.idleBytes;
  }

  /** Drops every idle buffer (the model is going away). */
  clear(): void {
    for (const list of this.idle.values()) for (const b of list) this.idleSet.delete(b);
    this.idle.clear();
    this.idleBytes = 0;
  }
}
