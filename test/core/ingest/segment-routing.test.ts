/**
 * Segments through the pure and adapter pieces that carry frames today (issue 34): the
 * router's parse of an S3 event, the S3 adapter's listing (on the S3 twin), and the
 * checkpoint's packed form of a segment's buffered frames.
 */
import { describe, expect, it } from 'vitest';
import { parseIngestBody } from '../../../core/ingest/s3-events.ts';
import { FrameStore } from '../../../core/ingest/s3/frame-store.ts';
import { MemoryS3 } from '../../../core/ingest/memory/memory-s3.ts';
import { FRAMES_METADATA_KEY } from '../../../core/ingest/segment-keys.ts';
import { emptySequencerState, packSequencerState, upgradeSequencerState, VideoSequencer, type SequencerState } from '../../../core/ordering/sequencer.ts';

const event = (key: string, size = 1000) =>
  JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', eventTime: '2026-11-27T00:00:00.000Z', s3: { bucket: { name: 'b' }, object: { key, size, eTag: 'e1' } } }] });

describe('router: segment keys', () => {
  it.each([
    ['frames/cam-1/000120.mp4', 120],
    ['frames/cam-1/000120.ts', 120],
    ['frames/cam-1/7.mkv', 7],
    ['frames/cam-1/000045.M4V', 45],
  ])('routes %s as a frame message for its first frame %i, with its key', (key, frame) => {
    const [item] = parseIngestBody(event(key), 'b');
    expect(item).toEqual({ kind: 'route', message: { kind: 'frame', videoId: 'cam-1', frame, bucket: 'b', key, sizeBytes: 1000, eventTime: '2026-11-27T00:00:00.000Z', eTag: 'e1' } });
  });

  it('still rejects what is neither a frame nor a segment, with the reason images had', () => {
    const [item] = parseIngestBody(event('frames/cam-1/000001.avi'), 'b');
    expect(item).toMatchObject({ kind: 'reject', reason: 'non-image-extension' });
  });
});

describe('S3 adapter: listing a video made of segments', () => {
  it('lists each segment as its first frame, beside images, from a padded seek', async () => {
    const s3 = new MemoryS3().createBucket('b');
    for (const n of [0, 45, 90]) s3.putObject('b', `frames/v/${String(n).padStart(6, '0')}.mp4`, new Uint8Array(10), { [FRAMES_METADATA_KEY]: '45' });
    s3.putObject('b', 'frames/v/000135.jpg', new Uint8Array(5));
    s3.putObject('b', 'frames/v/_end', '135');
    const listing = await new FrameStore(s3.asClient()).listFrames('b', 'v', 45, 6);
    expect(listing.frames.map((r) => [r.frame, r.key])).toEqual([
      [45, 'frames/v/000045.mp4'],
      [90, 'frames/v/000090.mp4'],
      [135, 'frames/v/000135.jpg'],
    ]);
    const head = await new FrameStore(s3.asClient()).head('b', 'frames/v/000045.mp4');
    expect(head).toMatchObject({ sizeBytes: 10, metadata: { frames: '45' } });
  });
});

describe('checkpoint: a segment buffered is one entry', () => {
  const seg = (frame: number, key = 'frames/v/000010.mp4') => ({ frame, bucket: 'b', key, sizeBytes: 5000 });

  it('packs runs of one segment, keeps images apart, and unpacks to the same state', () => {
    const q = new VideoSequencer({ reorderWaitMs: 1000, reorderBufferFrames: 64, firstFrameNumber: 0 });
    for (let f = 10; f < 310; f++) q.offer(seg(f), 1);
    q.offer({ frame: 310, bucket: 'b', key: 'frames/v/000310.jpg', sizeBytes: 9 }, 2);
    q.offer({ frame: 311, bucket: 'b', key: 'frames/v/000311.jpg', sizeBytes: 9 }, 2);
    for (let f = 312; f < 320; f++) q.offer(seg(f, 'frames/v/000312.mp4'), 3);
    const packed = q.checkpointState();
    expect(packed.buffered.map((b) => [b.frame, (b as { count?: number }).count ?? 1, b.key])).toEqual([
      [10, 300, 'frames/v/000010.mp4'],
      [310, 1, 'frames/v/000310.jpg'],
      [311, 1, 'frames/v/000311.jpg'],
      [312, 8, 'frames/v/000312.mp4'],
    ]);
    expect(JSON.stringify(packed).length).toBeLessThan(1_000);
    // Read back (as a checkpoint is) and rebuilt: the very state the sequencer had.
    expect(upgradeSequencerState(structuredClone(packed))).toEqual(q.snapshot());
    expect(new VideoSequencer({ reorderWaitMs: 1000, reorderBufferFrames: 64, firstFrameNumber: 0 }, packed).snapshot()).toEqual(q.snapshot());
  });

  it('does not join frames of one key that are not consecutive, or that arrived at different times', () => {
    const s: SequencerState = { ...emptySequencerState(0), buffered: [
      { ...seg(10), seenAtMs: 1 },
      { ...seg(11), seenAtMs: 1 },
      { ...seg(13), seenAtMs: 1 },
      { ...seg(14), seenAtMs: 2 },
    ] };
    const packed = packSequencerState(s);
    expect(packed.buffered.map((b) => [b.frame, (b as { count?: number }).count ?? 1])).toEqual([[10, 2], [13, 1], [14, 1]]);
    expect(upgradeSequencerState(packed).buffered).toEqual(s.buffered);
  });

  it('packs late frames of one segment, each keeping whether it replaces a gap', () => {
    const s: SequencerState = { ...emptySequencerState(0), nextFrame: 100, late: [
      { ...seg(10), replacesGap: true },
      { ...seg(11), replacesGap: true },
      { ...seg(12), replacesGap: false },
    ] };
    const packed = packSequencerState(s);
    expect(packed.late.map((b) => [b.frame, (b as { count?: number }).count ?? 1, b.replacesGap])).toEqual([[10, 2, true], [12, 1, false]]);
    expect(upgradeSequencerState(packed).late).toEqual(s.late);
  });
});
