/**
 * One camera's uploader on a fake clock: a credential_process that fails for a minute is
 * retried with capped backoff and said in words each time; the segments closed meanwhile
 * wait in the spool and all land, in order, once credentials come back. Over the spool's
 * bound the oldest are dropped, counted and said, never silently.
 */
import { describe, expect, it } from 'vitest';
import { SpoolQueue } from '../../../cli/edge/spool-queue.ts';
import { initialState, type JournalSegment, type StreamState } from '../../../cli/video/stream-journal.ts';

class CredentialsProviderError extends Error {
  override name = 'CredentialsProviderError';
}

function harness(o: { failUntilMs: number; maxBytes: number; segmentEveryMs: number; segmentBytes: number }) {
  let now = 0;
  let closed = 0;
  const logs: string[] = [];
  const landed: string[] = [];
  const removed: string[] = [];
  const persisted: StreamState[] = [];
  const putAt: number[] = [];
  let q!: SpoolQueue;
  const closeDue = (): void => {
    // the camera closes a segment every segmentEveryMs of (fake) time
    while ((closed + 1) * o.segmentEveryMs <= now) {
      const firstFrame = closed * 10;
      const s: JournalSegment = { key: `frames/cam/${String(firstFrame).padStart(6, '0')}.ts`, firstFrame, frames: 10, file: `/spool/${firstFrame}.ts`, bytes: o.segmentBytes };
      closed++;
      q.add(s);
    }
  };
  q = new SpoolQueue(initialState('cam', 'mpegts', 0), {
    maxBytes: o.maxBytes,
    put: async (p) => {
      putAt.push(now);
      if (now < o.failUntilMs) throw new CredentialsProviderError('Error when retrieving credentials from process: credential_process exited with code 1: certificate expired');
      landed.push(p.key);
    },
    persist: (s) => void persisted.push(s),
    removeFile: (f) => void removed.push(f),
    now: () => now,
    sleep: async (ms) => {
      now += ms;
      closeDue();
    },
    backoff: { baseMs: 500, capMs: 8_000, random: () => 0.5 },
    log: (l) => void logs.push(l),
  });
  return {
    q,
    logs,
    landed,
    removed,
    persisted,
    putAt,
    advance: (ms: number) => ((now += ms), closeDue()),
    /** Lets the uploader run (its sleeps move the fake clock) until past `ms` with nothing left to send. */
    settled: async (ms: number) => {
      for (let i = 0; i < 100_000 && !(now >= ms && q.state.pending.length === 0); i++) await new Promise((r) => setImmediate(r));
    },
  };
}

describe('SpoolQueue', () => {
  it('retries a minute of failing credentials with capped backoff, says why each time, and lands every segment in order', async () => {
    const h = harness({ failUntilMs: 60_000, maxBytes: 10_000, segmentEveryMs: 2_000, segmentBytes: 100 });
    h.advance(2_000); // the first segment closes
    const loop = h.q.start();
    await h.settled(60_000);
    await h.q.drain(1_000);
    await loop;
    const failures = h.logs.filter((l) => l.startsWith('upload of '));
    // capped backoff: 0.5, 1, 2, 4, then 8 s: about 11 retries in the minute, not thousands
    expect(failures.length).toBeGreaterThanOrEqual(8);
    expect(failures.length).toBeLessThanOrEqual(14);
    for (const l of failures) expect(l).toMatch(/^upload of frames\/cam\/000000\.ts failed \(CredentialsProviderError: .*certificate expired\): the AWS credentials could not be obtained or have expired: check the credential_process .*export-credentials.*; retrying in \d+\.\d s \(attempt \d+\); \d+ segment\(s\), .* wait in the spool$/);
    const gaps = h.putAt.slice(1).map((t, i) => t - h.putAt[i]!);
    expect(Math.max(...gaps)).toBeLessThanOrEqual(8_000);
    expect(h.logs.find((l) => l.startsWith('uploads work again'))).toMatch(/^uploads work again after (5[5-9]|6\d)\.\d s and \d+ failed attempt\(s\)/);
    // nothing dropped: every segment closed during the minute landed, in frame order
    const stats = h.q.stats();
    expect(stats).toMatchObject({ droppedSegments: 0, droppedFrames: 0, pendingSegments: 0, failing: null });
    expect(h.landed.length).toBeGreaterThanOrEqual(30);
    expect(h.landed).toEqual(h.landed.map((_, i) => `frames/cam/${String(i * 10).padStart(6, '0')}.ts`));
    expect(h.q.state.nextFrame).toBe(h.landed.length * 10);
    // each segment was journaled (persisted with it pending) before its first PUT
    expect(h.persisted.some((s) => s.pending.length >= 29)).toBe(true);
  });

  it('over the bound drops the oldest waiting segments, counts them and says so', async () => {
    const h = harness({ failUntilMs: 60_000, maxBytes: 1_000, segmentEveryMs: 2_000, segmentBytes: 300 });
    h.advance(2_000);
    const loop = h.q.start();
    await h.settled(60_000);
    await h.q.drain(1_000);
    await loop;
    const stats = h.q.stats();
    expect(stats.droppedSegments).toBeGreaterThan(20);
    expect(stats.droppedFrames).toBe(stats.droppedSegments * 10);
    expect(stats.droppedBytes).toBe(stats.droppedSegments * 300);
    const drops = h.logs.filter((l) => l.startsWith('spool full'));
    expect(drops.length).toBeGreaterThan(0);
    expect(drops[0]).toMatch(/^spool full \(.* waiting, bound 1000 B\): dropped the oldest 1 segment\(s\), frames 0-9 \(10, 300 B\); they become gaps\. Dropped so far: 1 segment\(s\), 10 frame\(s\); uploads fail: CredentialsProviderError/);
    // a failed PUT's segment waits like the others (it is not in flight while the retry sleeps): the oldest goes first
    expect(h.removed).toContain('/spool/0.ts');
    // what landed and what was dropped account for every segment, each once
    expect(h.landed.length + stats.droppedSegments + stats.pendingSegments).toBe(h.q.state.nextFrame / 10);
    expect(new Set(h.landed).size).toBe(h.landed.length);
  });
});
