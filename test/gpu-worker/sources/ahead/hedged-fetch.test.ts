/** Hedged GETs (gpu-worker/sources/ahead/hedged-fetch.ts) on fake timers: when a second GET goes out, which answer wins, when the call fails. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FrameStore } from '../../../../core/ingest/s3/frame-store.ts';
import { hedgedFrameStore } from '../../../../gpu-worker/sources/ahead/hedged-fetch.ts';

/** A store whose n-th GET answers (or fails) after the n-th delay. */
function store(plan: readonly { ms: number; fail?: string; bytes?: number }[]) {
  let calls = 0;
  const inner = {
    get: () => {
      const p = plan[calls++]!;
      return new Promise<Uint8Array>((resolve, reject) => setTimeout(() => (p.fail ? reject(new Error(p.fail)) : resolve(new Uint8Array([p.bytes ?? 0]))), p.ms));
    },
    getText: async () => 'text',
  } as unknown as FrameStore;
  return { inner, calls: () => calls };
}

afterEach(() => vi.useRealTimers());

describe('hedgedFrameStore', () => {
  it.each([
    ['a fast GET: one call', [{ ms: 50, bytes: 1 }], 1, 1],
    ['a slow GET: a second goes out after 100 ms and wins', [{ ms: 400, bytes: 1 }, { ms: 30, bytes: 2 }], 2, 2],
    ['a slow GET that still beats its hedge: the first wins', [{ ms: 120, bytes: 1 }, { ms: 300, bytes: 2 }], 2, 1],
  ])('%s', async (_name, plan, calls, winner) => {
    vi.useFakeTimers();
    const s = store(plan);
    const got = hedgedFrameStore(s.inner, 100).get('b', 'k');
    await vi.advanceTimersByTimeAsync(1000);
    expect((await got)[0]).toBe(winner);
    expect(s.calls()).toBe(calls);
  });

  it('a GET that fails before the hedge fails at once, with no second call', async () => {
    vi.useFakeTimers();
    const s = store([{ ms: 20, fail: 'NoSuchKey' }]);
    const got = hedgedFrameStore(s.inner, 100).get('b', 'k');
    const assertion = expect(got).rejects.toThrow('NoSuchKey');
    await vi.advanceTimersByTimeAsync(1000);
    await assertion;
    expect(s.calls()).toBe(1);
  });

  it('once hedged, one failure is not the answer; both failing rejects with the first error', async () => {
    vi.useFakeTimers();
    const one = store([{ ms: 150, fail: 'SlowDown' }, { ms: 100, bytes: 7 }]);
    const ok = hedgedFrameStore(one.inner, 100).get('b', 'k');
    await vi.advanceTimersByTimeAsync(1000);
    expect((await ok)[0]).toBe(7);
    const both = store([{ ms: 150, fail: 'SlowDown' }, { ms: 100, fail: 'InternalError' }]);
    const bad = hedgedFrameStore(both.inner, 100).get('b', 'k');
    const assertion = expect(bad).rejects.toThrow('SlowDown');
    await vi.advanceTimersByTimeAsync(1000);
    await assertion;
  });

  it('0 turns it off; other methods pass through', async () => {
    const s = store([]);
    expect(hedgedFrameStore(s.inner, 0)).toBe(s.inner);
    expect(await hedgedFrameStore(s.inner, 100).getText('b', 'k')).toBe('text');
  });
});
