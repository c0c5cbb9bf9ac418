/**
 * A corrected end marker over a segment whose tail was recorded `after-end-of-stream`
 * (issue 40, defect 1), on the in-memory twins with a fake clock and real H.264: segment 0
 * holds 45 frames, the first marker says 29, so 30-44 are stored as one packed
 * `after-end-of-stream` run at 30. The uploader corrects the marker to 89 and uploads
 * segment 45, and segment 0 is NOT notified again. The video waits at frame 30, inside
 * segment 0: its listing must see the segment that covers the waiting frame (it starts
 * below the listing's start), and a gap must never be written beside a stored run. Every
 * frame keeps exactly one record.
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
/** 45 frames, B-frames, MP4. */
const MP4_45 = new Uint8Array(readFileSync(path.join(FIXTURES, 'bframes-45.mp4')));

const statusRows = (items: readonly FrameResultItem[]) => items.map((r) => `${r.frame}:${r.status}${r.reason ? `:${r.reason}` : ''}`);
/** Fake time to wait at most: decoding is real work the fake clock does not track, so fake time runs far ahead of it on a busy machine. */
const FAKE_PATIENCE_MS = 30 * 60_000;
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe('worker: an end marker corrected later over a segment recorded past the old end', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', clock: 'fake', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('gives frames 30-44 one record each when segment 0 is not notified again', async () => {
    // Prepare: segment 0 (45 frames) under an end marker at 29: 30-44 are recorded after-end-of-stream.
    const v = h.videoId('seg-end-later');
    await h.pinVideo(v, 0);
    await h.putSegment(v, 0, MP4_45, { frames: 45 });
    await h.putEnd(v, 29);
    await h.sendEnd(0, v);
    await h.sendSegment(0, v, 0);
    const worker = h.createWorker(0).start();
    await h.waitForResults(v, 45, FAKE_PATIENCE_MS);
    expect(statusRows(await h.frameResults(v))).toEqual([...range(0, 30).map((f) => `${f}:ok`), ...range(30, 15).map((f) => `${f}:failed:after-end-of-stream`)]);

    // Act: the end moves to 89 and segment 45 comes; segment 0 is not notified again.
    await h.putSegment(v, 45, MP4_45, { frames: 45 });
    await h.putEnd(v, 89);
    await h.sendEnd(0, v, { replayTag: 'moved' });
    await h.sendSegment(0, v, 45);
    await h.waitForSummary(v, (s) => s.status === 'complete' && s.endFrame === 89 && (s.lastFrame ?? 0) >= 89, FAKE_PATIENCE_MS);
    // Give a wrong round time to land before looking.
    await new Promise((r) => setTimeout(r, 2_000));
    await worker.stop();

    // Assess: as stored, every frame 0-89 exactly once (no gap beside the packed run), and
    // 30-44 keep their after-end-of-stream record (the warning names the replay).
    const frames = (await storedResultItems(h.results, v)).flatMap((i) => expandStored(i)).map((r) => r.frame);
    expect(frames).toEqual(range(0, 90));
    expect(statusRows(await h.frameResults(v))).toEqual([...range(0, 30).map((f) => `${f}:ok`), ...range(30, 15).map((f) => `${f}:failed:after-end-of-stream`), ...range(45, 45).map((f) => `${f}:ok`)]);
    expect(await h.summary(v)).toMatchObject({ status: 'complete', framesOk: 75, framesFailed: 15, framesGap: 0, framesLate: 0 });
    // The listing from 30 saw segment 0, which covers it (its key names frame 0, below the listing's start).
    expect(worker.logsMatching(/^listed frames$/, ['debug']).map((l) => l.fields?.coveringSegment)).toContain(`frames/${v}/000000.mp4`);
  });
});
