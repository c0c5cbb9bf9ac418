/**
 * What an error from a read of S3 (or of the store) means to the worker: worth retrying
 * (throttling, 5xx, timeouts, dropped connections), and its code for the record. Shared
 * by the frame sources (a listing that finds where a truncated segment's frame lives) and
 * the runtime (a round's reads, the intake's), so both judge an error alike.
 */
import { isServerError, isThrottlingError, isTransientError } from '@smithy/core/retry';

/** Whether an AWS SDK error is worth retrying (throttling, 5xx, timeouts, dropped connections). */
export function isTransient(e: unknown): boolean {
  if (!(e instanceof Error)) return false;
  const err = e as Parameters<typeof isTransientError>[0];
  if (isThrottlingError(err) || isTransientError(err) || isServerError(err)) return true;
  // A timeout or a network error carries no HTTP response at all.
  return (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === undefined && !('$fault' in e && (e as { $fault?: string }).$fault === 'client');
}

/** The service's error code (e.g. `InvalidObjectState`), or the error's name. */
export function errorCode(e: unknown): string {
  if (e instanceof Error) return (e as { Code?: string }).Code ?? e.name ?? 'Error';
  return 'Error';
}
