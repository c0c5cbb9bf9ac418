/**
 * Messages on the slot FIFO queues (router -> worker, and worker -> worker forwards).
 * MessageGroupId is the video id; MessageDeduplicationId is {@link dedupId}.
 */
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
}

export interface EndMessage {
  readonly kind: 'end';
  readonly videoId: string;
  readonly bucket: string;
  readonly key: string;
  readonly eventTime: string;
}

export type SlotMessage = FrameMessage | EndMessage;

/** FIFO deduplication id; `replayTag` gives a deliberate re-send a fresh id (dedup is queue-wide for 5 minutes). */
export function dedupId(m: SlotMessage, replayTag?: string): string {
  const base = m.kind === 'frame' ? `${m.videoId}:${m.frame}` : `${m.videoId}:end`;
  return replayTag ? `${base}:${replayTag}` : base;
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
  if (m.kind === 'end') return m as unknown as EndMessage;
  if (m.kind === 'frame' && Number.isSafeInteger(m.frame) && typeof m.sizeBytes === 'number') return m as unknown as FrameMessage;
  return undefined;
}
