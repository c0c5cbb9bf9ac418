/**
 * Messages on the slot FIFO queues (router -> worker, and worker -> worker forwards).
 * MessageGroupId is the video id; MessageDeduplicationId is {@link dedupId}.
 */
import { createHash } from 'node:crypto';
import { VIDEO_ID_PATTERN } from './keys.ts';
import { parseSourceKey } from './segment-keys.ts';

export interface FrameMessage {
  readonly kind: 'frame';
  readonly videoId: string;
  readonly frame: number;
  readonly bucket: string;
  readonly key: string;
  /** Object size from the S3 event, in bytes. */
  readonly sizeBytes: number;
  /** When S3 says the object was created (ISO 8601); used for end-to-end latency. */
  readonly eventTime: string;
  /**
   * The object's ETag from the S3 event, when it gave one: frames fetched ahead are kept
   * under it, so bytes of an object overwritten since are never taken for this upload.
   * For an encoded segment it is also part of the deduplication id (as an end marker's
   * is): a segment re-uploaded with other bytes is a new message, which the worker warns
   * about (`SegmentsReuploaded`, with the replay command), while a duplicated notification
   * of the same upload is still dropped. An image's is not: an overwritten frame is a
   * duplicate, told apart by its record.
   */
  readonly eTag?: string;
  /**
   * Set on an operator's deliberate re-send (`affinity replay`): part of the deduplication
   * id, so the re-send is not swallowed by FIFO deduplication (queue-wide, 5 minutes).
   * Carried in the body so that a worker forwarding the message keeps it.
   */
  readonly replayTag?: string;
}

export interface EndMessage {
  readonly kind: 'end';
  readonly videoId: string;
  readonly bucket: string;
  readonly key: string;
  readonly eventTime: string;
  /**
   * The marker object's ETag from the S3 event, when it gave one: part of the
   * deduplication id, so a marker re-uploaded with another body (a corrected last frame)
   * is a new message and not swallowed by FIFO deduplication, while a duplicated
   * notification of the same upload still is.
   */
  readonly eTag?: string;
  /** See {@link FrameMessage.replayTag}. */
  readonly replayTag?: string;
}

export type SlotMessage = FrameMessage | EndMessage;

/** SQS limit on MessageDeduplicationId and MessageGroupId. */
export const SQS_MAX_ID_LENGTH = 128;
/** What SQS accepts in MessageDeduplicationId and MessageGroupId: alphanumerics and ASCII punctuation. */
export const SQS_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

const SHA256_HEX_LENGTH = 64;

/**
 * FIFO deduplication id of a message: `{videoId}:{frame}` (`{videoId}:end` for the end
 * marker), with `~{ETag}` after the position for an end marker or a segment that carries
 * its ETag (`cam-1:45~9b2c...`: one id per upload, so a re-upload is not swallowed),
 * plus `:{replayTag}` for a deliberate re-send (`replayTag` argument, else the message's
 * own `replayTag`).
 *
 * Always a valid SQS id (1-128 characters of `[\x21-\x7e]`). When the readable form does
 * not fit (a video id of up to 128 characters leaves no room for `:frame`; a long or
 * unusual replay tag), the id is `{videoId prefix}:{frame|end}#{sha256 hex}` instead: the
 * digest covers video id, frame and tag, so the id is stable for the same message and
 * distinct for distinct ones. The two forms cannot collide: after the video id (or its
 * prefix) and `:{frame|end}`, a readable id continues with `:` or ends, a hashed one
 * continues with `#`.
 */
export function dedupId(m: SlotMessage, replayTag?: string): string {
  const tag = replayTag || m.replayTag || undefined;
  // An end marker's and a segment's version (the ETag's letters and digits) is part of its
  // position: see EndMessage.eTag and FrameMessage.eTag. An image's is not.
  const version = m.eTag && (m.kind === 'end' || isSegmentKey(m.key)) ? m.eTag.replace(/[^A-Za-z0-9-]/g, '') : '';
  const at = m.kind === 'frame' ? String(m.frame) : 'end';
  const position = version ? `${at}~${version}` : at;
  const readable = tag ? `${m.videoId}:${position}:${tag}` : `${m.videoId}:${position}`;
  if (readable.length <= SQS_MAX_ID_LENGTH && VIDEO_ID_PATTERN.test(m.videoId) && (tag === undefined || SQS_ID_PATTERN.test(tag))) {
    return readable;
  }
  const digest = createHash('sha256')
    .update(JSON.stringify([m.videoId, m.kind === 'frame' ? m.frame : 'end', tag ?? null, ...(version ? [version] : [])]))
    .digest('hex');
  // Keep as much of the video id as fits, for people reading queues; only `[A-Za-z0-9._-]`.
  const room = Math.max(0, SQS_MAX_ID_LENGTH - SHA256_HEX_LENGTH - position.length - 2);
  const prefix = m.videoId.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, room);
  return `${prefix}:${position}#${digest}`.slice(-SQS_MAX_ID_LENGTH);
}

/** Whether a key names an encoded segment (not an image): its version is part of its message's deduplication id. */
function isSegmentKey(key: string): boolean {
  const p = parseSourceKey(key);
  return p.kind === 'source' && p.container !== 'image';
}

/** Parses a slot-queue body; returns undefined for anything that is not a well-formed message. */
export function parseSlotMessage(body: string): SlotMessage | undefined {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const m = v as Record<string, unknown>;
  if (typeof m.videoId !== 'string' || typeof m.bucket !== 'string' || typeof m.key !== 'string') return undefined;
  if (typeof m.eventTime !== 'string') return undefined;
  if (m.replayTag !== undefined && typeof m.replayTag !== 'string') return undefined;
  if (m.kind === 'end') return m as unknown as EndMessage;
  if (m.kind === 'frame' && Number.isSafeInteger(m.frame) && typeof m.sizeBytes === 'number') return m as unknown as FrameMessage;
  return undefined;
}
