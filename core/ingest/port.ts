/**
 * The ingest port: the slot queues frames travel through (router -> worker), and the frame
 * source the worker reads bytes and listings from. No SDK here.
 *
 * Implementations: SQS FIFO (core/ingest/sqs/slot-queues.ts) and S3 (core/ingest/s3/frame-store.ts),
 * built by composition roots only; in tests the same adapters run over the in-memory SQS
 * FIFO model and S3 twin in core/ingest/memory/.
 */
import type { SlotMessage } from './messages.ts';
import type { FrameRef } from '../ordering/sequencer.ts';

// ---------------------------------------------------------------------------- slot queue

/** A message for a slot queue. */
export interface OutgoingMessage {
  readonly message: SlotMessage;
  /**
   * Gives a deliberate re-send a fresh deduplication id; written into the body as well
   * (replacing any tag the message had), so forwards of it keep the tag.
   */
  readonly replayTag?: string;
}

/** A message as a slot queue delivered it. */
export interface ReceivedMessage {
  readonly messageId: string;
  /** Names this delivery: deletes and visibility changes take it; a later delivery gets a new one. */
  readonly receiptHandle: string;
  readonly body: string;
  readonly receiveCount: number;
  /** FIFO message group (the video id). */
  readonly groupId: string;
  /** When the queue accepted the message (epoch ms): the worker's `SlotMessageAgeMs` is now minus the oldest. */
  readonly sentAtMs?: number;
}

/**
 * Per-entry outcome of a batched send, in input order. A failure keeps what failed as
 * `cause`: the thrown error of a failed call, or `{ name: Code, senderFault }` of a failed
 * entry, so callers can tell an outage (throttling, 5xx) from a refused message.
 */
export type SendOutcome = { readonly ok: true } | { readonly ok: false; readonly error: string; readonly cause?: unknown };

/** One visibility change of a received message (the router's back-off of an ingest record). */
export interface VisibilityChange {
  readonly receiptHandle: string;
  readonly visibilitySeconds: number;
}

/**
 * The FIFO queue of each slot: group = video (so one video's frames are delivered in order
 * and never to two consumers at once), deduplication id = video and frame.
 */
export interface SlotQueue {
  /** Sends in order; one outcome per message. Never throws for a refused message or a failed call: see {@link SendOutcome}. */
  send(slot: number, messages: readonly OutgoingMessage[]): Promise<SendOutcome[]>;
  /** Receives up to `maxMessages` (at most 10), waiting up to `waitSeconds` for the first. */
  receive(slot: number, maxMessages: number, waitSeconds: number, abortSignal?: AbortSignal): Promise<ReceivedMessage[]>;
  /** Deletes received messages; how many deletes failed (those will be redelivered and deduplicated). */
  delete(slot: number, receiptHandles: readonly string[]): Promise<number>;
  /** Sets received messages' visibility timeout; the handles refused one by one. */
  extendVisibility(slot: number, receiptHandles: readonly string[], seconds: number): Promise<string[]>;
  /** Parks an unusable message in the slot's dead-letter queue with the reason, so it never blocks its group. */
  deadLetter(slot: number, body: string, reason: string, groupId: string): Promise<void>;
  /** Messages visible in the slot's dead-letter queue. */
  dlqDepth(slot: number): Promise<number>;
  /** Visible and in-flight message counts of the slot's queue. */
  depth(slot: number): Promise<{ visible: number; inFlight: number }>;
}

// ---------------------------------------------------------------------------- frame source

/** Thrown by a {@link FrameSource} read when the object does not exist (deleted after upload, or never there). */
export class ObjectMissingError extends Error {
  override name = 'ObjectMissingError';
}

/** A listing of a video's frames: see {@link FrameSource.listFrames}. */
export interface FrameListing {
  readonly frames: FrameRef[];
  /** The listing reached its end (coarse: prefer `coveredThrough`). */
  readonly complete: boolean;
  /** Every existing frame from `fromFrame` up to this number is in `frames`. */
  readonly coveredThrough: number;
  /** Requests the listing made. */
  readonly requests: number;
}

/** What a HEAD of an object says: enough to plan a segment without its bytes. */
export interface ObjectHead {
  readonly sizeBytes: number;
  /** Quotes removed, as S3 events write it. */
  readonly eTag: string | undefined;
  /** User metadata (`x-amz-meta-*`), keys lower case. */
  readonly metadata: Readonly<Record<string, string>>;
}

/** Where frames, end-of-stream markers and listings come from (the bucket is the truth; notifications are hints). */
export interface FrameSource {
  /**
   * The object's bytes; {@link ObjectMissingError} when it does not exist. With `ifMatch`
   * (an ETag), only that version: an object overwritten since fails instead of answering other bytes.
   */
  get(bucket: string, key: string, ifMatch?: string): Promise<Uint8Array>;
  /** The object's bytes and its ETag (quotes removed), unconditionally. */
  getVersion(bucket: string, key: string): Promise<{ bytes: Uint8Array; eTag: string | undefined }>;
  /** The object's size, ETag and user metadata; {@link ObjectMissingError} when it does not exist. */
  head(bucket: string, key: string): Promise<ObjectHead>;
  /** The object's bytes as UTF-8 text. */
  getText(bucket: string, key: string): Promise<string>;
  /**
   * The frames of a video that exist at or after `fromFrame`, listed (strongly consistent),
   * in at most `maxPages` requests, fewer once the listing covers `throughFrame`.
   */
  listFrames(bucket: string, videoId: string, fromFrame: number, padWidth?: number, maxPages?: number, throughFrame?: number): Promise<FrameListing>;
}

// ---------------------------------------------------------------------------- operator operations

/** An object stored under a video's prefix (a frame, a segment, the end marker). */
export interface StoredObject {
  readonly key: string;
  readonly sizeBytes: number;
  /** Quotes removed. */
  readonly eTag: string;
}

/**
 * A video's objects as the operator operations (core/commit/operations/) see them: the
 * bucket is the truth (S3 LIST is strongly consistent). Implementation: S3
 * (core/ingest/s3/video-objects.ts), over S3 or its twin.
 */
export interface VideoObjects {
  /** Every object under `frames/{videoId}/`, frames and the end marker, in key order. */
  list(videoId: string): Promise<StoredObject[]>;
  /** A segment's declared frame count (`x-amz-meta-frames`); undefined when it declares none. */
  declaredFrames(key: string): Promise<number | undefined>;
}

/**
 * Sends stored objects through the pipeline again as if uploaded: S3 ObjectCreated events
 * on the ingest queue, tagged with a replay tag so FIFO deduplication (queue-wide, 5
 * minutes) keeps them and the router writes the tag into the slot messages. Implementation:
 * SQS (core/ingest/sqs/upload-resender.ts).
 */
export interface UploadResender {
  /**
   * Sends `objects` in order; `sent` counts those the queue took before the first refusal,
   * `failure` says why it stopped (absent when all went).
   */
  resend(objects: readonly StoredObject[], replayTag: string, configurationId: string): Promise<{ readonly sent: number; readonly failure?: string }>;
}
