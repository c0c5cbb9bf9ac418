/**
 * Turns the body of an ingest-queue message (an S3 event notification) into routable
 * frames and end markers, or into rejections with a reason.
 */
import { decodeS3EventKey, type RejectReason } from './keys.ts';
import { parseSourceKey } from './segment-keys.ts';
import type { SlotMessage } from './messages.ts';

export type IngestItem =
  | { readonly kind: 'route'; readonly message: SlotMessage }
  | { readonly kind: 'reject'; readonly reason: RejectReason; readonly detail: string; readonly key?: string };

interface S3EventRecord {
  eventSource?: string;
  eventName?: string;
  eventTime?: string;
  s3?: { bucket?: { name?: string }; object?: { key?: string; size?: number; eTag?: string } };
}

/**
 * Parses one SQS message body. A body can hold several S3 records; each becomes one
 * item. `expectedBucket` guards against notifications from a bucket we do not own.
 */
export function parseIngestBody(body: string, expectedBucket: string): IngestItem[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return [{ kind: 'reject', reason: 'not-json', detail: 'message body is not JSON' }];
  }
  if (typeof parsed !== 'object' || parsed === null) {
    return [{ kind: 'reject', reason: 'unknown-event', detail: 'message body is not an object' }];
  }
  const obj = parsed as Record<string, unknown>;
  if (obj.Event === 's3:TestEvent') {
    return [{ kind: 'reject', reason: 's3-test-event', detail: 'S3 test event (sent when notifications are configured)' }];
  }
  if (!Array.isArray(obj.Records) || obj.Records.length === 0) {
    return [{ kind: 'reject', reason: 'unknown-event', detail: 'no Records array: not an S3 event notification' }];
  }
  return (obj.Records as S3EventRecord[]).map((r) => parseRecord(r, expectedBucket));
}

function parseRecord(r: S3EventRecord, expectedBucket: string): IngestItem {
  if (r?.eventSource !== 'aws:s3' || typeof r.eventName !== 'string' || !r.s3?.object || typeof r.s3.object.key !== 'string') {
    return { kind: 'reject', reason: 'unknown-event', detail: `not an S3 record (eventSource=${String(r?.eventSource)})` };
  }
  const rawKey = r.s3.object.key;
  if (!r.eventName.startsWith('ObjectCreated:')) {
    return { kind: 'reject', reason: 'not-object-created', detail: `event ${r.eventName} is ignored`, key: rawKey };
  }
  const bucket = r.s3.bucket?.name ?? '';
  if (bucket !== expectedBucket) {
    return { kind: 'reject', reason: 'wrong-bucket', detail: `bucket "${bucket}" is not the frame bucket`, key: rawKey };
  }
  const key = decodeS3EventKey(rawKey);
  if (key === undefined) return { kind: 'reject', reason: 'bad-key-encoding', detail: `key "${rawKey}" is not valid URL encoding`, key: rawKey };
  // A segment routes as its first frame: the worker learns how many frames it covers (core/ingest/segment-keys.ts).
  const p = parseSourceKey(key);
  if (p.kind === 'rejected') return { kind: 'reject', reason: p.reason, detail: p.detail, key };
  const eventTime = r.eventTime ?? new Date().toISOString();
  const eTag = typeof r.s3.object.eTag === 'string' && r.s3.object.eTag.length > 0 ? r.s3.object.eTag : undefined;
  if (p.kind === 'end') return { kind: 'route', message: { kind: 'end', videoId: p.videoId, bucket, key, eventTime, ...(eTag ? { eTag } : {}) } };
  const sizeBytes = Number(r.s3.object.size ?? 0);
  return { kind: 'route', message: { kind: 'frame', videoId: p.videoId, frame: p.firstFrame, bucket, key, sizeBytes, eventTime, ...(eTag ? { eTag } : {}) } };
}
