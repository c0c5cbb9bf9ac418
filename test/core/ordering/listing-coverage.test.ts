/**
 * A listing proves absence only as far as it covered (issue 19, item 6): keys wider than
 * their pad, mixed widths and listings cut short after some pages. The rule is pure
 * (core/ordering/listing-coverage.ts); the second part drives FrameStore.listFrames over an
 * in-memory bucket with the S3 ordering rules and 5-key pages, to explore many cut points
 * (the fauxqs test in test/integration/frame-listing.test.ts checks the same on a real
 * S3 emulator with 1,000-key pages).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { FrameStore } from '../../../core/ingest/s3/frame-store.ts';
import { coveredThrough, frameStem } from '../../../core/ordering/listing-coverage.ts';
import { rng } from '../../../core/random.ts';

const MAX = Number.MAX_SAFE_INTEGER;

describe('coveredThrough', () => {
  const cases: { name: string; fromFrame: number; padWidth?: number; startAfterName?: string; lastName?: string; want: number }[] = [
    { name: 'a padded seek that reached the end covers its width only', fromFrame: 500, padWidth: 6, startAfterName: '000500', want: MAX },
    { name: 'past a million under %06d, a seek from 999990 stops at 999999', fromFrame: 999_990, padWidth: 6, startAfterName: '999990', want: 999_999 },
    { name: 'a padded seek cut short covers up to its last key', fromFrame: 500, padWidth: 6, startAfterName: '000500', lastName: '001499.jpg', want: 1499 },
    { name: 'a seek at the natural width past the pad', fromFrame: 1_000_000, padWidth: 6, startAfterName: '1000000', lastName: '1000999.jpg', want: 1_000_999 },
    { name: 'an unpadded listing from the start that reached the end covers everything', fromFrame: 5, want: MAX },
    { name: 'an unpadded listing cut short at 1899.jpg does not cover 5 (5.jpg sorts later)', fromFrame: 5, lastName: '1899.jpg', want: 4 },
    { name: 'an unpadded listing cut short covers the frames whose keys sort before its last', fromFrame: 1, lastName: '1899.jpg', want: 1 },
    { name: 'an unpadded seek from 500 covers 500..999, not 1000 (sorts before 500)', fromFrame: 500, startAfterName: '500', want: 999 },
    { name: 'an end marker as the last key covers every digit key', fromFrame: 0, padWidth: 6, lastName: '_end', want: MAX },
  ];
  it.each(cases)('$name', ({ want, ...w }) => {
    expect(coveredThrough(w)).toBe(want);
  });
});

/** An in-memory bucket that lists like S3: byte order, StartAfter, continuation, `pageSize` keys a page. */
function bucketOf(keys: readonly string[], pageSize: number): S3Client {
  const sorted = [...keys].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    send: async (command: { input: { Prefix: string; StartAfter?: string; ContinuationToken?: string } }) => {
      const { Prefix, StartAfter, ContinuationToken } = command.input;
      const after = ContinuationToken ?? StartAfter ?? '';
      const rest = sorted.filter((k) => k.startsWith(Prefix) && k > after);
      const page = rest.slice(0, pageSize);
      const truncated = rest.length > pageSize;
      return { Contents: page.map((Key) => ({ Key, Size: 1 })), IsTruncated: truncated, NextContinuationToken: truncated ? page.at(-1) : undefined };
    },
  } as unknown as S3Client;
}

describe('FrameStore.listFrames never proves an existing frame absent', () => {
  const shapes: { name: string; key: (f: number, rand: () => number) => string; pad?: number }[] = [
    { name: '%06d', key: (f) => frameStem(f, 6), pad: 6 },
    { name: '%04d running past 9999', key: (f) => frameStem(f, 4), pad: 4 },
    { name: 'unpadded', key: (f) => String(f) },
  ];
  it.each(shapes)('$name: every existing frame in [fromFrame, coveredThrough] is listed, and coverage moves on', async ({ key, pad }) => {
    const rand = rng(19);
    for (let trial = 0; trial < 40; trial++) {
      // Prepare: a video of 60 frames somewhere around the pad's limit, with holes.
      const base = [0, 9_950, 999_950, 1_000][trial % 4]!;
      const exists = Array.from({ length: 60 }, (_, i) => base + i).filter(() => rand() > 0.25);
      const keys = [...exists.map((f) => `frames/v/${key(f, rand)}.jpg`), 'frames/v/_end'];
      const store = new FrameStore(bucketOf(keys, 5));
      const fromFrame = base + Math.floor(rand() * 60);
      const maxPages = 1 + Math.floor(rand() * 4);
      // Act
      const listing = await store.listFrames('b', 'v', fromFrame, pad, maxPages);
      // Assess
      const listed = new Set(listing.frames.map((r) => r.frame));
      for (const f of exists) if (f >= fromFrame && f <= listing.coveredThrough) expect(listed.has(f), `frame ${f} from ${fromFrame}, covered ${listing.coveredThrough}`).toBe(true);
      for (const f of listed) expect(exists).toContain(f);
      expect(listing.requests).toBeLessThanOrEqual(maxPages * 2 + 1);
    }
  });

  it('keys in another form than the video\'s (7.jpg among %06d keys) make the listing start over from the prefix and find them', async () => {
    // Prepare: frames 0..40 as %06d, except frame 7 written unpadded; 5-key pages.
    const keys = Array.from({ length: 41 }, (_, f) => (f === 7 ? 'frames/v/7.jpg' : `frames/v/${frameStem(f, 6)}.jpg`));
    const store = new FrameStore(bucketOf(keys, 5));
    // Act: the seek from 5 reaches 7.jpg (it sorts after every 0-led key) within its pages.
    const listing = await store.listFrames('b', 'v', 5, 6, 10);
    // Assess
    expect(listing.frames.map((r) => r.frame)).toContain(7);
    expect(listing.coveredThrough).toBe(MAX);
  });

  it('a padded video past the pad: the seek covers up to 999999, and the next one from 1000000 finds what sorts before the first', async () => {
    const exists = [999_997, 1_000_000, 1_000_001];
    const store = new FrameStore(bucketOf(exists.map((f) => `frames/v/${frameStem(f, 6)}.jpg`), 5));
    const first = await store.listFrames('b', 'v', 999_998, 6);
    expect(first.frames).toEqual([]);
    expect(first.coveredThrough).toBe(999_999);
    const next = await store.listFrames('b', 'v', 1_000_000, 6);
    expect(next.frames.map((r) => r.frame)).toEqual([1_000_000, 1_000_001]);
  });

  it('stops paging once it covers throughFrame', async () => {
    const exists = Array.from({ length: 100 }, (_, i) => i);
    const store = new FrameStore(bucketOf(exists.map((f) => `frames/v/${frameStem(f, 6)}.jpg`), 5));
    const listing = await store.listFrames('b', 'v', 10, 6, 50, 22);
    expect(listing.requests).toBe(3);
    expect(listing.coveredThrough).toBeGreaterThanOrEqual(22);
  });
});
