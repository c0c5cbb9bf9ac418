/**
 * Frame bytes fetched ahead: while a round runs, the worker receives the next messages and
 * starts their S3 GETs here, so the next round finds its first frames in memory instead of
 * waiting one GET latency (tens of ms in S3, and a GPU infers a frame in a few) before
 * its first inference.
 *
 * A hint, never a source of truth: the frame runner takes an entry if one is there and
 * fresh, and otherwise fetches as it always does, with its own error handling and
 * retries. A failed prefetch is forgotten, not reported; the real fetch reports it.
 * Memory is bounded by bytes (oldest entries go first) and entries expire, so frames that
 * wait in the reorder buffer are fetched again when their turn comes.
 *
 * Bytes that arrive while their entry is still held are passed to `onFetched`: the worker
 * hands them to the processor to decode ahead as well (vision/prepared-ahead.ts).
 *
 * Read ahead by predicted key (decision 39, read-ahead.ts): `readAhead` fetches frames
 * whose messages have not arrived yet, unconditionally, keeping the ETag S3 answered.
 * Such an entry is invisible to `take` until `confirm` sees its message: with the same
 * ETag its bytes are used; otherwise (another version, or a message without an ETag) the
 * frame is fetched again under the message's ETag, as any prefetch.
 *
 * Segments read ahead (decision 51, gpu-worker/sources/segment/segment-reader.ts `readAhead`):
 * `prefetchSegments` fetches encoded segments a video will decode next, under the ETag
 * their HEAD gave, within a byte budget of their own (`segmentReadAheadBytes`): they
 * neither evict frames nor are evicted by them, nor go to `onFetched` (they are no
 * images), nor are hedged (a segment's GET is not a frame's). The segment reader takes
 * them when it opens the segment's decoder; a failed one is forgotten, and the reader's
 * own GET reports it as it always has. `dropVideo` forgets a video's entries when the
 * worker lets the video go (its lease moved, or it was released).
 */
import type { FrameSource } from '../../../core/ingest/port.ts';
import { hedge } from './hedged-fetch.ts';

/** Most bytes held (by the sizes the S3 events gave); 10 frames of a few MB fit. */
export const PREFETCH_MAX_BYTES = 64 * 1024 * 1024;
/** Entries older than this are not used: a frame held back that long is fetched afresh. */
export const PREFETCH_MAX_AGE_MS = 10_000;
/**
 * The same for a segment read ahead: it waits for the segments before it to be decoded
 * (two 10-s segments of a backlog are a few rounds), and its GET was conditional on the
 * version described, so only memory is at stake, within its budget.
 */
export const SEGMENT_AHEAD_MAX_AGE_MS = 60_000;

interface Entry {
  readonly bytes: Promise<Uint8Array | undefined>;
  readonly eTag: string | undefined;
  readonly sizeBytes: number;
  readonly startedAtMs: number;
  /** Evicted or expired before use: its bytes are not worth decoding. */
  dropped: boolean;
  /** The GET has answered (bytes or failure). */
  settled: boolean;
  /** Its bytes go to `onFetched` (only frames the worker said it will run). */
  announced: boolean;
  /** Read ahead by predicted key and not yet confirmed by a message: the version S3 answered. */
  readonly predicted?: Promise<Version | undefined>;
  /** An encoded segment read ahead (`prefetchSegments`): counted in its own budget, never announced nor hedged. */
  readonly segment?: boolean;
  /** The video it belongs to, when the caller said (`dropVideo`). */
  readonly videoId?: string;
}

type Version = { readonly bytes: Uint8Array; readonly eTag: string | undefined };

export interface FramePrefetchOptions {
  readonly now?: () => number;
  /** Called with each prefetched object's bytes as they arrive, unless its entry was dropped first. */
  readonly onFetched?: (bytes: Uint8Array) => void;
  /**
   * Called with the bytes of each object read ahead by predicted key as they arrive,
   * before any message confirms them (the worker detects them ahead, decision 42). The
   * same byte array is what a round gets once a message confirms the entry's ETag.
   */
  readonly onReadAhead?: (bytes: Uint8Array, key: string) => void;
  /**
   * `fetchHedgeMs` (decision 38): a round that takes an entry whose GET has not answered
   * this long after it started sends the GET once more and uses the first answer. Only
   * GETs a round waits for are hedged: a slow prefetch that lands before its round costs nothing.
   */
  readonly hedgeAfterMs?: number;
}

/** What to fetch ahead: an object, the size its event gave, and its ETag when the event gave one. */
export interface PrefetchRef {
  readonly bucket: string;
  readonly key: string;
  readonly sizeBytes: number;
  /**
   * The version the notification announced: the GET is conditional on it, so an entry
   * never holds bytes of an object overwritten since (that GET fails, and the runner
   * fetches the frame itself).
   */
  readonly eTag?: string;
  /** The video it belongs to: its entry is forgotten by `dropVideo`. */
  readonly videoId?: string;
}

export class FramePrefetch {
  private readonly frames: FrameSource;
  private readonly now: () => number;
  private readonly onFetched: ((bytes: Uint8Array) => void) | undefined;
  private readonly onReadAhead: ((bytes: Uint8Array, key: string) => void) | undefined;
  private readonly hedgeAfterMs: number;
  /** Insertion order is age order: the oldest entry is evicted first. */
  private readonly entries = new Map<string, Entry>();
  private heldBytes = 0;
  /** Bytes of segments read ahead held (their own budget, `prefetchSegments`). */
  private segmentBytes = 0;
  /** GETs started, and entries used (for tests and the benchmark). */
  started = 0;
  used = 0;

  constructor(frames: FrameSource, options: FramePrefetchOptions = {}) {
    this.frames = frames;
    this.now = options.now ?? Date.now;
    this.onFetched = options.onFetched;
    this.onReadAhead = options.onReadAhead;
    this.hedgeAfterMs = options.hedgeAfterMs ?? 0;
  }

  /**
   * Starts the GETs of `refs` not already held, and hands their bytes to `onFetched` as
   * they arrive (also for entries already held, e.g. read ahead and confirmed); a ref
   * larger than the whole budget is left to the runner.
   */
  prefetch(refs: readonly PrefetchRef[]): void {
    this.dropExpired();
    this.confirm(refs);
    for (const ref of refs) {
      const id = idOf(ref.bucket, ref.key);
      const held = this.entries.get(id);
      if (held) {
        this.announce(held);
        continue;
      }
      if (ref.sizeBytes <= 0 || ref.sizeBytes > PREFETCH_MAX_BYTES) continue;
      const entry = this.add(id, ref.sizeBytes, ref.eTag, this.frames.get(ref.bucket, ref.key, ref.eTag).catch(() => undefined), this.now(), undefined, ref.videoId);
      this.announce(entry);
      this.started++;
    }
  }

  /**
   * Starts the GETs of segments read ahead (decision 51), in the order given, while their
   * bytes fit `budgetBytes` with those already held; a ref already held (a segment or
   * not) is left as it is, one that does not fit is skipped (its round fetches it). Each
   * GET is conditional on the ref's ETag, the version its HEAD described: an entry never
   * holds other bytes. A failed GET is forgotten, not reported. Returns the GETs started.
   */
  prefetchSegments(refs: readonly PrefetchRef[], budgetBytes: number): number {
    this.dropExpired();
    let started = 0;
    for (const ref of refs) {
      const id = idOf(ref.bucket, ref.key);
      if (this.entries.has(id) || ref.sizeBytes <= 0 || this.segmentBytes + ref.sizeBytes > budgetBytes) continue;
      const bytes = this.frames.get(ref.bucket, ref.key, ref.eTag).catch(() => {
        this.segmentsFailed++;
        return undefined;
      });
      this.add(id, ref.sizeBytes, ref.eTag, bytes, this.now(), undefined, ref.videoId, true);
      this.segmentsStarted++;
      started++;
    }
    return started;
  }

  /** Segments read ahead: GETs started, taken by the reader, failed, and dropped unused (expired, or their video let go). */
  segmentsStarted = 0;
  segmentsUsed = 0;
  segmentsFailed = 0;
  segmentsDropped = 0;

  /** Whether an entry (of any kind) is held for the object. */
  holds(bucket: string, key: string): boolean {
    return this.entries.has(idOf(bucket, key));
  }

  /** Bytes of segments read ahead held now. */
  get segmentBytesHeld(): number {
    return this.segmentBytes;
  }

  /**
   * Forgets every entry of a video the worker let go (its lease moved, or it was
   * released): their bytes are not worth holding, and nothing of them may reach a round.
   */
  dropVideo(videoId: string): void {
    for (const [id, entry] of this.entries) {
      if (entry.videoId !== videoId) continue;
      if (entry.predicted) this.readAheadMissed++;
      if (entry.segment) this.segmentsDropped++;
      entry.dropped = true;
      this.remove(id, entry);
    }
  }

  /**
   * Reads ahead by predicted key (read-ahead.ts): the last key alone, then, if it exists,
   * the rest at once. Cameras upload in order, so the last one's existence vouches for the
   * others, and a prediction past a video's end, over skipped numbers or ahead of the
   * uploads costs one GET. Keys already held are skipped. `sizeBytes` is the budget each
   * takes until its message says its size.
   */
  readAhead(bucket: string, keys: readonly string[], sizeBytes: number): void {
    this.dropExpired();
    const fresh = keys.filter((key) => !this.entries.has(idOf(bucket, key)));
    // Guesses never push out frames a receive asked for: they only use what is free of half the budget.
    if (fresh.length === 0 || sizeBytes <= 0 || this.heldBytes + sizeBytes * fresh.length > PREFETCH_MAX_BYTES / 2) return;
    const probe = fresh[fresh.length - 1]!;
    const rest = fresh.slice(0, -1);
    const start = (key: string): Promise<Version | undefined> => {
      this.readAheadStarted++;
      // Absent (not uploaded yet, past the end, numbers skipped) or failed: a wasted GET, nothing more.
      const version = this.frames.getVersion(bucket, key).catch(() => {
        this.readAheadMissed++;
        return undefined;
      });
      const id = idOf(bucket, key);
      const entry = this.add(id, sizeBytes, undefined, version.then((v) => v?.bytes), this.now(), version);
      // Nothing to confirm: forgotten at once (counted once, above), and its message's frame is fetched as usual.
      void version.then((v) => {
        if (this.entries.get(id) !== entry) return;
        if (!v) this.remove(id, entry);
        // A hint must never fail the worker, whatever the callback does.
        else if (this.onReadAhead) {
          try {
            this.onReadAhead(v.bytes, key);
          } catch {
            // ignored: the frame is detected in its round
          }
        }
      });
      return version;
    };
    void start(probe).then((v) => {
      if (v) for (const key of rest) if (!this.entries.has(idOf(bucket, key))) start(key);
    });
  }

  /**
   * Confirms entries read ahead whose messages `refs` are: an entry whose ETag is the
   * message's is used as it is; any other is fetched again under the message's ETag (or
   * unconditionally when the message has none), like a prefetch. Other refs are ignored.
   */
  confirm(refs: readonly PrefetchRef[]): void {
    for (const ref of refs) {
      const id = idOf(ref.bucket, ref.key);
      const held = this.entries.get(id);
      if (!held?.predicted) continue;
      this.remove(id, held);
      const bytes = held.predicted.then((v) => {
        if (v && ref.eTag !== undefined && v.eTag === ref.eTag) {
          this.readAheadUsed++;
          return v.bytes;
        }
        if (v) this.readAheadMissed++;
        return this.frames.get(ref.bucket, ref.key, ref.eTag).catch(() => undefined);
      });
      this.add(id, ref.sizeBytes > 0 ? ref.sizeBytes : held.sizeBytes, ref.eTag, bytes, held.startedAtMs);
    }
  }

  /** Reads ahead started, confirmed with their message's ETag, and wasted (absent, failed, or another version). */
  readAheadStarted = 0;
  readAheadUsed = 0;
  readAheadMissed = 0;

  private add(
    id: string,
    sizeBytes: number,
    eTag: string | undefined,
    bytes: Promise<Uint8Array | undefined>,
    startedAtMs: number,
    predicted?: Promise<Version | undefined>,
    videoId?: string,
    segment = false,
  ): Entry {
    // Segments have their own budget, checked by the caller: they neither evict frames nor are evicted for them.
    while (!segment && this.heldBytes + sizeBytes > PREFETCH_MAX_BYTES && this.frameEntries() > 0) this.evictOldest();
    const entry: Entry = {
      bytes,
      eTag,
      sizeBytes,
      startedAtMs,
      dropped: false,
      settled: false,
      announced: false,
      ...(predicted ? { predicted } : {}),
      ...(videoId !== undefined ? { videoId } : {}),
      ...(segment ? { segment } : {}),
    };
    void bytes.then(() => {
      entry.settled = true;
    });
    this.entries.set(id, entry);
    if (segment) this.segmentBytes += sizeBytes;
    else this.heldBytes += sizeBytes;
    return entry;
  }

  /** Entries that are not segments (those the frame budget evicts). */
  private frameEntries(): number {
    if (this.segmentBytes === 0) return this.entries.size;
    let n = 0;
    for (const e of this.entries.values()) if (!e.segment) n++;
    return n;
  }

  /** Hands the entry's bytes to `onFetched` once they arrive, unless it is dropped first. */
  private announce(entry: Entry): void {
    if (entry.announced || entry.predicted || entry.segment) return;
    entry.announced = true;
    // Attached before any take() awaits the bytes, so it runs first even for an entry taken in flight.
    // A hint must never fail the worker, whatever the callback does.
    entry.bytes
      .then((b) => {
        if (b && !entry.dropped) this.onFetched?.(b);
      })
      .catch(() => undefined);
  }

  /** The object's bytes if a fresh prefetch of it succeeded; undefined otherwise. The entry is used up either way. */
  async take(bucket: string, key: string): Promise<Uint8Array | undefined> {
    const id = idOf(bucket, key);
    const entry = this.entries.get(id);
    // A read ahead nobody confirmed is not this message's version yet.
    if (!entry || entry.predicted) return undefined;
    this.remove(id, entry);
    if (this.expired(entry)) {
      if (entry.segment) this.segmentsDropped++;
      return undefined;
    }
    const bytes = entry.settled || entry.segment || this.hedgeAfterMs <= 0 ? await entry.bytes : await this.hedged(bucket, key, entry);
    if (bytes && entry.segment) this.segmentsUsed++;
    else if (bytes) this.used++;
    return bytes;
  }

  /** Hedges GETs sent (for tests and the benchmark). */
  hedges = 0;

  /**
   * The entry's bytes, or a second GET's if the first has not answered `hedgeAfterMs`
   * after it started: whichever answers first (hedged-fetch.ts {@link hedge}). Undefined
   * once every GET sent has failed (the runner then fetches the frame itself, with its own retries).
   */
  private hedged(bucket: string, key: string, entry: Entry): Promise<Uint8Array | undefined> {
    // The entry's promise reads a failed GET as undefined; the hedge needs it as a failure.
    const first = entry.bytes.then((bytes) => bytes ?? Promise.reject(new Error('prefetch failed')));
    const again = () => {
      this.hedges++;
      return this.frames.get(bucket, key, entry.eTag);
    };
    return hedge(first, entry.startedAtMs + this.hedgeAfterMs - this.now(), again).catch(() => undefined);
  }

  /** Entries held now. */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Entries nobody took in time (frames held in the reorder buffer, duplicates). Every entry
   * is looked at: a confirmed read ahead is re-added with its original start, so the map's
   * order is not the order of starts, and stopping at the first fresh entry left expired
   * ones counted in `heldBytes`, which could switch reading ahead off for good (issue 32).
   */
  private dropExpired(): void {
    for (const [id, entry] of this.entries) {
      if (!this.expired(entry)) continue;
      if (entry.predicted) this.readAheadMissed++;
      if (entry.segment) this.segmentsDropped++;
      entry.dropped = true;
      this.remove(id, entry);
    }
  }

  private expired(entry: Entry): boolean {
    return this.now() - entry.startedAtMs > (entry.segment ? SEGMENT_AHEAD_MAX_AGE_MS : PREFETCH_MAX_AGE_MS);
  }

  /** The oldest entry that is not a segment; only called while one is held. */
  private evictOldest(): void {
    for (const [id, entry] of this.entries) {
      if (entry.segment) continue;
      if (entry.predicted) this.readAheadMissed++;
      entry.dropped = true;
      this.remove(id, entry);
      return;
    }
  }

  private remove(id: string, entry: Entry): void {
    this.entries.delete(id);
    if (entry.segment) this.segmentBytes -= entry.sizeBytes;
    else this.heldBytes -= entry.sizeBytes;
  }
}

function idOf(bucket: string, key: string): string {
  return `${bucket}/${key}`;
}
