/**
 * Listings on the fauxqs S3 emulator (real byte order, real 1,000-key pages): a listing
 * never proves absent a frame whose object exists (issue 19, item 6), and the sequencer,
 * fed `coveredThrough`, records no gap for such a frame.
 */
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FrameStore } from '../../core/ingest/s3/frame-store.ts';
import { frameStem } from '../../core/ordering/listing-coverage.ts';
import { VideoSequencer } from '../../core/ordering/sequencer.ts';
import { LOCAL_CREDENTIALS, startFauxqsEmulator, type FauxqsHandle } from '../../local/emulators.ts';

const region = 'us-east-1';
const bucket = 'frames-listing';

describe('FrameStore.listFrames on fauxqs S3', () => {
  let fauxqs: FauxqsHandle;
  let s3: S3Client;
  let store: FrameStore;

  async function put(videoId: string, names: readonly string[]): Promise<void> {
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((n) => s3.send(new PutObjectCommand({ Bucket: bucket, Key: `frames/${videoId}/${n}`, Body: 'x' }))));
    }
  }

  beforeAll(async () => {
    fauxqs = await startFauxqsEmulator({ region });
    s3 = new S3Client({ region, credentials: { ...LOCAL_CREDENTIALS }, endpoint: fauxqs.endpoint, forcePathStyle: true });
    store = new FrameStore(s3);
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  });
  afterAll(async () => {
    await fauxqs?.stop();
  });

  it('%06d past a million: frame 1000000 sorts before the seek from 999998, so the listing proves nothing beyond 999999 and no gap is recorded for it', async () => {
    // Prepare: frames 999990..999997 and 1000000..1000003 exist; 999998 and 999999 do not.
    const frames = [...Array.from({ length: 8 }, (_, i) => 999_990 + i), 1_000_000, 1_000_001, 1_000_002, 1_000_003];
    await put('wide', [...frames.map((f) => `${frameStem(f, 6)}.jpg`), '_end']);
    // Act
    const listing = await store.listFrames(bucket, 'wide', 999_998, 6);
    // Assess: the old `complete` said "nothing else exists"; the coverage stops at the width.
    expect(listing.frames).toEqual([]);
    expect(listing.complete).toBe(true);
    expect(listing.coveredThrough).toBe(999_999);
    // The sequencer, given the coverage, gaps 999998 and 999999 and waits for 1000000.
    const seq = new VideoSequencer({ reorderWaitMs: 1000, reorderBufferFrames: 8, firstFrameNumber: 999_998 });
    seq.setEnd(1_000_004);
    seq.offer({ frame: 1_000_004, bucket, key: 'frames/wide/1000004.jpg', sizeBytes: 1 }, 0);
    seq.learnListing(999_998, listing.frames, listing.coveredThrough, 10_000);
    const steps = seq.take(10_000);
    expect(steps.map((s) => (s.type === 'gap' ? s.frame : -1))).toEqual([999_998, 999_999]);
    // The next listing seeks at the natural width and finds the frames a notification never brought.
    const next = await store.listFrames(bucket, 'wide', 1_000_000, 6);
    expect(next.frames.map((r) => r.frame)).toEqual([1_000_000, 1_000_001, 1_000_002, 1_000_003]);
    seq.learnListing(1_000_000, next.frames, next.coveredThrough, 12_000);
    expect(seq.take(12_000).filter((s) => s.type === 'gap')).toEqual([]);
  });

  it('an unpadded video past one page: the first page proves nothing about frame 950 (950.jpg sorts near the end), and a seek does', async () => {
    // Prepare: frames 0..1099 unpadded, except 950: more than one page of 1,000 keys.
    const frames = Array.from({ length: 1100 }, (_, f) => f).filter((f) => f !== 950);
    await put('unpadded', frames.map((f) => `${f}.jpg`));
    // Act: one page, as a listing limited to one page would make.
    const listing = await store.listFrames(bucket, 'unpadded', 940, undefined, 1);
    // Assess: whatever it covers, every existing frame in that range was listed...
    const listed = new Set(listing.frames.map((r) => r.frame));
    for (const f of frames) if (f >= 940 && f <= listing.coveredThrough) expect(listed.has(f), `frame ${f}`).toBe(true);
    // ...the first page proved nothing from 940 on, so one page sought to 940 followed: it
    // covers 940..999 (1000.jpg sorts before 940.jpg), and frame 950 is absent there.
    expect(listing.requests).toBe(2);
    expect(listing.coveredThrough).toBe(999);
    expect(listed.has(950)).toBe(false);
    expect(listed.has(951)).toBe(true);
  });

  it('a padded listing cut short by its page budget covers exactly what it listed', async () => {
    const frames = Array.from({ length: 1200 }, (_, f) => f);
    await put('padded', frames.map((f) => `${frameStem(f, 6)}.jpg`));
    const one = await store.listFrames(bucket, 'padded', 100, 6, 1);
    expect(one.coveredThrough).toBe(1099);
    expect(one.frames).toHaveLength(1000);
    const upTo = await store.listFrames(bucket, 'padded', 100, 6, 5, 1150);
    expect(upTo.requests).toBe(2);
    expect(upTo.coveredThrough).toBe(Number.MAX_SAFE_INTEGER);
  });
});
