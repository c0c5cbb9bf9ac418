/**
 * Segments read ahead across rounds (decision 51), the real worker on the twins (SQS FIFO
 * model, lease table twin, S3 twin) with real H.264: behind a backlog of segments, the GET
 * of each segment starts before the round that needs it (so no round waits for one with
 * the GPU idle), each segment is read once, and a segment whose GETs fail gives the same
 * records with reading ahead as without it, while the video goes on.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import type { Tunables } from '../../../core/config.ts';
import type { FrameStore } from '../../../core/ingest/s3/frame-store.ts';
import { overriding } from '../../../core/overriding.ts';
import { s3Error, WorkerHarness } from '../../../harness/worker-harness.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'video', 'fixtures');
/** 45 frames, B-frames, MP4. */
const MP4_45 = new Uint8Array(readFileSync(path.join(FIXTURES, 'bframes-45.mp4')));
const K = 45;
const SEGMENTS = 8;
const firsts = Array.from({ length: SEGMENTS }, (_, i) => i * K);

interface Read {
  readonly key: string;
  readonly how: 'get' | 'getVersion';
  readonly atMs: number;
}

/** The worker's S3 reads, each with when it started; `fail` decides a read's error. */
function recordingStore(reads: Read[], fail: (how: Read['how'], key: string) => Error | undefined = () => undefined): (inner: FrameStore) => FrameStore {
  return (inner) =>
    overriding(inner, {
      get: (bucket: string, key: string, ifMatch?: string) => {
        reads.push({ key, how: 'get', atMs: Date.now() });
        const e = fail('get', key);
        return e ? Promise.reject(e) : inner.get(bucket, key, ifMatch);
      },
      getVersion: (bucket: string, key: string) => {
        reads.push({ key, how: 'getVersion', atMs: Date.now() });
        const e = fail('getVersion', key);
        return e ? Promise.reject(e) : inner.getVersion(bucket, key);
      },
    });
}

const rows = (items: readonly FrameResultItem[]) => items.map((r) => `${r.frame}:${r.status}${r.reason ? `:${r.reason}` : ''}`);

describe('worker: segments read ahead across rounds', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  /** Puts and queues a video of {@link SEGMENTS} segments, runs one worker through it, and returns its records. */
  async function runVideo(name: string, reads: Read[], options: { tunables?: Partial<Tunables>; fail?: (how: Read['how'], key: string) => Error | undefined } = {}): Promise<FrameResultItem[]> {
    const v = h.videoId(name);
    await h.pinVideo(v, 0);
    for (const n of firsts) await h.putSegment(v, n, MP4_45, { frames: K });
    await h.putEnd(v, SEGMENTS * K - 1);
    for (const n of firsts) await h.sendSegment(0, v, n);
    await h.sendEnd(0, v);
    const worker = h.createWorker(0, { frames: recordingStore(reads, options.fail), ...(options.tunables ? { tunables: options.tunables } : {}) }).start();
    await h.waitForSummary(v, (s) => s.status === 'complete', 60_000);
    await worker.stop();
    return h.frameResults(v);
  }

  it('starts the GET of each segment before the round that needs it, and reads each segment once', async () => {
    // Prepare
    const reads: Read[] = [];

    // Act
    const items = await runVideo('ahead', reads);

    // Assess: every frame once, ok, in order
    expect(rows(items)).toEqual(items.map((_, i) => `${i}:ok`));
    expect(items).toHaveLength(SEGMENTS * K);
    // Each round stamps its records with its start: a segment first needed after the first round was fetched before that round began.
    const roundOf = new Map(items.map((r) => [r.frame, r.committedAtMs]));
    const firstRound = Math.min(...roundOf.values());
    const late: string[] = [];
    for (const n of firsts) {
      const round = roundOf.get(n)!;
      const key = items[n]!.key;
      const read = reads.find((r) => r.key === key);
      expect(read, key).toBeDefined();
      if (round > firstRound && read!.atMs > round) late.push(`${key}: read ${read!.atMs - round} ms into its round`);
    }
    expect(late).toEqual([]);
    // Each segment read once (its HEAD aside), by the read ahead.
    for (const n of firsts) expect(reads.filter((r) => r.key === items[n]!.key).map((r) => r.how), items[n]!.key).toEqual(['get']);
  }, 90_000);

  it('gives a segment whose reads fail the same records with reading ahead as without, and the video goes on', async () => {
    // Prepare: the third segment is archived (every read of it is refused for good); the fifth's first read fails once (a 503)
    const outage = new Set<string>();
    const fail = (_how: Read['how'], key: string) => {
      if (key.endsWith(`/${String(2 * K).padStart(6, '0')}.mp4`)) return s3Error('InvalidObjectState', 'archived', 403);
      if (key.endsWith(`/${String(4 * K).padStart(6, '0')}.mp4`) && !outage.has(key)) {
        outage.add(key);
        return s3Error('SlowDown', 'slow down', 503);
      }
      return undefined;
    };

    // Act: once with reading ahead (the default), once without
    const ahead = await runVideo('faults-ahead', [], { fail });
    const without = await runVideo('faults-without', [], { fail, tunables: { segmentReadAheadSegments: 0 } });

    // Assess: the same records: the archived segment's frames failed with S3's code, every other frame ok
    const expected = Array.from({ length: SEGMENTS * K }, (_, f) => (f >= 2 * K && f < 3 * K ? `${f}:failed:InvalidObjectState` : `${f}:ok`));
    expect(rows(without)).toEqual(expected);
    expect(rows(ahead)).toEqual(expected);
  }, 120_000);
});
