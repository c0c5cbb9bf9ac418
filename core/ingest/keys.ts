/**
 * The S3 key and event contract.
 *
 *   frames/{videoId}/{frameNumber}.{jpg|jpeg|png}   a frame
 *   frames/{videoId}/_end                          end-of-stream marker; its body is the last frame number
 *
 * Everything else is rejected with a machine-readable reason.
 */
import { END_MARKER_NAME, FRAME_PREFIX } from '../config.ts';

export const VIDEO_ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;
const FRAME_NAME_PATTERN = /^(\d{1,15})\.(jpg|jpeg|png)$/i;

export type RejectReason =
  | 'not-json'
  | 'unknown-event'
  | 's3-test-event'
  | 'not-object-created'
  | 'wrong-bucket'
  | 'outside-prefix'
  | 'bad-key-encoding'
  | 'bad-video-id'
  | 'bad-frame-name'
  | 'non-image-extension'
  | 'bad-end-marker';

export type ParsedKey =
  | { readonly kind: 'frame'; readonly videoId: string; readonly frame: number; readonly extension: string }
  | { readonly kind: 'end'; readonly videoId: string }
  | { readonly kind: 'rejected'; readonly reason: RejectReason; readonly detail: string };

/** Decodes an S3 event key: `+` means space and `%XX` escapes are percent-decoded. */
export function decodeS3EventKey(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}

/** Parses an already-decoded object key. */
export function parseFrameKey(key: string): ParsedKey {
  if (!key.startsWith(FRAME_PREFIX)) return rejected('outside-prefix', `key "${key}" is not under ${FRAME_PREFIX}`);
  const rest = key.slice(FRAME_PREFIX.length);
  const parts = rest.split('/');
  if (parts.length !== 2) {
    return rejected('bad-video-id', `expected ${FRAME_PREFIX}{videoId}/{frame}.{ext}, got "${key}"`);
  }
  const [videoId, name] = parts as [string, string];
  if (!VIDEO_ID_PATTERN.test(videoId) || videoId === '.' || videoId === '..') {
    return rejected('bad-video-id', `video id "${videoId}" must match ${VIDEO_ID_PATTERN.source} and not be . or ..`);
  }
  if (name === END_MARKER_NAME) return { kind: 'end', videoId };
  const m = FRAME_NAME_PATTERN.exec(name);
  if (!m) {
    if (/^\d+\.[^.]+$/.test(name)) return rejected('non-image-extension', `"${name}" is not a .jpg, .jpeg or .png frame`);
    return rejected('bad-frame-name', `frame name "${name}" must be {non-negative integer}.{jpg|jpeg|png}`);
  }
  const frame = Number(m[1]);
  if (!Number.isSafeInteger(frame)) return rejected('bad-frame-name', `frame number "${m[1]}" is too large`);
  return { kind: 'frame', videoId, frame, extension: m[2]!.toLowerCase() };
}

/** Parses the body of an end-of-stream marker: the last frame number, as decimal text. */
export function parseEndMarkerBody(body: string): number | undefined {
  const text = body.trim();
  if (!/^\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}

/** Builds the key of a frame (used by tooling; zero-padded for readable listings). */
export function frameKey(videoId: string, frame: number, extension = 'jpg'): string {
  return `${FRAME_PREFIX}${videoId}/${String(frame).padStart(6, '0')}.${extension}`;
}

export function endMarkerKey(videoId: string): string {
  return `${FRAME_PREFIX}${videoId}/${END_MARKER_NAME}`;
}

function rejected(reason: RejectReason, detail: string): ParsedKey {
  return { kind: 'rejected', reason, detail };
}

/** The zero-padding width a key shows (`000041.jpg` → 6), or undefined for unpadded keys (`41.jpg`). */
export function padWidthOf(key: string): number | undefined {
  const digits = /\/(\d+)\.[^./]+$/.exec(key)?.[1];
  return digits && digits.length > 1 && digits.startsWith('0') ? digits.length : undefined;
}
