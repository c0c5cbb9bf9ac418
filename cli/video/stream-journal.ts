/**
 * The numbering journal of `affinity stream` (the edge segmenter): what makes a restart
 * continue the numbering instead of renumbering, and what makes a segment go up under
 * one key only (docs/decisions.md 50).
 *
 * The state file holds the next frame number and every closed segment that has not been
 * confirmed in S3 yet (`pending`, in frame order). The order of events for a segment:
 *
 * 1. the muxer closes its file in the spool folder (frames counted as written);
 * 2. {@link closeSegment}: it joins `pending` with its key `segmentKey(video, n)`, and
 *    `nextFrame` moves to `n + k`; the state file is written (atomically) **before** any
 *    byte is sent;
 * 3. the PUT (with `x-amz-meta-frames: k`), retried until it lands;
 * 4. {@link markUploaded}: it leaves `pending`; the state file is written again.
 *
 * A crash before 2 loses the segment's frames (they never had a number: the next segment
 * takes `n`, nothing was sent under it). A crash after 2 re-sends the same file under the
 * same key on restart (an idempotent PUT of the same bytes). On start, {@link resumeState}
 * also reads the bucket's listing, so a lost or older state file never makes the numbering
 * go backwards: `nextFrame` is at least the end of the highest object of the video.
 *
 * Pure: no file system, no S3 (the I/O is cli/video/stream-state.ts and stream-command.ts).
 */
import type { SegmentContainer } from './segment-file.ts';
import { parseSourceKey } from '../../core/ingest/segment-keys.ts';

export const STREAM_STATE_VERSION = 1;

/** A closed segment, numbered, whose upload is not confirmed. */
export interface JournalSegment {
  readonly key: string;
  readonly firstFrame: number;
  readonly frames: number;
  /** The segment's file in the spool folder. */
  readonly file: string;
  readonly bytes: number;
}

/** Where the video's time line stood at the last frame written (live sources keep it across reconnects and restarts). */
export interface TimelineMark {
  /** Last decode time written, in `timeBase` units (a decimal string: a bigint). */
  readonly dts: string;
  readonly timeBase: readonly [number, number];
  /** Wall-clock time it was written, ms since the epoch. */
  readonly wallMs: number;
}

export interface StreamState {
  readonly version: typeof STREAM_STATE_VERSION;
  readonly videoId: string;
  readonly container: SegmentContainer;
  /** The number the next segment's first frame gets. */
  readonly nextFrame: number;
  /** Closed segments in frame order, not yet confirmed in S3. */
  readonly pending: readonly JournalSegment[];
  /** Segments confirmed in S3 over this state's life. */
  readonly uploadedSegments: number;
  readonly timeline: TimelineMark | null;
}

export class StreamStateError extends Error {
  override name = 'StreamStateError';
}

export function initialState(videoId: string, container: SegmentContainer, firstFrame: number): StreamState {
  return { version: STREAM_STATE_VERSION, videoId, container, nextFrame: firstFrame, pending: [], uploadedSegments: 0, timeline: null };
}

/** Reads a state file's text for `videoId`; throws {@link StreamStateError} for another video or a shape it does not know. */
export function parseState(text: string, videoId: string): StreamState {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new StreamStateError(`state file is not JSON: ${(e as Error).message}`);
  }
  const s = raw as Partial<StreamState>;
  if (s?.version !== STREAM_STATE_VERSION) throw new StreamStateError(`state file version ${String(s?.version)} is not ${STREAM_STATE_VERSION}`);
  if (s.videoId !== videoId) throw new StreamStateError(`state file belongs to video "${String(s.videoId)}", not "${videoId}": use another --state-file`);
  if (!Number.isSafeInteger(s.nextFrame) || s.nextFrame! < 0) throw new StreamStateError(`state file has no valid nextFrame`);
  if (!Array.isArray(s.pending)) throw new StreamStateError('state file has no pending list');
  let expect = undefined as number | undefined;
  for (const p of s.pending) {
    if (typeof p?.key !== 'string' || !Number.isSafeInteger(p.firstFrame) || !Number.isSafeInteger(p.frames) || p.frames < 1) throw new StreamStateError(`state file has a malformed pending segment`);
    if (expect !== undefined && p.firstFrame < expect) throw new StreamStateError(`state file's pending segments overlap at frame ${p.firstFrame}`);
    expect = p.firstFrame + p.frames;
  }
  if (expect !== undefined && expect > s.nextFrame!) throw new StreamStateError(`state file's nextFrame ${s.nextFrame} is below its pending segments' end ${expect}`);
  return {
    version: STREAM_STATE_VERSION,
    videoId,
    container: s.container ?? 'mpegts',
    nextFrame: s.nextFrame!,
    pending: s.pending,
    uploadedSegments: s.uploadedSegments ?? 0,
    timeline: s.timeline ?? null,
  };
}

/** An object already under the video's prefix: its key, size, and declared frame count when known. */
export interface RemoteSegment {
  readonly key: string;
  readonly size: number;
  /** `x-amz-meta-frames`; undefined when unknown (counted as 1: a lower bound). */
  readonly frames?: number | undefined;
}

export interface ResumePlan {
  readonly state: StreamState;
  /** Pending segments to send again, in order (same key, same file). */
  readonly resend: readonly JournalSegment[];
  /** Pending segments found in S3 with the same size: they landed before the restart. */
  readonly landed: readonly JournalSegment[];
  /** Pending segments whose key holds other bytes: not overwritten (the first version is the record). */
  readonly conflicts: readonly JournalSegment[];
  /** Why `nextFrame` moved, when the listing moved it. */
  readonly advancedBy: { readonly key: string; readonly to: number } | null;
}

/** The first frame after an object: `n + k`, with `k` = 1 when not known. */
export function objectEnd(o: RemoteSegment): number | undefined {
  const parsed = parseSourceKey(o.key);
  if (parsed.kind !== 'source') return undefined;
  return parsed.firstFrame + (parsed.frameCount ?? (o.frames !== undefined && o.frames >= 1 ? o.frames : 1));
}

/**
 * Decides a restart from the saved state and one listing of the video's prefix: pending
 * segments that landed leave the journal, the others are sent again under their keys,
 * and `nextFrame` never falls below the end of any object already there.
 */
export function resumeState(state: StreamState, remote: readonly RemoteSegment[]): ResumePlan {
  const byKey = new Map(remote.map((r) => [r.key, r]));
  const resend: JournalSegment[] = [];
  const landed: JournalSegment[] = [];
  const conflicts: JournalSegment[] = [];
  for (const p of state.pending) {
    const there = byKey.get(p.key);
    if (!there) resend.push(p);
    else if (there.size === p.bytes) landed.push(p);
    else conflicts.push(p);
  }
  let nextFrame = state.nextFrame;
  let advancedBy: ResumePlan['advancedBy'] = null;
  for (const r of remote) {
    const end = objectEnd(r);
    if (end !== undefined && end > nextFrame) {
      nextFrame = end;
      advancedBy = { key: r.key, to: end };
    }
  }
  return {
    state: { ...state, nextFrame, pending: resend, uploadedSegments: state.uploadedSegments + landed.length },
    resend,
    landed,
    conflicts,
    advancedBy,
  };
}

/** Journals a closed segment: it must start at `nextFrame`; `nextFrame` moves past it. */
export function closeSegment(state: StreamState, segment: JournalSegment): StreamState {
  if (segment.firstFrame !== state.nextFrame) throw new StreamStateError(`segment starts at ${segment.firstFrame}, the journal expects ${state.nextFrame}`);
  if (!Number.isSafeInteger(segment.frames) || segment.frames < 1) throw new StreamStateError(`segment ${segment.key} holds no frames`);
  return { ...state, nextFrame: segment.firstFrame + segment.frames, pending: [...state.pending, segment] };
}

/** A segment's upload is confirmed: it leaves the journal. Unknown keys change nothing. */
export function markUploaded(state: StreamState, key: string): StreamState {
  const pending = state.pending.filter((p) => p.key !== key);
  if (pending.length === state.pending.length) return state;
  return { ...state, pending, uploadedSegments: state.uploadedSegments + 1 };
}

/** Frames skipped on a hole (a file resumed past a frame that is not a keyframe): numbers are never reused. */
export function skipTo(state: StreamState, frame: number): StreamState {
  return frame > state.nextFrame ? { ...state, nextFrame: frame } : state;
}

/** The last frame number handed out, or undefined before the first segment (the end marker's body). */
export function lastFrame(state: StreamState, firstFrame: number): number | undefined {
  return state.nextFrame > firstFrame ? state.nextFrame - 1 : undefined;
}
