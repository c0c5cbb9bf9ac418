/**
 * Cross-video micro-batching, in the manner of DeepStream's nvstreammux: items
 * of several streams go into one call, which is pushed when the batch is full
 * or when the oldest ready item has waited `maxBatchWaitMs`.
 *
 * - Each stream (video) has a FIFO queue. An item is submitted with a promise of
 *   its input (decode + letterbox), and only the head of a queue may enter a
 *   batch, so a stream's items run in submission order even when a later
 *   frame decodes first.
 * - Batches are filled round-robin over the streams, starting one stream further
 *   on each time, so a busy stream cannot starve the others.
 * - One batch runs at a time; inputs of the next batch keep decoding meanwhile,
 *   so decode of batch k+1 overlaps inference of batch k.
 * - An item whose input promise rejects leaves its queue at once and rejects its
 *   own result only; its stream carries on.
 * - A stream submitted as `background` (frames detected ahead of their round, decision
 *   42) only fills the places the other streams leave in a batch: a batch runs for it
 *   when the model would otherwise idle, and never holds a foreground item back by more
 *   than the one batch already running.
 */

interface Entry<I, R> {
  ready: boolean;
  input?: I;
  readyAtMs: number;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

export interface MicroBatcherOptions<I, R> {
  /** Most items per call. */
  readonly batchSize: number;
  /** Longest a ready item waits for the batch to fill. */
  readonly maxBatchWaitMs: number;
  /**
   * Runs one batch; returns one result per item, in order. `streams[i]` is the
   * stream of `inputs[i]`. Throwing rejects every item of the batch.
   */
  readonly run: (inputs: I[], streams: string[]) => Promise<R[]>;
}

export class MicroBatcher<I, R> {
  private readonly options: MicroBatcherOptions<I, R>;
  private readonly queues = new Map<string, Entry<I, R>[]>();
  /** Streams that only fill what the others leave (see the module comment). */
  private readonly background = new Set<string>();
  private rrOffset = 0;
  private running = false;
  private pumpScheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private timerDueMs = Infinity;
  /** Sizes of the batches run so far (for tests and metrics). */
  readonly batchSizes: number[] = [];

  constructor(options: MicroBatcherOptions<I, R>) {
    if (!Number.isInteger(options.batchSize) || options.batchSize < 1) throw new RangeError('batchSize must be a positive integer');
    this.options = options;
  }

  /**
   * Queues an item of `stream`; resolves with its result. `priority: 'background'` marks
   * the stream as one that only fills what foreground streams leave (fixed per stream
   * while it has items queued).
   */
  submit(stream: string, input: Promise<I>, priority: 'foreground' | 'background' = 'foreground'): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const entry: Entry<I, R> = { ready: false, readyAtMs: 0, resolve, reject };
      let queue = this.queues.get(stream);
      if (!queue) {
        queue = [];
        this.queues.set(stream, queue);
        if (priority === 'background') this.background.add(stream);
      }
      queue.push(entry);
      input.then(
        (value) => {
          entry.ready = true;
          entry.input = value;
          entry.readyAtMs = performance.now();
          this.schedulePump();
        },
        (error: unknown) => {
          this.removeEntry(stream, entry);
          reject(error);
          this.schedulePump();
        },
      );
    });
  }

  /** Items queued (decoding or ready) and not yet in a batch. */
  get pendingCount(): number {
    let n = 0;
    for (const q of this.queues.values()) n += q.length;
    return n;
  }

  private removeEntry(stream: string, entry: Entry<I, R>): void {
    const queue = this.queues.get(stream);
    if (!queue) return;
    const i = queue.indexOf(entry);
    if (i >= 0) queue.splice(i, 1);
    if (queue.length === 0) this.dropStream(stream);
  }

  private dropStream(stream: string): void {
    this.queues.delete(stream);
    this.background.delete(stream);
  }

  /** Ready items that could enter a batch now (ready prefixes of each queue), and the oldest ready time. */
  private readyState(): { count: number; oldestMs: number } {
    let count = 0;
    let oldestMs = Infinity;
    for (const q of this.queues.values()) {
      for (const e of q) {
        if (!e.ready) break;
        count++;
        if (e.readyAtMs < oldestMs) oldestMs = e.readyAtMs;
      }
    }
    return { count, oldestMs };
  }

  /**
   * Coalesces the readiness events of one turn: frames that become ready
   * together are composed together, so round-robin sees all of them.
   */
  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    queueMicrotask(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    if (this.running) return;
    const { count, oldestMs } = this.readyState();
    if (count === 0) return;
    const dueMs = oldestMs + this.options.maxBatchWaitMs;
    if (count >= this.options.batchSize || performance.now() >= dueMs) {
      this.clearTimer();
      void this.runBatch();
      return;
    }
    if (dueMs < this.timerDueMs) {
      this.clearTimer();
      this.timerDueMs = dueMs;
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.timerDueMs = Infinity;
        this.pump();
      }, Math.max(0, dueMs - performance.now()));
    }
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDueMs = Infinity;
  }

  /**
   * Takes up to batchSize ready heads, one per stream per round, rotating the starting
   * stream; foreground streams first, background streams fill what is left.
   */
  private takeBatch(): { entries: Entry<I, R>[]; streams: string[] } {
    const entries: Entry<I, R>[] = [];
    const streams: string[] = [];
    const keys = [...this.queues.keys()];
    const start = keys.length > 0 ? this.rrOffset % keys.length : 0;
    this.rrOffset = start + 1;
    const taken = new Map<string, number>();
    for (const background of [false, true]) {
      let progress = true;
      while (entries.length < this.options.batchSize && progress) {
        progress = false;
        for (let k = 0; k < keys.length && entries.length < this.options.batchSize; k++) {
          const key = keys[(start + k) % keys.length]!;
          if (this.background.has(key) !== background) continue;
          const queue = this.queues.get(key)!;
          const next = taken.get(key) ?? 0;
          const e = queue[next];
          if (!e || !e.ready) continue;
          entries.push(e);
          streams.push(key);
          taken.set(key, next + 1);
          progress = true;
        }
      }
    }
    for (const [key, n] of taken) {
      const queue = this.queues.get(key)!;
      queue.splice(0, n);
      if (queue.length === 0) this.dropStream(key);
    }
    return { entries, streams };
  }

  private async runBatch(): Promise<void> {
    this.running = true;
    const { entries, streams } = this.takeBatch();
    try {
      this.batchSizes.push(entries.length);
      const results = await this.options.run(
        entries.map((e) => e.input as I),
        streams,
      );
      entries.forEach((e, i) => e.resolve(results[i]));
    } catch (error) {
      for (const e of entries) e.reject(error);
    } finally {
      this.running = false;
      this.pump();
    }
  }

  /** Cancels the wait timer; pending items stay queued. */
  dispose(): void {
    this.clearTimer();
  }
}
