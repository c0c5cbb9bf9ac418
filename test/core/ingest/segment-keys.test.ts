import { describe, expect, it } from 'vitest';
import { parseFrameKey } from '../../../core/ingest/keys.ts';
import {
  compareRanges,
  declaredFrameCount,
  holdsInstead,
  MAX_SEGMENT_FRAMES,
  parseSourceKey,
  segmentFrameCount,
  segmentKey,
  type SourceContainer,
} from '../../../core/ingest/segment-keys.ts';

describe('parseSourceKey', () => {
  it.each<[string, SourceContainer, number, string, 1 | null]>([
    ['frames/cam-1/000042.jpg', 'image', 42, 'jpg', 1],
    ['frames/cam-1/7.PNG', 'image', 7, 'png', 1],
    ['frames/cam-1/0.jpeg', 'image', 0, 'jpeg', 1],
    ['frames/cam-1/000120.mp4', 'mp4', 120, 'mp4', null],
    ['frames/cam-1/120.MP4', 'mp4', 120, 'mp4', null],
    ['frames/cam-1/0060.m4v', 'mp4', 60, 'm4v', null],
    ['frames/cam-1/000000.ts', 'mpegts', 0, 'ts', null],
    ['frames/cam-1/1800.mkv', 'matroska', 1800, 'mkv', null],
    ['frames/cam-1/999999999999999.mkv', 'matroska', 999_999_999_999_999, 'mkv', null],
  ])('%s is a %s object from frame %d', (key, container, firstFrame, extension, frameCount) => {
    expect(parseSourceKey(key)).toEqual({ kind: 'source', videoId: 'cam-1', firstFrame, container, extension, frameCount });
  });

  it('compares first frames numerically, leading zeros or not', () => {
    const a = parseSourceKey('frames/v/000090.ts');
    const b = parseSourceKey('frames/v/90.ts');
    expect(a).toMatchObject({ firstFrame: 90 });
    expect(b).toMatchObject({ firstFrame: 90 });
  });

  it.each([
    ['uploads/v/1.mp4', 'outside-prefix'],
    ['frames/a/b/1.mp4', 'bad-video-id'],
    ['frames/../1.mp4', 'bad-video-id'],
    ['frames/bad id/1.ts', 'bad-video-id'],
    ['frames/v/-1.mp4', 'bad-frame-name'],
    ['frames/v/1.5.mp4', 'bad-frame-name'],
    ['frames/v/abc.mkv', 'bad-frame-name'],
    ['frames/v/1234567890123456.mp4', 'bad-frame-name'],
    ['frames/v/1.txt', 'non-image-extension'],
    ['frames/v/1.avi', 'non-image-extension'],
    ['frames/v/1.mov', 'non-image-extension'],
  ])('rejects %s as %s', (key, reason) => {
    expect(parseSourceKey(key)).toMatchObject({ kind: 'rejected', reason });
  });

  it('names every accepted extension when it rejects one', () => {
    const r = parseSourceKey('frames/v/1.avi');
    expect(r.kind === 'rejected' && r.detail).toMatch(/\.jpg.*\.mp4, \.m4v, \.ts, \.mkv/);
  });

  it('reads images, the end marker and rejections exactly as parseFrameKey does', () => {
    for (const key of ['frames/v/_end', 'frames/v/3.jpg', 'frames/../1.jpg', 'frames/v/x.jpg', 'other/v/1.jpg']) {
      const old = parseFrameKey(key);
      const now = parseSourceKey(key);
      if (old.kind === 'frame') expect(now).toMatchObject({ kind: 'source', videoId: old.videoId, firstFrame: old.frame, frameCount: 1 });
      else expect(now).toEqual(old);
    }
  });
});

describe('segmentKey', () => {
  it.each<[Exclude<SourceContainer, 'image'>, number, string]>([
    ['mp4', 0, 'frames/cam-1/000000.mp4'],
    ['mpegts', 60, 'frames/cam-1/000060.ts'],
    ['matroska', 1_234_567, 'frames/cam-1/1234567.mkv'],
  ])('names a %s segment from frame %d as %s, and parses back', (container, first, key) => {
    expect(segmentKey('cam-1', first, container)).toBe(key);
    expect(parseSourceKey(key)).toMatchObject({ kind: 'source', firstFrame: first, container });
  });

  it('refuses what no key may carry', () => {
    expect(() => segmentKey('bad id', 0)).toThrow(RangeError);
    expect(() => segmentKey('v', -1)).toThrow(RangeError);
    expect(() => segmentKey('v', 1.5)).toThrow(RangeError);
  });
});

describe('frame count k', () => {
  it.each<[Record<string, string> | undefined, number | undefined]>([
    [{ frames: '60' }, 60],
    [{ frames: ' 45\n' }, 45],
    [{ frames: String(MAX_SEGMENT_FRAMES) }, MAX_SEGMENT_FRAMES],
    [{ frames: String(MAX_SEGMENT_FRAMES + 1) }, undefined],
    [{ frames: '0' }, undefined],
    [{ frames: '-3' }, undefined],
    [{ frames: '2.5' }, undefined],
    [{ frames: 'sixty' }, undefined],
    [{ other: '60' }, undefined],
    [undefined, undefined],
  ])('declared in metadata %j reads as %s', (metadata, expected) => {
    expect(declaredFrameCount(metadata)).toBe(expected);
  });

  it.each([
    // an image is one frame whatever anyone says
    [{ container: 'image' as const, declared: 5, containerFrames: 3, decoded: 0 }, 1, 'image'],
    // the uploader's declaration wins, so a cut-off segment fails its missing tail
    [{ container: 'mpegts' as const, declared: 60, decoded: 31 }, 60, 'declared'],
    [{ container: 'mp4' as const, declared: 60, containerFrames: 45, decoded: 45 }, 60, 'declared'],
    // then the container's own count (MP4)
    [{ container: 'mp4' as const, containerFrames: 45, decoded: 17 }, 45, 'container'],
    // then what the decoder yielded (TS and Matroska state no count)
    [{ container: 'mpegts' as const, containerFrames: 0, decoded: 30 }, 30, 'decoded'],
    [{ container: 'matroska' as const, decoded: 0 }, 0, 'decoded'],
  ])('%j has k = %d (%s)', (input, frameCount, source) => {
    expect(segmentFrameCount(input)).toEqual({ frameCount, source });
  });
});

describe('compareRanges', () => {
  it.each([
    [{ first: 0, count: 60 }, { first: 60, count: 45 }, { kind: 'contiguous' }],
    [{ first: 7, count: 1 }, { first: 8, count: 1 }, { kind: 'contiguous' }],
    // a lost segment: its frames are missing frames, gapped by the listing as today
    [{ first: 0, count: 60 }, { first: 120, count: 60 }, { kind: 'hole', from: 60, to: 120 }],
    // a JPEG after a segment that stopped short
    [{ first: 0, count: 30 }, { first: 31, count: 1 }, { kind: 'hole', from: 30, to: 31 }],
    // a segment that starts inside the last one: those frames already have records
    [{ first: 0, count: 60 }, { first: 50, count: 60 }, { kind: 'overlap', from: 50, to: 60 }],
    [{ first: 0, count: 60 }, { first: 10, count: 5 }, { kind: 'overlap', from: 10, to: 15 }],
  ])('%j then %j is %j', (previous, next, relation) => {
    expect(compareRanges(previous, next)).toEqual(relation);
  });
});

describe('holdsInstead: which of two objects holds a frame both cover (decision 59)', () => {
  it.each([
    ['a segment that starts nearer below the frame', 'frames/v/000030.mp4', 'frames/v/000000.mp4', true],
    ['a segment that starts further below', 'frames/v/000000.mp4', 'frames/v/000030.mp4', false],
    ['an image at the frame, over a segment covering it', 'frames/v/000031.jpg', 'frames/v/000030.mp4', true],
    ['a segment starting below an image', 'frames/v/000030.mp4', 'frames/v/000031.jpg', false],
    ['numbers compared as numbers, not names', 'frames/v/100.mp4', 'frames/v/99.mp4', true],
    ['two containers under one number: the key that sorts first', 'frames/v/000030.mp4', 'frames/v/000030.ts', true],
    ['the other of those two', 'frames/v/000030.ts', 'frames/v/000030.mp4', false],
    ['the same key (a repeated notification)', 'frames/v/000030.mp4', 'frames/v/000030.mp4', false],
    ['a key that is no source object', 'frames/v/_end', 'frames/v/000030.mp4', false],
  ])('%s: %s over %s -> %s', (_what, candidate, current, expected) => {
    expect(holdsInstead(candidate, current)).toBe(expected);
    // The rule is a strict order: never both ways.
    if (expected) expect(holdsInstead(current, candidate)).toBe(false);
  });
});
