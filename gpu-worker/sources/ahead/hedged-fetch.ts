/**
 * Hedged S3 GETs (`fetchHedgeMs`, 100 ms by default since decision 38; decision 30): a frame's GET that has not
 * answered within `hedgeAfterMs` is sent once more, and whichever answers first is used.
 * S3's guidance for latency-sensitive reads is to track slow requests and retry them
 * (whitepaper "Optimizing Amazon S3 Performance", "Timeouts and Retries"): a round ends
 * only when its slowest frame is in, and the slowest of 80 GETs sits near S3's p99, so one
 * extra GET for the few slow ones shortens every round. A GET that fails before the hedge
 * fails as before; once both are out, the call fails only when both did (with the first
 * error). Costs one GET per frame slower than `hedgeAfterMs` (about 8% at 100 ms under the
 * benches' latency model). The worker wraps only its frame runner's GETs in this; a
 * prefetch is hedged by frame-prefetch.ts, and only once a round waits for it.
 */
import type { FrameSource } from '../../../core/ingest/port.ts';
import { overriding } from '../../../core/overriding.ts';

/**
 * `first`, joined by `again()` if `first` has not settled within `delayMs`: the first call
 * to resolve wins; the result rejects (with the first error) only once every call sent
 * has failed. A `first` that fails before the delay rejects at once and sends nothing more.
 */
export function hedge<T>(first: Promise<T>, delayMs: number, again: () => Promise<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    let done = false;
    let outstanding = 0;
    let firstError: unknown;
    const settle = (call: Promise<T>) => {
      outstanding++;
      call.then(
        (value) => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          resolve(value);
        },
        (e: unknown) => {
          firstError ??= e;
          if (--outstanding > 0 || done) return;
          done = true;
          clearTimeout(timer);
          reject(firstError);
        },
      );
    };
    const timer = setTimeout(() => {
      if (!done) settle(again());
    }, Math.max(0, delayMs));
    settle(first);
  });
}

/** `inner` with its `get` hedged after `hedgeAfterMs` (0: `inner` itself). */
export function hedgedFrameStore(inner: FrameSource, hedgeAfterMs: number): FrameSource {
  if (hedgeAfterMs <= 0) return inner;
  const get = (bucket: string, key: string, ifMatch?: string): Promise<Uint8Array> =>
    hedge(inner.get(bucket, key, ifMatch), hedgeAfterMs, () => inner.get(bucket, key, ifMatch));
  return overriding(inner, { get });
}
