/**
 * AWS SDK timeouts and retries (applied by core/aws/clients.ts to every client it builds).
 * Not tunables: they describe the AWS calls, not the pipeline. Explicit client
 * configuration (`requestHandler`, `maxAttempts`, `retryMode`) overrides them.
 */

/** How one service's calls are bounded. */
export interface AwsCallPolicy {
  /** TCP connect must finish within this. */
  readonly connectionTimeoutMs: number;
  /** From sending a request to its response headers; past it the attempt fails with `TimeoutError` (retried). */
  readonly requestTimeoutMs: number;
  /** Longest the socket may stay idle during a call, including while a response body streams. */
  readonly socketTimeoutMs: number;
  /** Attempts per call, the first included (standard retry mode: jittered exponential backoff, retry quota). */
  readonly maxAttempts: number;
}

/**
 * Why these numbers (defaults: slot lease 15 s, heartbeat every 5 s):
 *
 * - DynamoDB: a single-item or transactional write answers in milliseconds, so 1.5 s is
 *   far beyond normal latency. A heartbeat is one UpdateItem, plus one GetItem when the
 *   update errs (it may have been applied). With 3 attempts an UpdateItem gives up after
 *   at most about 3 × 1.5 s = 4.5 s, less than the heartbeat interval, so a hung call
 *   delays at most one heartbeat; update plus re-read take at most about 9 s, less than
 *   TTL − interval = 10 s, so a worker cut off from DynamoDB declares its slot lost before
 *   the lease runs out (test/core/aws/clients.test.ts checks this arithmetic).
 * - SQS: sends, deletes and visibility changes get 5 s. A long poll legitimately holds
 *   the response for `WaitTimeSeconds` (at most 20 s), so a ReceiveMessage gets its wait
 *   plus `longPollMarginMs`, and the socket idle limit must exceed 20 s as well.
 * - S3: 5 s to the first response byte of a GET, LIST or HEAD; uploads get
 *   `uploadMsPerMiB` more per MiB of body (the response only comes after the whole body).
 *   Frames and models can be many MiB, so a GET body is bounded by the idle limit
 *   (10 s without a byte), not by a total time.
 */
export const AWS_CALL_POLICY = Object.freeze({
  retryMode: 'standard' as const,
  dynamodb: Object.freeze({ connectionTimeoutMs: 1_000, requestTimeoutMs: 1_500, socketTimeoutMs: 1_500, maxAttempts: 3 }) satisfies AwsCallPolicy,
  sqs: Object.freeze({ connectionTimeoutMs: 2_000, requestTimeoutMs: 5_000, socketTimeoutMs: 25_000, maxAttempts: 3, longPollMarginMs: 5_000 }) satisfies AwsCallPolicy,
  s3: Object.freeze({ connectionTimeoutMs: 2_000, requestTimeoutMs: 5_000, socketTimeoutMs: 10_000, maxAttempts: 3, uploadMsPerMiB: 1_000 }) satisfies AwsCallPolicy,
});
