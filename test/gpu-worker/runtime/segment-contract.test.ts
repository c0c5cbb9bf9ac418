/**
 * Where the segment contract was silent (issue 40; docs/decisions.md 58), on the real worker
 * over the in-memory twins, a fake clock and real H.264:
 * - a segment that declares more frames than it holds, followed by a segment that starts
 *   at the true frame: the frames both promise are processed from the one that holds
 *   them, not `failed: truncated`;
 * - two segments that overlap: the copy of the one that starts nearer below a frame stands;
 * both whatever order the notifications come in (a rule on keys, not on arrival).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedResultItems } from '../../../core/commit/dynamodb/results-reader.ts';
import { expandStored } from '../../../core/commit/record-packing.ts';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'video', 'fixtures');
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(path.join(FIXTURES, name)));
/** 45 frames, MP4. */
const MP4_45 = fixture('bframes-45.mp4');
/** 30 frames, MPEG-TS. */
const TS_30 = fixture('cfr-30.mpegts');

const rows = (items: readonly FrameResultItem[]) => items.map((r) => `${r.frame}:${r.status}${r.reason ? `:${r.reason}` : ''}@${r.key?.slice(r.key.lastIndexOf('/') + 1)}`);
/**
 * How long to wait, in fake time: decoding is real work the fake clock does not track, so
 * fake time runs far ahead of it on a busy machine (a minute of it passed in one real
 * second once); this bounds a hung test, not the worker.
 */
const FAKE_PATIENCE_MS = 30 * 60_000;
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe('worker: segments that promise the same frames', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  /** Sends the two segments' notifications in `order`, then the end; waits for completion; the records and the stored frames. */
  async function run(v: string, first: { n: number; container: 'mp4' | 'mpegts' }, second: { n: number; container: 'mp4' | 'mpegts' }, order: 'in order' | 'reversed') {
    const worker = h.createWorker(0);
    const sends = [first, second];
    if (order === 'reversed') sends.reverse();
    for (const s of sends) await h.sendSegment(0, v, s.n, s.container);
    await h.sendEnd(0, v);
    worker.start();
    await h.waitForSummary(v, (s) => s.status === 'complete', FAKE_PATIENCE_MS);
    await worker.stop();
    const stored = (await storedResultItems(h.results, v)).flatMap((i) => expandStored(i)).map((r) => r.frame);
    return { records: await h.frameResults(v), stored, summary: await h.summary(v) };
  }

  it.each(['in order', 'reversed'] as const)('a segment that declares 45 frames and holds 30, then one at the true frame 30 (%s): 30-44 come from the second, ok', async (order) => {
    // Prepare
    const v = h.videoId(`seg-over-declared-${order === 'in order' ? 'a' : 'b'}`);
    await h.pinVideo(v, 0);
    await h.putSegment(v, 0, TS_30, { frames: 45, container: 'mpegts' });
    await h.putSegment(v, 30, MP4_45, { frames: 45 });
    await h.putEnd(v, 74);
    // Act
    const { records, stored, summary } = await run(v, { n: 0, container: 'mpegts' }, { n: 30, container: 'mp4' }, order);
    // Assess: one record per frame; nothing failed
    expect(stored).toEqual(range(0, 75));
    expect(rows(records)).toEqual([...range(0, 30).map((f) => `${f}:ok@000000.ts`), ...range(30, 45).map((f) => `${f}:ok@000030.mp4`)]);
    expect(summary).toMatchObject({ framesOk: 75, framesFailed: 0, framesGap: 0, framesLate: 0 });
  });

  it.each(['in order', 'reversed'] as const)('two segments that overlap on 40-44 (%s): the one that starts at 40 holds them', async (order) => {
    // Prepare
    const v = h.videoId(`seg-overlap-${order === 'in order' ? 'a' : 'b'}`);
    await h.pinVideo(v, 0);
    await h.putSegment(v, 0, MP4_45, { frames: 45 });
    await h.putSegment(v, 40, MP4_45, { frames: 45 });
    await h.putEnd(v, 84);
    // Act
    const { records, stored, summary } = await run(v, { n: 0, container: 'mp4' }, { n: 40, container: 'mp4' }, order);
    // Assess
    expect(stored).toEqual(range(0, 85));
    expect(rows(records)).toEqual([...range(0, 40).map((f) => `${f}:ok@000000.mp4`), ...range(40, 45).map((f) => `${f}:ok@000040.mp4`)]);
    expect(summary).toMatchObject({ framesOk: 85, framesFailed: 0, framesGap: 0 });
  });
});

describe('worker: an over-declaring segment whose next segment is in S3 but not yet notified', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('reads the frames it cannot yield from the segment that starts at the true frame, and that one\'s notification later changes nothing', async () => {
    // Prepare: segment 0 declares 45 frames and holds 30; segment 30 is uploaded, its notification not yet come
    const v = h.videoId('seg-tail-elsewhere');
    await h.pinVideo(v, 0);
    await h.putSegment(v, 0, TS_30, { frames: 45, container: 'mpegts' });
    await h.putSegment(v, 30, MP4_45, { frames: 45 });
    await h.putEnd(v, 74);
    const worker = h.createWorker(0).start();
    // Act: segment 0 alone runs 0-44; then segment 30's notification and the end
    await h.sendSegment(0, v, 0, 'mpegts');
    await h.waitForResults(v, 45, FAKE_PATIENCE_MS);
    await h.sendSegment(0, v, 30);
    await h.sendEnd(0, v);
    await h.waitForSummary(v, (s) => s.status === 'complete', FAKE_PATIENCE_MS);
    await worker.stop();
    // Assess: 30-44 came from segment 30 (ok, its key), each frame once
    const stored = (await storedResultItems(h.results, v)).flatMap((i) => expandStored(i)).map((r) => r.frame);
    expect(stored).toEqual(range(0, 75));
    expect(rows(await h.frameResults(v))).toEqual([...range(0, 30).map((f) => `${f}:ok@000000.ts`), ...range(30, 45).map((f) => `${f}:ok@000030.mp4`)]);
    expect(await h.summary(v)).toMatchObject({ framesOk: 75, framesFailed: 0, framesGap: 0, framesLate: 0 });
  });
});
