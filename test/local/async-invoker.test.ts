import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ASYNC_RETRY_DELAYS_MS, AsyncInvoker } from '../../local/eventbridge-invokers.ts';

/** An invoker whose handler fails its first `failures` calls, on Lambda's own retry delays. */
function rig(failures: number) {
  const calls: unknown[] = [];
  const errors: { attempt: number; willRetry: boolean }[] = [];
  const invoker = new AsyncInvoker(
    async (event) => {
      calls.push(event);
      if (calls.length <= failures) throw new Error(`down ${calls.length}`);
    },
    (_err, attempt, willRetry) => errors.push({ attempt, willRetry }),
  );
  return { invoker, calls, errors };
}

describe('AsyncInvoker (an EventBridge rule\'s Lambda target, retried as Lambda retries)', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("uses Lambda's documented delays: one minute, then two", () => {
    expect(ASYNC_RETRY_DELAYS_MS).toEqual([60_000, 120_000]);
  });

  it.each([
    { failures: 0, calls: 1, errors: [] },
    { failures: 1, calls: 2, errors: [{ attempt: 1, willRetry: true }] },
    { failures: 2, calls: 3, errors: [{ attempt: 1, willRetry: true }, { attempt: 2, willRetry: true }] },
    // Three failures: Lambda gives up after the second retry.
    { failures: 5, calls: 3, errors: [{ attempt: 1, willRetry: true }, { attempt: 2, willRetry: true }, { attempt: 3, willRetry: false }] },
  ])('a handler failing $failures time(s) is called $calls time(s), with the same event', async ({ failures, calls, errors }) => {
    const r = rig(failures);
    r.invoker.send({ n: 1 });
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(r.calls).toHaveLength(calls);
    expect(r.calls.every((e) => (e as { n: number }).n === 1)).toBe(true);
    expect(r.errors).toEqual(errors);
  });

  it('retries only once each delay has passed: a minute, then two more', async () => {
    const r = rig(5);
    r.invoker.send('e');
    await vi.advanceTimersByTimeAsync(0);
    expect(r.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(59_999);
    expect(r.calls).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(119_999);
    expect(r.calls).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    expect(r.calls).toHaveLength(3);
  });

  it('drops retries not yet due once stopped', async () => {
    const r = rig(5);
    r.invoker.send('e');
    await vi.advanceTimersByTimeAsync(1_000);
    r.invoker.stop();
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(r.calls).toHaveLength(1);
    expect(r.errors).toEqual([{ attempt: 1, willRetry: true }]);
  });
});
