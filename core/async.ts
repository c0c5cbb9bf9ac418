/** Small promise helpers with no dependencies, shared by the worker, the Lambdas, the local stack and the CLI. */

/** Resolves after `ms` milliseconds (a timer, so it keeps the process alive meanwhile). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Runs `fn` over `items` with at most `limit` calls in flight, and returns the results in
 * input order. A rejection rejects the whole (callers that must not lose the other
 * results catch inside `fn`).
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lane = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, lane));
  return out;
}

/**
 * Every outcome once all have settled (so no frame's work is left running when the call
 * returns), or the first rejection.
 */
export async function allOrThrow<T>(promises: readonly Promise<T>[]): Promise<T[]> {
  const settled = await Promise.allSettled(promises);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
}
