/**
 * The key contract for encoded segments beside per-frame images (issue 34; the full rule
 * is docs/decisions.md 48):
 *
 *   frames/{videoId}/{n}.{jpg|jpeg|png}   one frame, n                  (today's contract)
 *   frames/{videoId}/{n}.{mp4|ts|mkv}     a segment: frames [n, n + k)  (H.264 / H.265)
 *   frames/{videoId}/_end                 end-of-stream marker          (unchanged)
 *
 * An object *covers* frames `[n, n + k)` and its key carries `n`, parsed exactly as frame
 * numbers are today (decimal, leading zeros allowed, compared numerically). An image is a
 * one-frame segment (k = 1). A segment's `k` is not in its key: it is the number of
 * frames the object yields, decided in this order ({@link segmentFrameCount}):
 *
 * 1. the count the uploader declares in the object's user metadata `frames`
 *    (`x-amz-meta-frames`; the CLI and the edge segmenter always set it);
 * 2. else the count the container states (MP4's sample table);
 * 3. else the number of frames the decoder yields (MPEG-TS and Matroska state none).
 *
 * A decoder that yields fewer frames than 1. or 2. promised fails the rest of the range
 * with its reason (`failed` records, not gaps). The next segment of a video should start
 * at `n + k`; when it does not, the frame-number logic of today decides, frame by frame
 * ({@link compareRanges}): frames of a hole are missing frames (a gap after the S3
 * listing says so, `late` if they come after all), and a frame covered twice is taken
 * from the object whose first frame is the nearer one below it ({@link holdsInstead},
 * decision 59), once: a copy offered after the frame has a record is a duplicate.
 *
 * This module is pure: no S3, no decoder. It parses and names keys, and says how two
 * ranges relate; the sequencer keeps working on frame numbers.
 */
import { END_MARKER_NAME, FRAME_PREFIX } from '../config.ts';
import { parseFrameKey, VIDEO_ID_PATTERN, type RejectReason } from './keys.ts';

/** What holds the frames: one image, or a video container FFmpeg demuxes. */
export type SourceContainer = 'image' | 'mp4' | 'mpegts' | 'matroska';

/** Video containers by key extension (lower case). `m4v` is MP4 under another name. */
export const SEGMENT_EXTENSIONS: Readonly<Record<string, Exclude<SourceContainer, 'image'>>> = {
  mp4: 'mp4',
  m4v: 'mp4',
  ts: 'mpegts',
  mkv: 'matroska',
};

/** The extension {@link segmentKey} writes for each container. */
const EXTENSION_OF: Readonly<Record<Exclude<SourceContainer, 'image'>, string>> = { mp4: 'mp4', mpegts: 'ts', matroska: 'mkv' };

const SEGMENT_NAME_PATTERN = /^(\d+)\.([A-Za-z0-9]+)$/;

/** An object that carries frames: an image (k = 1) or an encoded segment (k decided later). */
export interface SourceObject {
  readonly kind: 'source';
  readonly videoId: string;
  /** `n`: the number of the first frame the object covers. */
  readonly firstFrame: number;
  readonly container: SourceContainer;
  /** The key's extension, lower case. */
  readonly extension: string;
  /** `k` when the key alone decides it (1 for an image); `null` for a segment. */
  readonly frameCount: 1 | null;
}

export type ParsedSourceKey =
  | SourceObject
  | { readonly kind: 'end'; readonly videoId: string }
  | { readonly kind: 'rejected'; readonly reason: RejectReason; readonly detail: string };

/**
 * Parses an already-decoded object key under the segment contract. Images, the end
 * marker and every rejection read exactly as {@link parseFrameKey} reads them; an
 * extension that is neither an image nor a known container keeps its reason code
 * (`non-image-extension`, so existing metrics keep their dimension) with a detail that
 * names every accepted extension.
 */
export function parseSourceKey(key: string): ParsedSourceKey {
  const parsed = parseFrameKey(key);
  if (parsed.kind === 'frame') {
    return { kind: 'source', videoId: parsed.videoId, firstFrame: parsed.frame, container: 'image', extension: parsed.extension, frameCount: 1 };
  }
  if (parsed.kind === 'end' || parsed.reason !== 'non-image-extension') return parsed;
  // Only `{digits}.{ext}` under a valid video id reaches here.
  const name = key.slice(key.lastIndexOf('/') + 1);
  const videoId = key.slice(FRAME_PREFIX.length, key.lastIndexOf('/'));
  const m = SEGMENT_NAME_PATTERN.exec(name);
  const extension = m?.[2]?.toLowerCase();
  const container = extension === undefined ? undefined : SEGMENT_EXTENSIONS[extension];
  if (!m || container === undefined || extension === undefined) {
    return {
      kind: 'rejected',
      reason: 'non-image-extension',
      detail: `"${name}" is neither a frame (.jpg, .jpeg, .png) nor a segment (${Object.keys(SEGMENT_EXTENSIONS).map((e) => `.${e}`).join(', ')})`,
    };
  }
  const firstFrame = Number(m[1]);
  if (m[1]!.length > 15 || !Number.isSafeInteger(firstFrame)) return { kind: 'rejected', reason: 'bad-frame-name', detail: `frame number "${m[1]}" is too large` };
  return { kind: 'source', videoId, firstFrame, container, extension, frameCount: null };
}

/** Builds a segment's key, zero-padded like frame keys (`frames/cam-1/000120.mp4`). */
export function segmentKey(videoId: string, firstFrame: number, container: Exclude<SourceContainer, 'image'> = 'mp4'): string {
  if (!VIDEO_ID_PATTERN.test(videoId) || videoId === '.' || videoId === '..' || videoId === END_MARKER_NAME) {
    throw new RangeError(`video id "${videoId}" must match ${VIDEO_ID_PATTERN.source}`);
  }
  if (!Number.isSafeInteger(firstFrame) || firstFrame < 0) throw new RangeError(`first frame ${firstFrame} must be a non-negative integer`);
  return `${FRAME_PREFIX}${videoId}/${String(firstFrame).padStart(6, '0')}.${EXTENSION_OF[container]}`;
}

/** The S3 user-metadata key (`x-amz-meta-frames`) in which an uploader declares `k`. */
export const FRAMES_METADATA_KEY = 'frames';
/** The most frames one segment may declare: 10 minutes at 60 fps. */
export const MAX_SEGMENT_FRAMES = 36_000;

/**
 * The uploader's declared frame count from an object's user metadata (the SDK's
 * `Metadata`, keys lower case), or `undefined` when absent or not a count in
 * [1, {@link MAX_SEGMENT_FRAMES}] (an unusable declaration is ignored, not trusted).
 */
export function declaredFrameCount(metadata: Readonly<Record<string, string>> | undefined): number | undefined {
  const text = metadata?.[FRAMES_METADATA_KEY]?.trim();
  if (text === undefined || !/^\d{1,6}$/.test(text)) return undefined;
  const k = Number(text);
  return k >= 1 && k <= MAX_SEGMENT_FRAMES ? k : undefined;
}

/** Where a segment's `k` came from. */
export type FrameCountSource = 'image' | 'declared' | 'container' | 'decoded';

/**
 * Decides `k` for an object (the order in the module comment): an image is 1; else the
 * uploader's declaration; else the container's count (when > 0); else what the decoder
 * yielded. `expected` is what the decoder was held to: frames of `[n + decoded, n + k)`
 * are `failed` with the decoder's reason when `decoded < k`.
 */
export function segmentFrameCount(input: {
  readonly container: SourceContainer;
  readonly declared?: number | undefined;
  readonly containerFrames?: number | undefined;
  readonly decoded: number;
}): { readonly frameCount: number; readonly source: FrameCountSource } {
  if (input.container === 'image') return { frameCount: 1, source: 'image' };
  if (input.declared !== undefined && input.declared >= 1) return { frameCount: input.declared, source: 'declared' };
  if (input.containerFrames !== undefined && input.containerFrames >= 1) return { frameCount: input.containerFrames, source: 'container' };
  return { frameCount: input.decoded, source: 'decoded' };
}

/** A half-open range of frame numbers `[first, first + count)`. */
export interface FrameRange {
  readonly first: number;
  readonly count: number;
}

/** How the next object of a video relates to the one before it, by frame numbers. */
export type RangeRelation =
  | { readonly kind: 'contiguous' }
  /** Frames `[from, to)` are covered by neither: missing frames, as a missing JPEG is. */
  | { readonly kind: 'hole'; readonly from: number; readonly to: number }
  /** Frames `[from, to)` are covered by both: the later object's copies are duplicates. */
  | { readonly kind: 'overlap'; readonly from: number; readonly to: number };

/**
 * Compares `next` with the object before it (`previous`, the one with the next lower `n`).
 * This is a description for logs and metrics, not a second rule: the sequencer decides
 * every frame by its number as it does for images.
 */
export function compareRanges(previous: FrameRange, next: FrameRange): RangeRelation {
  const end = previous.first + previous.count;
  if (next.first === end) return { kind: 'contiguous' };
  if (next.first > end) return { kind: 'hole', from: end, to: next.first };
  return { kind: 'overlap', from: Math.max(next.first, previous.first), to: Math.min(end, next.first + next.count) };
}

/**
 * Whether object `candidate` holds a frame that object `current` also covers, instead of
 * `current` (overlapping objects, issue 40; docs/decisions.md 58): the object whose first
 * frame is the nearer one below the frame (the higher `n`) holds it, since a next object
 * starts at the true frame while an earlier one may have declared more than it holds; at
 * one `n` (two containers under one number), the key that sorts first. A rule on keys
 * alone, so the same copy stands whatever order the notifications come in. Keys that are
 * not source objects never take over.
 */
export function holdsInstead(candidate: string, current: string): boolean {
  if (candidate === current) return false;
  const a = parseSourceKey(candidate);
  const b = parseSourceKey(current);
  if (a.kind !== 'source' || b.kind !== 'source') return false;
  if (a.firstFrame !== b.firstFrame) return a.firstFrame > b.firstFrame;
  return candidate < current;
}
