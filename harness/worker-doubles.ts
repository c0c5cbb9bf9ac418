/**
 * Test doubles and inputs for the worker harness (harness/worker-harness.ts, which
 * re-exports them): a FrameStore that fails chosen keys, one that counts reads, S3-shaped errors, a processor
 * wrapper, a bounded shuffle of arrival order, and a small JPEG to upload as a frame.
 */
import { S3ServiceException } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { FrameStore } from '../core/ingest/s3/frame-store.ts';
import type { FrameInput, FrameProcessor } from '../core/ports.ts';
import { SimulatedGpuProcessor } from '../lab/worker/simulated-gpu.ts';

/** A FrameStore that counts every read of each key: GETs and reads ahead by predicted key (decision 39) alike. */
export class CountingFrameStore extends FrameStore {
  readonly reads = new Map<string, number>();
  readonly #inner: FrameStore;

  constructor(inner: FrameStore) {
    super(undefined as never);
    this.#inner = inner;
  }

  override get(bucket: string, key: string, ifMatch?: string): Promise<Uint8Array> {
    this.count(key);
    return this.#inner.get(bucket, key, ifMatch);
  }

  override getVersion(bucket: string, key: string): Promise<{ bytes: Uint8Array; eTag: string | undefined }> {
    this.count(key);
    return this.#inner.getVersion(bucket, key);
  }

  private count(key: string): void {
    this.reads.set(key, (this.reads.get(key) ?? 0) + 1);
  }
}

/** Decides whether a FrameStore `get` fails: return the error to throw, or undefined. */
export type FrameFault = (bucket: string, key: string, attempt: number) => Error | undefined;

/** A FrameStore whose reads fail for the keys a {@link FrameFault} chooses. */
export class FaultyFrameStore extends FrameStore {
  private readonly fault: FrameFault;
  private readonly attempts = new Map<string, number>();

  constructor(s3: ConstructorParameters<typeof FrameStore>[0], fault: FrameFault) {
    super(s3);
    this.fault = fault;
  }

  /** How many times `get` was asked for `key` (failed or not). */
  attemptsFor(key: string): number {
    return this.attempts.get(key) ?? 0;
  }

  override async get(bucket: string, key: string): Promise<Uint8Array> {
    const attempt = (this.attempts.get(key) ?? 0) + 1;
    this.attempts.set(key, attempt);
    const e = this.fault(bucket, key, attempt);
    if (e) throw e;
    return super.get(bucket, key);
  }
}

/** An error shaped like the S3 client's service exceptions (`name` = S3's error code). */
export function s3Error(name: string, message = name, httpStatusCode = 403): S3ServiceException {
  return new S3ServiceException({ name, $fault: httpStatusCode >= 500 ? 'server' : 'client', $metadata: { httpStatusCode }, message });
}

/**
 * A FrameProcessor that delegates to `inner` except for the methods given, for a
 * {@link HarnessWorkerOptions.processor} wrapper (e.g. to record or fail chosen frames):
 *   processor: (inner) => wrapProcessor(inner, { process: (f) => { seen.push(...f); return inner.process(f); } })
 */
export function wrapProcessor(inner: FrameProcessor, overrides: Partial<Omit<FrameProcessor, 'description' | 'provider'>>): FrameProcessor {
  return {
    get description() {
      return inner.description;
    },
    get provider() {
      return inner.provider;
    },
    start: overrides.start ?? (() => inner.start()),
    openVideo: overrides.openVideo ?? ((videoId, snapshot) => inner.openVideo(videoId, snapshot)),
    process: overrides.process ?? ((frames) => inner.process(frames)),
    processLate: overrides.processLate ?? ((frames) => inner.processLate(frames)),
    snapshot: overrides.snapshot ?? ((videoId, maxBytes) => inner.snapshot(videoId, maxBytes)),
    closeVideo: overrides.closeVideo ?? ((videoId) => inner.closeVideo(videoId)),
    stop: overrides.stop ?? (() => inner.stop()),
    ...(overrides.prepareAhead || inner.prepareAhead ? { prepareAhead: overrides.prepareAhead ?? ((image: Uint8Array) => inner.prepareAhead!(image)) } : {}),
    ...(overrides.detectAhead || inner.detectAhead ? { detectAhead: overrides.detectAhead ?? ((frame: FrameInput) => inner.detectAhead!(frame)) } : {}),
  };
}

/** Deterministic shuffle of each consecutive window of `window` items (arrival out of order, but bounded). */
export function shuffledWithinWindows<T>(items: readonly T[], window: number, seed: number): T[] {
  const out: T[] = [];
  let s = seed;
  for (let start = 0; start < items.length; start += window) {
    const chunk = items.slice(start, start + window);
    for (let i = chunk.length - 1; i > 0; i--) {
      s = (s * 1103515245 + 12345) & 0x7fffffff;
      const j = s % (i + 1);
      [chunk[i], chunk[j]] = [chunk[j]!, chunk[i]!];
    }
    out.push(...chunk);
  }
  return out;
}

let imageCache: Buffer | undefined;
/** A small valid JPEG. */
export async function testJpeg(): Promise<Buffer> {
  imageCache ??= await sharp({ create: { width: 32, height: 24, channels: 3, background: { r: 40, g: 160, b: 90 } } })
    .jpeg()
    .toBuffer();
  return imageCache;
}

/** Size of the JPEG {@link testJpeg} returns, once it has been made (undefined before). */
export function testJpegBytes(): number | undefined {
  return imageCache?.byteLength;
}

/**
 * The track IDs per frame that a simulated GPU gives `frames` of `videoId` run in order,
 * alone, on {@link testJpeg}: what a worker with detect ahead (decision 42) must record.
 */
export async function inOrderTrackIds(videoId: string, frames: readonly number[]): Promise<number[][]> {
  const reference = new SimulatedGpuProcessor({ batchSize: 8, maxBatchWaitMs: 1 });
  reference.openVideo(videoId, undefined);
  const image = await testJpeg();
  const outcomes = await reference.process(frames.map((frame) => ({ videoId, frame, image })));
  return outcomes.map((o) => (o.status === 'ok' ? trackIds(o.detections) : []));
}

/** A frame's detections as their track IDs, in order. */
export const trackIds = (detections: readonly { readonly trackId: number }[]): number[] => detections.map((d) => d.trackId);
