/**
 * The pure rules of `affinity stream` (the I/O is cli/video/stream-source.ts):
 *
 * - {@link decidePacket}: where segments open and close. A segment opens at a keyframe
 *   and closes at the first keyframe at least `segmentSeconds` after its start (the
 *   cutter's rule for files, cli/video/segment-file.ts), so each holds whole GOPs and
 *   decodes on its own. Packets before the first keyframe of a connection are skipped.
 * - {@link Timeline}: one time line for the video across reconnects and restarts. A camera
 *   restarts its clock on every connection; the segmenter keeps decode times growing, and
 *   puts the wall-clock time of an outage between the last frame before it and the first
 *   after it, so dwell rules see real time. A packet without timestamps gets the last one
 *   plus a frame's duration.
 * - {@link backoffMs}: capped exponential backoff with jitter for reconnects and uploads.
 * - {@link isLiveSource}: a URL (rtsp://, rtmp://, srt://, udp://, http(s)://) is live
 *   (reconnected when it ends); anything else is a file (read once).
 */

/** What to do with one packet. */
export type PacketAction =
  /** no segment is open and this is no keyframe: it cannot start one */
  | 'skip'
  /** open a segment at this keyframe */
  | 'open'
  /** append to the open segment */
  | 'write'
  /** close the open segment, then open the next at this keyframe */
  | 'rotate';

export interface OpenSegment {
  /** Decode time of the segment's first packet (the segmenter's time line). */
  readonly startDts: bigint;
  readonly frames: number;
}

/**
 * Decides a packet's fate. `segmentTicks` is `segmentSeconds` in the stream's time base
 * (callers take half a frame off it: a camera's clock puts a keyframe due at exactly N s a
 * few ticks early); `maxFrames` closes a segment at the next keyframe however short it is
 * in time (a camera with a broken clock). `timestamped: false` (a live connection's first
 * packet, which FFmpeg's RTSP client may hand over without a time, possibly the tail of a
 * frame already in flight) cannot open a segment.
 */
export function decidePacket(
  open: OpenSegment | null,
  packet: { readonly keyframe: boolean; readonly dts: bigint; readonly timestamped?: boolean },
  segmentTicks: bigint,
  maxFrames: number,
): PacketAction {
  if (open === null) return packet.keyframe && packet.timestamped !== false ? 'open' : 'skip';
  if (!packet.keyframe) return 'write';
  return packet.dts - open.startDts >= segmentTicks || open.frames >= maxFrames ? 'rotate' : 'write';
}

/** Seconds in a time base, rounded (at least one tick). */
export function secondsToTicks(seconds: number, timeBase: readonly [number, number]): bigint {
  const [num, den] = timeBase;
  return BigInt(Math.max(1, Math.round((seconds * den) / num)));
}

export interface TimelineInit {
  /** Last decode time written (previous connection or run), in this time base. */
  readonly lastDts: bigint | null;
  /** A frame's duration when packets carry none (ticks). */
  readonly defaultStep: bigint;
}

/**
 * Maps a connection's timestamps onto the video's time line. One instance per video;
 * {@link Timeline.reconnected} at each new connection (with the wall-clock gap).
 * `keepSourceTime`: a file keeps its own timestamps (offset 0) unless they go back.
 */
export class Timeline {
  private offset: bigint | null;
  private lastDts: bigint | null;
  private gap = 0n;
  private step: bigint;

  constructor(init: TimelineInit, keepSourceTime = false) {
    this.lastDts = init.lastDts;
    this.step = init.defaultStep > 0n ? init.defaultStep : 1n;
    this.offset = keepSourceTime && init.lastDts === null ? 0n : null;
  }

  /** A new connection: its clock is unrelated to the last one; `gapTicks` of wall time passed since the last frame. */
  reconnected(gapTicks: bigint): void {
    this.offset = null;
    this.gap = gapTicks > 0n ? gapTicks : 0n;
  }

  /** The time line's decode and presentation times for a packet (`null`: the packet carries none). */
  map(packet: { readonly dts: bigint | null; readonly pts: bigint | null; readonly duration: bigint }): { dts: bigint; pts: bigint } {
    if (packet.duration > 0n) this.step = packet.duration;
    // after an outage the next frame comes the outage's wall time after the last one (at least a frame)
    const expected = this.lastDts === null ? 0n : this.lastDts + (this.gap > this.step ? this.gap : this.step);
    const inDts = packet.dts ?? packet.pts;
    let dts: bigint;
    let pts: bigint;
    if (inDts === null) {
      dts = expected;
      pts = expected;
    } else {
      if (this.offset === null) this.offset = expected - inDts;
      dts = inDts + this.offset;
      if (this.lastDts !== null && dts <= this.lastDts) {
        // the source's clock went back (or stood still): continue after the last frame
        this.offset = expected - inDts;
        dts = expected;
      }
      pts = packet.pts === null ? dts : packet.pts + this.offset;
      if (pts < dts) pts = dts;
    }
    this.gap = 0n;
    this.lastDts = dts;
    return { dts, pts };
  }

  get last(): bigint | null {
    return this.lastDts;
  }
}

export interface BackoffOptions {
  /** First delay's ceiling. @default 500 */
  readonly baseMs?: number;
  /** Largest delay. @default 30_000 */
  readonly capMs?: number;
  /** [0, 1) */
  readonly random?: () => number;
}

/**
 * The delay before retry `attempt` (0 for the first retry): exponential, capped, with
 * "equal jitter" (half fixed, half random), so a fleet of cameras that lost the same
 * network does not come back in lock step, and no retry comes sooner than half its step.
 */
export function backoffMs(attempt: number, o: BackoffOptions = {}): number {
  const base = o.baseMs ?? 500;
  const cap = o.capMs ?? 30_000;
  const ceiling = Math.min(cap, base * 2 ** Math.min(Math.max(0, attempt), 30));
  return Math.round(ceiling / 2 + (o.random ?? Math.random)() * (ceiling / 2));
}

const LIVE_SCHEMES = /^(rtsps?|rtmps?|srt|udp|rtp|https?):\/\//i;

export function isLiveSource(source: string): boolean {
  return LIVE_SCHEMES.test(source);
}

/** A source for logs, with any password in its URL replaced (rtsp://user:pass@cam/...). */
export function redactSource(source: string): string {
  return source.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/:@]*):[^/@]*@/i, '$1:***@');
}
