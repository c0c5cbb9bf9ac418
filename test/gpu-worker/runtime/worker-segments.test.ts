/**
 * Encoded segments as a source (issue 34; the key contract is core/ingest/segment-keys.ts):
 * the real worker on the in-memory twins (SQS FIFO model, lease table twin, S3 twin), fed
 * real H.264 made by ffmpeg (test/gpu-worker/video/fixtures/), decoded by FFmpeg (node-av).
 * Every frame of every segment gets exactly one record, in order, whatever the segments do:
 * missing, late, duplicated, truncated, of different lengths and containers.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedResultItems } from '../../../core/commit/dynamodb/results-reader.ts';
import { expandStored } from '../../../core/commit/record-packing.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { allEvents } from '../../../core/analytics/dynamodb/events-reader.ts';
import { WorkerHarness } from '../../../harness/worker-harness.ts';

const FIXTURES = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'video', 'fixtures');
const fixture = (name: string): Uint8Array => new Uint8Array(readFileSync(path.join(FIXTURES, name)));
/** 45 frames, B-frames, MP4 (the container states its count). */
const MP4_45 = fixture('bframes-45.mp4');
/** 30 frames, MPEG-TS (no count in the container). */
const TS_30 = fixture('cfr-30.mpegts');

const statusRows = (items: readonly FrameResultItem[]) => items.map((r) => `${r.frame}:${r.status}${r.reason ? `:${r.reason}` : ''}`);
const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i);

describe('worker: encoded segments', () => {
  let h: WorkerHarness;

  beforeAll(async () => {
    h = await WorkerHarness.start({ backend: 'memory', slots: 1, tunables: { firstFrameNumber: 0, reorderWaitMs: 300 } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('gives every frame of contiguous segments of different lengths and containers one ok record, in order', async () => {
    const v = h.videoId('seg');
    await h.pinVideo(v, 0);
    // 45 declared (MP4), 30 undeclared (MPEG-TS: counted by the demuxer), 45 undeclared (MP4: the container's count).
    await h.putSegment(v, 0, MP4_45, { frames: 45 });
    await h.putSegment(v, 45, TS_30, { container: 'mpegts' });
    await h.putSegment(v, 75, MP4_45);
    await h.putEnd(v, 119);
    const worker = h.createWorker(0).start();
    await h.sendSegment(0, v, 0);
    await h.sendSegment(0, v, 45, 'mpegts');
    await h.sendSegment(0, v, 75);
    await h.sendEnd(0, v);
    const summary = await h.waitForSummary(v, (s) => s.status === 'complete');
    await worker.stop();

    const items = await h.frameResults(v);
    expect(statusRows(items)).toEqual(range(0, 120).map((f) => `${f}:ok`));
    expect(summary).toMatchObject({ framesOk: 120, framesFailed: 0, framesGap: 0 });
    // Each record carries its frame's time in its own stream, and the segment's key.
    items.slice(0, 45).forEach((r, i) => expect(r.ptsMs).toBeCloseTo((i * 1000) / 30, 2));
    expect(items[45]!.ptsMs).toBeGreaterThan(1000); // MPEG-TS starts its time line at 1.4 s
    expect(new Set(items.map((r) => r.key))).toEqual(new Set([`frames/${v}/000000.mp4`, `frames/${v}/000045.ts`, `frames/${v}/000075.mp4`]));
    // Stored per segment, not per frame (decision 56): each unit's run of a segment is one
    // packed item, so the table holds far fewer items than records, and none repeats a frame.
    const stored = await storedResultItems(h.results, v);
    const packed = stored.filter((i) => i.status === 'packed');
    expect(packed.length).toBeGreaterThan(0);
    expect(stored.length).toBeLessThanOrEqual(120 / 4);
    expect(stored.reduce((n, i) => n + (i.status === 'packed' ? Number(i.packedCount) : 1), 0)).toBe(120);
    expect(items.filter((r) => r.packed).length).toBeGreaterThan(100);
    expect(worker.metricTotal(METRIC_NAMES.worker.segmentsDescribed)).toBe(3);
    expect(worker.metricTotal(METRIC_NAMES.worker.segmentFramesDecoded)).toBe(120);
    // Which decoder runs is said once, as one of the fixed placements (the metric's dimension too): `auto` without a CUDA device is the CPU, as configured.
    expect(worker.logsMatching(/^segment decoder in use$/).map((l) => [l.fields?.decoder, l.fields?.detail])).toEqual([['cpu', expect.stringMatching(/^h264 cpu/)]]);
    expect(new Set(worker.metrics.filter((m) => m.name === METRIC_NAMES.worker.segmentFramesDecoded).map((m) => m.dimensions?.Decoder))).toEqual(new Set(['cpu']));
  });

  it('records a missing segment as gaps once the listing says so, then runs it late when it comes, and processes a duplicate once', async () => {
    const v = h.videoId('seg-gap');
    await h.pinVideo(v, 0);
    await h.putSegment(v, 0, MP4_45, { frames: 45 });
    await h.putSegment(v, 90, MP4_45, { frames: 45 });
    await h.putEnd(v, 134);
    const worker = h.createWorker(0).start();
    await h.sendSegment(0, v, 0);
    await h.sendSegment(0, v, 90);
    await h.sendEnd(0, v);
    // Frames 45-89 do not exist: gaps, after the listing.
    await h.waitForResults(v, 135);
    expect(statusRows(await h.frameResults(v))).toEqual([...range(0, 45).map((f) => `${f}:ok`), ...range(45, 45).map((f) => `${f}:gap:missing-frame`), ...range(90, 45).map((f) => `${f}:ok`)]);

    // The segment comes late: each of its frames replaces its gap, once.
    await h.putSegment(v, 45, MP4_45, { frames: 45 });
    await h.sendSegment(0, v, 45);
    await h.waitForSummary(v, (s) => s.framesLate === 45);
    // A duplicate notification of a processed segment changes nothing.
    const duplicatesBefore = worker.metricTotal(METRIC_NAMES.worker.framesDuplicate);
    await h.queues.send(0, [{ message: { ...h.frameMessage(v, 0), key: `frames/${v}/000000.mp4` }, replayTag: 'dup-notification' }]);
    await h.waitFor('the duplicate counted', async () => worker.metricTotal(METRIC_NAMES.worker.framesDuplicate) > duplicatesBefore);
    await worker.stop();

    const items = await h.frameResults(v);
    expect(statusRows(items)).toEqual([...range(0, 45).map((f) => `${f}:ok`), ...range(45, 45).map((f) => `${f}:late`), ...range(90, 45).map((f) => `${f}:ok`)]);
    const summary = await h.summary(v);
    expect(summary).toMatchObject({ status: 'complete', framesOk: 90, framesLate: 45, framesGap: 0 });
  });

  it('keeps one record per frame when an end marker moves later over frames recorded after-end-of-stream and their segment comes again', async () => {
    // Prepare: segment 0 (45 frames) under an end marker at 29: 30-44 are recorded after-end-of-stream
    const v = h.videoId('seg-end-moves');
    await h.pinVideo(v, 0);
    await h.putSegment(v, 0, MP4_45, { frames: 45 });
    await h.putEnd(v, 29);
    // The marker first, so that the worker knows the end before it reaches frame 30.
    await h.sendEnd(0, v);
    await h.sendSegment(0, v, 0);
    const worker = h.createWorker(0).start();
    await h.waitForResults(v, 45);
    expect(statusRows(await h.frameResults(v))).toEqual([...range(0, 30).map((f) => `${f}:ok`), ...range(30, 15).map((f) => `${f}:failed:after-end-of-stream`)]);

    // Act: the end moves to 89, the next segment comes, and segment 0's notification comes again
    // (without that notification the listing from 30 must find segment 0 itself:
    // end-marker-moved-segments.test.ts)
    await h.putSegment(v, 45, MP4_45, { frames: 45 });
    await h.putEnd(v, 89);
    await h.sendEnd(0, v, { replayTag: 'moved' });
    await h.sendSegment(0, v, 45);
    await h.queues.send(0, [{ message: { ...h.frameMessage(v, 0), key: `frames/${v}/000000.mp4` }, replayTag: 'again' }]);
    await h.waitForSummary(v, (s) => s.status === 'complete' && s.endFrame === 89 && (s.lastFrame ?? 0) >= 89);
    await new Promise((r) => setTimeout(r, 1_000));
    await worker.stop();

    // Assess: as stored, every frame 0-89 once; 30-44 keep their record (segment 0's frames
    // came in order again: the read before the write found their records, decision 56)
    const frames = (await storedResultItems(h.results, v)).flatMap((i) => expandStored(i)).map((r) => r.frame);
    expect(frames).toEqual(range(0, 90));
    expect(statusRows(await h.frameResults(v))).toEqual([...range(0, 30).map((f) => `${f}:ok`), ...range(30, 15).map((f) => `${f}:failed:after-end-of-stream`), ...range(45, 45).map((f) => `${f}:ok`)]);
    expect(await h.summary(v)).toMatchObject({ framesOk: 75, framesFailed: 15, framesGap: 0 });
  });

  it('gives the frames a truncated segment cannot yield failed records with the decoder reason, and goes on with the next segment', async () => {
    const v = h.videoId('seg-cut');
    await h.pinVideo(v, 0);
    // The uploader declared 45 frames; a third of the bytes arrived (faststart: the index comes first, so it demuxes).
    const cut = fixture('bframes-45-faststart.mp4').subarray(0, Math.floor(MP4_45.byteLength / 3));
    await h.putSegment(v, 0, cut, { frames: 45 });
    await h.putSegment(v, 45, MP4_45, { frames: 45 });
    await h.putEnd(v, 89);
    const worker = h.createWorker(0).start();
    await h.sendSegment(0, v, 0);
    await h.sendSegment(0, v, 45);
    await h.sendEnd(0, v);
    const summary = await h.waitForSummary(v, (s) => s.status === 'complete');
    await worker.stop();

    const items = await h.frameResults(v);
    expect(items.map((r) => r.frame)).toEqual(range(0, 90));
    const failed = items.filter((r) => r.status === 'failed');
    expect(failed.length).toBeGreaterThan(0);
    // The frames it yielded are ok, at their own numbers (a frame the decoder could not produce
    // before the cut does not renumber the ones after it: decision 67); the rest fail with the decoder's reason.
    const firstFailed = failed[0]!.frame;
    expect(firstFailed).toBeGreaterThan(5);
    expect(items.slice(0, firstFailed).every((r) => r.status === 'ok')).toBe(true);
    expect(failed.every((r) => r.frame < 45 && (r.reason === 'truncated' || r.reason === 'decode-error'))).toBe(true);
    expect(items.slice(40, 45).every((r) => r.status === 'failed')).toBe(true);
    expect(items.slice(45).every((r) => r.status === 'ok')).toBe(true);
    expect(summary.framesFailed).toBe(failed.length);
  });

  it('raises source.stalled when a live video\'s segments stop coming, and source.resumed with the next one, each once', async () => {
    const v = h.videoId('seg-live');
    await h.pinVideo(v, 0);
    const worker = h.createWorker(0).start();
    // A camera: a segment every 300 ms (the watch judges by at least 1 s per interval).
    for (let i = 0; i < 4; i++) {
      await h.putSegment(v, i * 45, MP4_45, { frames: 45 });
      await h.sendSegment(0, v, i * 45);
      await new Promise((r) => setTimeout(r, 300));
    }
    await h.waitForResults(v, 180);
    const kinds = async () => (await allEvents(h.clients.ddb, h.wiring.eventsTable, v)).filter((e) => e.kind.startsWith('source.'));
    const stalled = await h.waitFor('source.stalled', async () => ((await kinds()).length === 1 ? await kinds() : undefined), 30_000);
    expect(stalled.map((e) => [e.kind, e.frame, e.detail?.stall])).toEqual([['source.stalled', 180, 1]]);
    expect(worker.metricTotal(METRIC_NAMES.worker.sourcesStalled)).toBe(1);
    // The camera comes back.
    await h.putSegment(v, 180, MP4_45, { frames: 45 });
    await h.sendSegment(0, v, 180);
    await h.waitForResults(v, 225);
    const both = await h.waitFor('source.resumed', async () => ((await kinds()).length === 2 ? await kinds() : undefined), 30_000);
    // Both at frame 180 (ids order them by kind there): the stall's pair, numbered 1.
    expect(both.map((e) => [e.kind, e.frame, e.detail?.stall]).sort()).toEqual([['source.resumed', 180, 1], ['source.stalled', 180, 1]]);
    // An end marker ends the watch: no stall after it.
    await h.putEnd(v, 224);
    await h.sendEnd(0, v);
    await h.waitForSummary(v, (s) => s.status === 'complete');
    await new Promise((r) => setTimeout(r, 3_500));
    await worker.stop();
    expect((await kinds()).map((e) => e.kind).sort()).toEqual(['source.resumed', 'source.stalled']);
  });

  it('records the frames of an object that is no video, up to the next segment, failed with its reason (decision 59)', async () => {
    const v = h.videoId('seg-junk');
    await h.pinVideo(v, 0);
    await h.putSegment(v, 0, new TextEncoder().encode('this is not a video'));
    await h.putSegment(v, 10, MP4_45, { frames: 45 });
    await h.putEnd(v, 54);
    const worker = h.createWorker(0).start();
    await h.sendSegment(0, v, 0);
    await h.sendSegment(0, v, 10);
    await h.sendEnd(0, v);
    await h.waitForSummary(v, (s) => s.status === 'complete');
    await worker.stop();

    const items = await h.frameResults(v);
    expect(statusRows(items)).toEqual([...range(0, 10).map((f) => `${f}:failed:unreadable-container`), ...range(10, 45).map((f) => `${f}:ok`)]);
    expect(worker.logsMatching(/^segment frame count unknown/, ['warn'])).toHaveLength(1);
  });
});
