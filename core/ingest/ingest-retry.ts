/**
 * What the router does with an ingest record it could not route: the pure decision
 * behind "outages pause, never lose" on the ingest side. No AWS client here; the Lambda
 * handler applies the decision (a visibility change, a dead-letter send, or a plain
 * batch item failure).
 *
 * Why: SQS redrive counts receives, not failures of the message. Handing a message back
 * at the queue's own visibility timeout during a DynamoDB or SQS outage walks it into the
 * DLQ after `ingestMaxReceiveCount` receives (5 × 180 s = 15 minutes with the old
 * defaults). So an outage-like failure (throttling, 5xx, a timeout or network error)
 * instead sets the record's visibility to an exponential backoff by its receive count,
 * capped at `ingestOutageBackoffMaxSeconds`, and the receive budget is sized so those
 * backoffs span days ({@link ingestOutageRideOutSeconds}, checked against the queue's
 * retention in validateTunables). Any other error (a bug, a refused request) retries at
 * the queue's visibility timeout a few times and is then dead-lettered by the router
 * itself with its reason, so no failure sits in a backoff loop for days.
 */
import type { Tunables } from '../config.ts';

/** Why a record failed, as far as the decision cares. */
export type IngestFailureKind = 'outage' | 'error';

/** What to do with a failed record. */
export type IngestRetryDecision =
  /** Report the failure and make the record invisible for `visibilitySeconds` (outage: ride it out). */
  | { readonly action: 'backoff'; readonly kind: 'outage'; readonly visibilitySeconds: number }
  /** Report the failure and leave the visibility as it is (the queue's timeout). */
  | { readonly action: 'retry'; readonly kind: IngestFailureKind }
  /** Park the record in the ingest DLQ with this reason now, and acknowledge it. */
  | { readonly action: 'dead-letter'; readonly kind: IngestFailureKind; readonly reason: IngestDeadLetterReason };

/** Reasons (the DLQ message's `reason` attribute and the EventsRejected dimension) this module gives. */
export type IngestDeadLetterReason = 'route-error' | 'outage-outlasted-retries';

/**
 * Receives after which a record failing with a non-outage error is dead-lettered with
 * reason `route-error`: the ingest queue's old budget, so a deterministic failure is
 * parked after about 5 × `ingestVisibilitySeconds` (15 minutes at the defaults), as before.
 */
export const INGEST_ERROR_RECEIVES = 5;

/**
 * Retention of the ingest queue: 7 days. A message that outlives it is deleted by SQS
 * without a trace, so the outage ride-out must end (in the DLQ, with a reason) before it.
 * The ingest DLQ keeps 14 days, but for a standard queue that counts from the original
 * enqueue, so a message dead-lettered after a ride-out of about 6 days still has about 8
 * days there for `affinity redrive`.
 */
export const INGEST_RETENTION_SECONDS = 7 * 24 * 3600;

/** Longest visibility timeout SQS accepts (12 hours). */
export const SQS_MAX_VISIBILITY_SECONDS = 43_200;

const THROTTLING_NAMES = new Set([
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'ProvisionedThroughputExceededException',
  'RequestLimitExceeded',
  'RequestThrottled',
  'RequestThrottledException',
  'TooManyRequestsException',
  'SlowDown',
  'LimitExceededException',
  'TransactionInProgressException',
  'KMS.ThrottlingException',
]);

const TRANSIENT_NAMES = new Set([
  'TimeoutError',
  'RequestTimeout',
  'RequestTimeoutException',
  'NetworkingError',
  'ServiceUnavailable',
  'InternalServerError',
  'InternalError',
  'InternalFailure',
  'ServiceUnavailableException',
  'AWS.SimpleQueueService.ServiceUnavailable',
  'AWS.SimpleQueueService.InternalError',
  // The router's own transient failure: slots kept filling up while admitting (contention, not input).
  'AdmissionContention',
]);

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'ECONNABORTED', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);

/**
 * Outage or error, from the shape of what was thrown (the SDK's `name`, `$fault`,
 * `$metadata.httpStatusCode`, `$retryable`, a Node network `code`), following `cause`
 * chains. A batch entry's failure without an exception counts as an outage when SQS says
 * it was not the sender's fault (`senderFault: false`).
 */
export function classifyIngestFailure(error: unknown): IngestFailureKind {
  for (let e: unknown = error, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    if (typeof e !== 'object') break;
    const o = e as {
      name?: unknown;
      code?: unknown;
      $fault?: unknown;
      $retryable?: unknown;
      $metadata?: { httpStatusCode?: unknown };
      senderFault?: unknown;
      cause?: unknown;
    };
    const name = typeof o.name === 'string' ? o.name : '';
    const status = typeof o.$metadata?.httpStatusCode === 'number' ? o.$metadata.httpStatusCode : undefined;
    if (THROTTLING_NAMES.has(name) || TRANSIENT_NAMES.has(name)) return 'outage';
    if (o.$fault === 'server' || (status !== undefined && status >= 500)) return 'outage';
    if (status === 429) return 'outage';
    if (o.$retryable !== undefined && o.$retryable !== null) return 'outage';
    if (typeof o.code === 'string' && NETWORK_CODES.has(o.code)) return 'outage';
    if (o.senderFault === false) return 'outage';
    e = o.cause;
  }
  return 'error';
}

/**
 * Visibility (seconds) after the `receiveCount`-th failed receive of an outage:
 * `ingestOutageBackoffBaseSeconds × 2^(receiveCount − 1)`, at most
 * `ingestOutageBackoffMaxSeconds` (and SQS's 12 hours). Defaults: 15, 30, 60, 120, 240,
 * 480, then 900 s per receive.
 */
export function outageBackoffSeconds(receiveCount: number, t: Pick<Tunables, 'ingestOutageBackoffBaseSeconds' | 'ingestOutageBackoffMaxSeconds'>): number {
  const n = Math.max(1, Math.floor(receiveCount));
  const cap = Math.min(t.ingestOutageBackoffMaxSeconds, SQS_MAX_VISIBILITY_SECONDS);
  // 2^(n-1) overflows to Infinity long after it passed any cap; min() handles that.
  return Math.min(cap, t.ingestOutageBackoffBaseSeconds * 2 ** Math.min(n - 1, 60));
}

/**
 * How long an outage is ridden out before a record that fails on every receive reaches
 * the DLQ: the backoffs of receives 1 .. `ingestMaxReceiveCount` (SQS moves the message
 * on the receive after the last). The router dead-letters it itself on its last receive,
 * with reason `outage-outlasted-retries`, so the ride-out is the backoffs of receives
 * 1 .. `ingestMaxReceiveCount − 1`. Each receive also takes the invocation's own time,
 * so the real ride-out is a little longer; it must stay under the queue's retention.
 *
 * Defaults (base 15 s, cap 900 s, 576 receives): 945 s for receives 1-6, then 569 × 900 s:
 * 513,045 s, about 5.9 days, against a retention of 7 days.
 */
export function ingestOutageRideOutSeconds(
  t: Pick<Tunables, 'ingestOutageBackoffBaseSeconds' | 'ingestOutageBackoffMaxSeconds' | 'ingestMaxReceiveCount'>,
): number {
  let sum = 0;
  for (let n = 1; n < t.ingestMaxReceiveCount; n++) sum += outageBackoffSeconds(n, t);
  return sum;
}

/**
 * The decision for one failed record.
 *
 * - outage, receive count below `ingestMaxReceiveCount`: back off;
 * - outage on the last receive before SQS's redrive: dead-letter with reason
 *   `outage-outlasted-retries` (an operator's `affinity redrive` brings it back);
 * - other errors: retry at the queue's visibility until {@link INGEST_ERROR_RECEIVES},
 *   then dead-letter with reason `route-error`.
 *
 * `receiveCount` is the record's `ApproximateReceiveCount` (1 on the first delivery).
 */
export function decideIngestRetry(
  error: unknown,
  receiveCount: number,
  t: Pick<Tunables, 'ingestOutageBackoffBaseSeconds' | 'ingestOutageBackoffMaxSeconds' | 'ingestMaxReceiveCount'>,
): IngestRetryDecision {
  const kind = classifyIngestFailure(error);
  const n = Number.isFinite(receiveCount) && receiveCount >= 1 ? Math.floor(receiveCount) : 1;
  if (kind === 'outage') {
    if (n >= t.ingestMaxReceiveCount) return { action: 'dead-letter', kind, reason: 'outage-outlasted-retries' };
    return { action: 'backoff', kind, visibilitySeconds: outageBackoffSeconds(n, t) };
  }
  if (n >= Math.min(INGEST_ERROR_RECEIVES, t.ingestMaxReceiveCount)) return { action: 'dead-letter', kind, reason: 'route-error' };
  return { action: 'retry', kind };
}
