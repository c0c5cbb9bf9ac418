/**
 * The uploader: a pool of lanes takes a plan's items in due order, each lane waiting for
 * its item's due time (in short steps, so a stop is not held up by a far-off due time),
 * then running the scenario's `put`. What a put does (a PUT, a PUT and a message, a
 * corrupt body, a delete later) is the scenario's; the pool only keeps time.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { endMarkerKey } from '../../core/ingest/keys.ts';
import { FRAMES_METADATA_KEY, segmentKey } from '../../core/ingest/segment-keys.ts';
import type { LocalStack } from '../../local/stack.ts';
import { sleep } from './main.ts';

/** An item of an upload plan: when it may go, in ms after the upload clock starts. */
export interface Due {
  readonly dueMs: number;
}

/** A running upload plan. */
export interface Uploads {
  /** The upload clock: when the plan started (ms since the epoch). */
  readonly clockMs: number;
  /** When the last lane finished; undefined while uploading (or after an error). */
  readonly doneMs: () => number | undefined;
  /** The first put that threw, if any (the lanes stop then). */
  readonly error: () => unknown;
  /** Resolves when every lane has stopped; never rejects. */
  readonly finished: Promise<void>;
  /** Stops the lanes before their next item. */
  stop(): void;
  readonly stopped: () => boolean;
}

/** Waits until `clockMs + atMs`, in steps of at most 500 ms; false when `stopped` came first. */
export async function waitUntil(clockMs: number, atMs: number, stopped: () => boolean): Promise<boolean> {
  for (let wait = clockMs + atMs - Date.now(); wait > 0 && !stopped(); wait = clockMs + atMs - Date.now()) await sleep(Math.min(wait, 500));
  return !stopped();
}

/**
 * Runs `plan` (sorted by `dueMs`) on `lanes` parallel lanes; `also` stops them too (an
 * interrupt). The clock starts now.
 */
export function runUploads<U extends Due>(plan: readonly U[], lanes: number, put: (item: U) => Promise<void>, also: () => boolean = () => false): Uploads {
  const clockMs = Date.now();
  let next = 0;
  let stop = false;
  let error: unknown;
  let doneMs: number | undefined;
  const stopped = () => stop || also() || error !== undefined;
  const lane = async () => {
    while (!stopped() && next < plan.length) {
      const item = plan[next++]!;
      if (!(await waitUntil(clockMs, item.dueMs, stopped))) break;
      await put(item);
    }
  };
  const finished = Promise.all(Array.from({ length: lanes }, lane)).then(
    () => {
      doneMs = Date.now();
    },
    (e: unknown) => {
      error = e;
    },
  );
  return {
    clockMs,
    doneMs: () => doneMs,
    error: () => error,
    finished,
    stop: () => {
      stop = true;
    },
    stopped,
  };
}

/** PUTs one object into the stack's bucket. */
export async function putObject(stack: LocalStack, key: string, body: Uint8Array | string, contentType?: string): Promise<void> {
  await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: key, Body: body, ...(contentType ? { ContentType: contentType } : {}) }));
}

/** PUTs an MPEG-TS segment covering frames `[firstFrame, firstFrame + frames)`, its count declared (`x-amz-meta-frames`) as the CLI does; returns its key. */
export async function putSegmentObject(stack: LocalStack, videoId: string, firstFrame: number, body: Uint8Array, frames: number): Promise<string> {
  const key = segmentKey(videoId, firstFrame, 'mpegts');
  await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: key, Body: body, ContentType: 'video/mp2t', Metadata: { [FRAMES_METADATA_KEY]: String(frames) } }));
  return key;
}

/**
 * Counts a plan's uploads per video down; after a video's last one, PUTs its `_end`
 * marker (body: `endFrame`). Call the returned function after each upload.
 */
export function endMarkers(stack: LocalStack, plan: readonly { readonly videoId: string }[], endFrame: number | ((videoId: string) => number), onPut?: (videoId: string) => void): (videoId: string) => Promise<void> {
  const remaining = new Map<string, number>();
  for (const u of plan) remaining.set(u.videoId, (remaining.get(u.videoId) ?? 0) + 1);
  return async (videoId) => {
    const left = remaining.get(videoId)! - 1;
    remaining.set(videoId, left);
    if (left !== 0) return;
    await putObject(stack, endMarkerKey(videoId), String(typeof endFrame === 'number' ? endFrame : endFrame(videoId)));
    onPut?.(videoId);
  };
}
