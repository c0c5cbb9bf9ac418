/**
 * One camera's journal and uploader in `affinity edge`: closed segments are numbered in
 * the journal (cli/video/stream-journal.ts) and persisted before a byte is sent, as
 * `affinity stream` does, then PUT one at a time in frame order, each retried with capped
 * backoff until it lands. While S3 cannot take them (no uplink, credentials that cannot be
 * renewed or are refused) they wait in the spool, within its byte bound: over it the
 * oldest are dropped (cli/edge/spool-bound.ts), counted, and reported through `report`.
 *
 * The clock, the sleep, the PUT and the file system are injected, so a minute of refused
 * credentials runs in a unit test on a fake clock (test/cli/edge/spool-queue.test.ts).
 */
import { formatBytes } from '../format.ts';
import { closeSegment, markUploaded, type JournalSegment, type StreamState } from '../video/stream-journal.ts';
import { backoffMs, type BackoffOptions } from '../video/stream-segmenter.ts';
import { dropPending, segmentsOverBound, spooledBytes } from './spool-bound.ts';
import { classifyUploadError, uploadFailureHint, type UploadFailureKind } from './upload-errors.ts';

export interface SpoolQueueDeps {
  readonly maxBytes: number;
  readonly put: (p: JournalSegment) => Promise<void>;
  /** Writes the state file (atomically). */
  readonly persist: (state: StreamState) => void;
  readonly removeFile: (file: string) => void;
  readonly now: () => number;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly backoff?: BackoffOptions;
  /** One line for the console (the caller prefixes the camera). */
  readonly log: (line: string) => void;
  /** The AWS profile the credentials come from, named in the hint of a credentials failure. */
  readonly profile?: string | undefined;
  /** Per-segment lines ("uploaded ..."). */
  readonly verbose?: boolean;
  /** A drop happened (the caller emits its JSON event). */
  readonly onDropped?: (d: SpoolDrop) => void;
}

export interface SpoolDrop {
  readonly keys: readonly string[];
  readonly frames: number;
  readonly bytes: number;
  readonly firstFrame: number;
  readonly lastFrame: number;
}

export interface SpoolStats {
  readonly uploadedSegments: number;
  readonly uploadedFrames: number;
  readonly pendingSegments: number;
  readonly pendingBytes: number;
  readonly maxBytes: number;
  readonly droppedSegments: number;
  readonly droppedFrames: number;
  readonly droppedBytes: number;
  /** The failure the uploader is retrying now, if any. */
  readonly failing: { readonly kind: UploadFailureKind; readonly message: string; readonly sinceMs: number; readonly attempts: number } | null;
}

export class SpoolQueue {
  private current: StreamState;
  private inFlight: string | null = null;
  private wake: (() => void) | undefined;
  private draining = false;
  private drainDeadlineMs = Infinity;
  private uploadedSegments = 0;
  private uploadedFrames = 0;
  private dropped = { segments: 0, frames: 0, bytes: 0 };
  private failing: SpoolStats['failing'] = null;
  private readonly stopRetries = new AbortController();
  private loop: Promise<void> | undefined;

  private readonly d: SpoolQueueDeps;

  constructor(state: StreamState, d: SpoolQueueDeps) {
    this.d = d;
    this.current = state;
  }

  get state(): StreamState {
    return this.current;
  }

  /** Changes the journal outside a segment (a timeline mark, a skip); persisted. */
  update(f: (s: StreamState) => StreamState): void {
    this.current = f(this.current);
    this.d.persist(this.current);
  }

  /** Journals a closed segment (persisted before any byte is sent), applies the bound, wakes the uploader. */
  add(segment: JournalSegment, f: (s: StreamState) => StreamState = (s) => s): void {
    this.current = f(closeSegment(this.current, segment));
    this.enforceBound();
    this.d.persist(this.current);
    this.wake?.();
  }

  private enforceBound(): void {
    const drop = segmentsOverBound(this.current.pending, this.d.maxBytes, this.inFlight);
    if (drop.length === 0) return;
    this.current = dropPending(this.current, new Set(drop.map((p) => p.key)));
    for (const p of drop) this.d.removeFile(p.file);
    const frames = drop.reduce((n, p) => n + p.frames, 0);
    const bytes = drop.reduce((n, p) => n + p.bytes, 0);
    this.dropped = { segments: this.dropped.segments + drop.length, frames: this.dropped.frames + frames, bytes: this.dropped.bytes + bytes };
    const first = drop[0]!.firstFrame;
    const last = drop.at(-1)!.firstFrame + drop.at(-1)!.frames - 1;
    this.d.log(
      `spool full (${formatBytes(spooledBytes(this.current))} waiting, bound ${formatBytes(this.d.maxBytes)}): dropped the oldest ${drop.length} segment(s), frames ${first}-${last} (${frames}, ${formatBytes(bytes)}); ` +
        `they become gaps. Dropped so far: ${this.dropped.segments} segment(s), ${this.dropped.frames} frame(s)` +
        (this.failing ? `; uploads fail: ${this.failing.message}` : ''),
    );
    this.d.onDropped?.({ keys: drop.map((p) => p.key), frames, bytes, firstFrame: first, lastFrame: last });
  }

  stats(): SpoolStats {
    return {
      uploadedSegments: this.uploadedSegments,
      uploadedFrames: this.uploadedFrames,
      pendingSegments: this.current.pending.length,
      pendingBytes: spooledBytes(this.current),
      maxBytes: this.d.maxBytes,
      droppedSegments: this.dropped.segments,
      droppedFrames: this.dropped.frames,
      droppedBytes: this.dropped.bytes,
      failing: this.failing,
    };
  }

  /** Starts the uploader (once). */
  start(): Promise<void> {
    this.loop ??= this.run();
    return this.loop;
  }

  /** Uploads what is journaled until it is all up or `drainMs` passed, then stops; resolves when the uploader stopped. */
  async drain(drainMs: number): Promise<void> {
    this.draining = true;
    this.drainDeadlineMs = this.d.now() + drainMs;
    // a retry that would sleep past the deadline ends now, not after its sleep
    setTimeout(() => this.stopRetries.abort(), Math.max(0, drainMs)).unref?.();
    this.wake?.();
    await this.start();
  }

  private async run(): Promise<void> {
    let attempt = 0;
    for (;;) {
      const p = this.current.pending[0];
      if (!p) {
        if (this.draining) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      this.inFlight = p.key;
      try {
        await this.d.put(p);
        this.inFlight = null;
        this.current = markUploaded(this.current, p.key);
        this.d.persist(this.current);
        this.d.removeFile(p.file);
        this.uploadedSegments++;
        this.uploadedFrames += p.frames;
        if (this.failing) {
          this.d.log(`uploads work again after ${((this.d.now() - this.failing.sinceMs) / 1000).toFixed(1)} s and ${this.failing.attempts} failed attempt(s); ${this.current.pending.length} segment(s) still waiting`);
          this.failing = null;
        }
        attempt = 0;
        if (this.d.verbose) this.d.log(`uploaded ${p.key}: frames ${p.firstFrame}-${p.firstFrame + p.frames - 1} (${p.frames}), ${formatBytes(p.bytes)}`);
      } catch (e) {
        this.inFlight = null;
        const kind = classifyUploadError(e);
        const message = `${(e as Error).name}: ${(e as Error).message}`;
        this.failing = { kind, message, sinceMs: this.failing?.sinceMs ?? this.d.now(), attempts: (this.failing?.attempts ?? 0) + 1 };
        const delay = backoffMs(attempt++, this.d.backoff);
        if (this.draining && this.d.now() + delay > this.drainDeadlineMs) return;
        const waiting = `${this.current.pending.length} segment(s), ${formatBytes(spooledBytes(this.current))} of ${formatBytes(this.d.maxBytes)}, wait in the spool`;
        this.d.log(`upload of ${p.key} failed (${message}): ${uploadFailureHint(kind, this.d.profile)} in ${(delay / 1000).toFixed(1)} s (attempt ${attempt}); ${waiting}`);
        await this.d.sleep(delay, this.stopRetries.signal);
        if (this.stopRetries.signal.aborted) return;
      }
    }
  }
}
