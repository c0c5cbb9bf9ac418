/**
 * Frames detected ahead of their round, keyed by their bytes (decision 42).
 *
 * Behind a backlog a video's next frames cannot be received until its last ten are
 * committed and deleted (a FIFO group is blocked while any of its messages is in flight),
 * so the model idles through each cycle's commit, delete and receive. The worker reads
 * those frames ahead by predicted key (decision 39); detecting them then, in the model's
 * idle time, leaves the round only the tracker's update. Detection is a function of the
 * bytes alone (the tracker, which has order and state, is not touched), so a result
 * computed early is the result the round would compute.
 *
 * The key is the byte array itself, as in prepared-ahead.ts: a read-ahead entry confirmed
 * by its message's ETag hands the round the very same object; a frame fetched afresh
 * (another version, an expired entry) finds nothing here and is detected in its round.
 *
 * A hint, bounded three ways:
 * - at most `maxFrames` entries are held, queued or running. When full, the oldest queued
 *   entry goes first (it cost nothing yet, and its round is the nearest, so it was the
 *   likeliest to be taken before its turn), then the oldest finished one; work that is
 *   running is never thrown away, and a hint that finds every place running is ignored;
 * - at most `maxRunning` run at once (decoding or waiting for the model), so a burst of
 *   hints holds at most that many decoded frames; the rest wait as bytes, in order;
 * - a frame the round takes before its turn came is taken out of the queue and detected
 *   in the round at the round's priority.
 */

/** The batcher stream both processors detect ahead on (a background stream): `#` cannot name a video, so no video's stream. */
export const DETECT_AHEAD_STREAM = '#ahead';

interface Entry<T> {
  /** Set once started; a queued entry has none. */
  result?: Promise<T>;
  /** The detection has ended (results or failure). */
  done?: boolean;
}

export class DetectedAhead<T> {
  private readonly maxFrames: number;
  private readonly maxRunning: number;
  /** Insertion order is age order. */
  private readonly entries = new Map<Uint8Array, Entry<T>>();
  /** Offered and not yet started, oldest first. */
  private readonly queue: { image: Uint8Array; run: (image: Uint8Array) => Promise<T> }[] = [];
  private running = 0;
  /** Started, taken by a frame's round (started or still queued), and dropped unused (for the benchmark and tests). */
  started = 0;
  used = 0;
  takenQueued = 0;
  dropped = 0;
  /** Hints ignored because every place was running. */
  refused = 0;

  constructor(maxFrames: number, maxRunning: number) {
    this.maxFrames = Math.max(0, Math.floor(maxFrames));
    this.maxRunning = Math.max(1, Math.floor(maxRunning));
  }

  /** Queues `run(image)` unless these bytes are already held; starts it when a place is free. */
  offer(image: Uint8Array, run: (image: Uint8Array) => Promise<T>): void {
    if (this.maxFrames === 0 || this.entries.has(image)) return;
    if (this.entries.size >= this.maxFrames && !this.makeRoom()) return;
    this.entries.set(image, {});
    this.queue.push({ image, run });
    this.pump();
  }

  /** Whether these bytes are held (queued, running or done). */
  has(image: Uint8Array): boolean {
    return this.entries.has(image);
  }

  /**
   * The detection started ahead for exactly these bytes, if one was started; it is used up
   * either way. Undefined when nothing is held, or when it was still queued (then the
   * caller detects it itself, at its own priority).
   */
  take(image: Uint8Array): Promise<T> | undefined {
    const entry = this.entries.get(image);
    if (!entry) return undefined;
    this.entries.delete(image);
    if (!entry.result) {
      this.unqueue(image);
      this.takenQueued++;
      return undefined;
    }
    this.used++;
    return entry.result;
  }

  /** Entries held now (queued, running or done). */
  get size(): number {
    return this.entries.size;
  }

  /** Drops everything held or queued (what runs finishes unobserved). */
  clear(): void {
    this.dropped += this.entries.size;
    this.entries.clear();
    this.queue.length = 0;
  }

  /** Frees one place (see the module comment); false when every entry is running. */
  private makeRoom(): boolean {
    const queued = this.queue[0];
    if (queued) {
      this.queue.shift();
      this.entries.delete(queued.image);
      this.dropped++;
      return true;
    }
    for (const [image, entry] of this.entries) {
      if (!entry.done) continue;
      this.entries.delete(image);
      this.dropped++;
      return true;
    }
    this.refused++;
    return false;
  }

  private unqueue(image: Uint8Array): void {
    const i = this.queue.findIndex((q) => q.image === image);
    if (i >= 0) this.queue.splice(i, 1);
  }

  private pump(): void {
    while (this.running < this.maxRunning && this.queue.length > 0) {
      const { image, run } = this.queue.shift()!;
      const entry = this.entries.get(image);
      if (!entry) continue;
      this.running++;
      this.started++;
      let result: Promise<T>;
      try {
        result = run(image);
      } catch (error) {
        result = Promise.reject(error);
      }
      // A failure is kept for the round that takes it to report or redo, never reported here.
      result.catch(() => undefined).finally(() => {
        entry.done = true;
        this.running--;
        this.pump();
      });
      entry.result = result;
    }
  }
}
