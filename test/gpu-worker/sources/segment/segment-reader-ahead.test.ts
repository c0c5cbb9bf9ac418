/**
 * The segment reader reading ahead across rounds (decision 51): a video's next segments are
 * fetched while its current one decodes, a window of `segmentsAhead` past the one decoding
 * that moves on as each decoder opens, within the byte budget; a segment read ahead is
 * decoded without a GET of its own, and one whose GET failed ahead is fetched (and its
 * failure reported) exactly as without reading ahead. Real H.264 (MP4, 45 frames).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import type { FrameSource } from '../../../../core/ingest/port.ts';
import { nullMetrics, type LogSink } from '../../../../core/ports.ts';
import type { FrameRef } from '../../../../core/ordering/sequencer.ts';
import { FramePrefetch } from '../../../../gpu-worker/sources/ahead/frame-prefetch.ts';
import { SegmentReader, type SegmentFrame } from '../../../../gpu-worker/sources/segment/segment-reader.ts';
import { s3Error } from '../../../../harness/worker-doubles.ts';

const MP4_45 = new Uint8Array(readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '../../video/fixtures', 'bframes-45.mp4')));
const K = 45;
const SIZE = MP4_45.byteLength;
const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

const keyOf = (n: number) => `frames/v/${String(n).padStart(6, '0')}.mp4`;
/** Every frame of segments `firsts`, in order, as the video's upcoming frames. */
const framesOf = (firsts: readonly number[]): FrameRef[] => firsts.flatMap((n) => Array.from({ length: K }, (_, i) => ({ frame: n + i, bucket: 'b', key: keyOf(n), sizeBytes: SIZE })));

/** S3 holding segments at `firsts` (45 frames declared): records each read, in order; `fail` decides a read's error. */
function segmentStore(fail: (how: 'get' | 'getVersion', key: string) => Error | undefined = () => undefined) {
  const reads: string[] = [];
  const frames: Pick<FrameSource, 'head' | 'get' | 'getVersion'> = {
    head: async (_b, key) => ({ sizeBytes: SIZE, eTag: `etag-${key}`, metadata: { frames: String(K) } }),
    get: async (_b, key, ifMatch) => {
      reads.push(`get ${key} if-match ${ifMatch}`);
      const e = fail('get', key);
      if (e) throw e;
      return MP4_45;
    },
    getVersion: async (_b, key) => {
      reads.push(`getVersion ${key}`);
      const e = fail('getVersion', key);
      if (e) throw e;
      return { bytes: MP4_45, eTag: `etag-${key}` };
    },
  };
  return { frames, reads };
}

function reader(frames: Pick<FrameSource, 'head' | 'get' | 'getVersion'>, options: { segmentsAhead: number; budgetBytes: number }) {
  const prefetch = new FramePrefetch(frames as FrameSource);
  const r = new SegmentReader({
    frames,
    log: quiet,
    metrics: nullMetrics,
    maxSegmentBytes: 10 * SIZE,
    hardware: 'cpu',
    ahead: prefetch,
    segmentsAhead: options.segmentsAhead,
    aheadBudgetBytes: options.budgetBytes,
  });
  return { r, prefetch };
}

const statusOf = (f: SegmentFrame) => ('pixels' in f ? 'ok' : `failed:${'reason' in f.failed ? f.failed.reason : ''}`);
const tick = () => new Promise((res) => setTimeout(res, 10));

describe('SegmentReader: segments read ahead', () => {
  let open: SegmentReader | undefined;
  afterEach(async () => {
    await open?.closeAll();
    open = undefined;
  });

  it('fetches the segment to decode and the next ones within the window, moves the window as each decoder opens, and GETs no segment twice', async () => {
    // Prepare: four described segments, a window of one past the one decoding
    const firsts = [0, 45, 90, 135];
    const { frames, reads } = segmentStore();
    const { r, prefetch } = reader(frames, { segmentsAhead: 1, budgetBytes: 10 * SIZE });
    open = r;
    for (const n of firsts) await r.describe('b', keyOf(n));
    const upcoming = framesOf(firsts);

    // Act: told the upcoming frames (a round's start), then frames decoded in order up to the third segment's first
    r.readAhead('v', upcoming);
    const readsAtStart = [...reads];
    const decoded: SegmentFrame[] = [];
    for (const ref of upcoming.slice(0, 2 * K + 1)) decoded.push(await r.frame(ref));
    await tick();

    // Assess: 0 and 45 at once; 90 when 45 opened; 135 when 90 opened; each by one conditional GET, none by the decoder
    expect(readsAtStart).toEqual([`get ${keyOf(0)} if-match etag-${keyOf(0)}`, `get ${keyOf(45)} if-match etag-${keyOf(45)}`]);
    expect(reads).toEqual(firsts.map((n) => `get ${keyOf(n)} if-match etag-${keyOf(n)}`));
    expect(decoded.map(statusOf)).toEqual(decoded.map(() => 'ok'));
    expect(prefetch.segmentsUsed).toBe(3);
  });

  it('holds no more segments than the byte budget allows: one that does not fit is read ahead once the one before has opened, or by its decoder', async () => {
    // Prepare: a window of two, a budget of one and a half segments
    const firsts = [0, 45, 90];
    const { frames, reads } = segmentStore();
    const { r, prefetch } = reader(frames, { segmentsAhead: 2, budgetBytes: Math.floor(1.5 * SIZE) });
    open = r;
    for (const n of firsts) await r.describe('b', keyOf(n));

    // Act
    r.readAhead('v', framesOf(firsts));
    const heldAtStart = prefetch.segmentBytesHeld;
    const readsAtStart = [...reads];
    await r.frame(framesOf([0])[0]!);
    await tick();

    // Assess: only the first fits at the start; once it opened (its bytes handed to its decoder), the next fits
    expect(heldAtStart).toBe(SIZE);
    expect(readsAtStart).toEqual([`get ${keyOf(0)} if-match etag-${keyOf(0)}`]);
    expect(reads).toEqual([`get ${keyOf(0)} if-match etag-${keyOf(0)}`, `get ${keyOf(45)} if-match etag-${keyOf(45)}`]);
    expect(prefetch.segmentBytesHeld).toBeLessThanOrEqual(1.5 * SIZE);
  });

  it('fetches a segment whose GET failed ahead when its frame is asked for, and reports a lasting failure as it would without reading ahead', async () => {
    // Prepare: the segment at 45 cannot be read at all (an archived object); the one at 0 only fails ahead, once
    const denied = s3Error('InvalidObjectState', 'archived', 403);
    let aheadFailures = 0;
    const { frames, reads } = segmentStore((how, key) => {
      if (key === keyOf(45)) return denied;
      if (how === 'get' && key === keyOf(0) && aheadFailures++ === 0) return s3Error('SlowDown', 'slow down', 503);
      return undefined;
    });
    const { r } = reader(frames, { segmentsAhead: 1, budgetBytes: 10 * SIZE });
    open = r;
    for (const n of [0, 45]) await r.describe('b', keyOf(n));

    // Act
    r.readAhead('v', framesOf([0, 45]));
    await tick();
    const first = await r.frame(framesOf([0])[0]!);
    const outcome = await r.frame(framesOf([45])[0]!).then(statusOf, (e: Error) => `threw ${e.name}`);

    // Assess: the first decodes from its own GET; the second throws the store's error for the frame runner to record
    expect(statusOf(first)).toBe('ok');
    expect(outcome).toBe('threw InvalidObjectState');
    expect(reads.filter((x) => x.startsWith('getVersion'))).toEqual([`getVersion ${keyOf(0)}`, `getVersion ${keyOf(45)}`]);
  });
});
