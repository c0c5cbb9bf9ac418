/**
 * Polls `check` until it yields a value (anything but undefined, null, false or ''; 0
 * counts, so a slot number can be awaited) or `timeoutMs` passes. Errors are retried
 * and the last one is named in the timeout message.
 */
export async function waitFor<T>(what: string, check: () => T | Promise<T>, timeoutMs = 60_000, intervalMs = 100): Promise<Exclude<T, undefined | null | false | ''>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined && v !== null && v !== false && v !== '') return v as Exclude<T, undefined | null | false | ''>;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A promise with its resolve and reject in hand, for tests that release work step by step. */
export function deferred<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: unknown) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
