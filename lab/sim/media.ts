/**
 * The simulation's media (lab/sim/): frames and segments whose bytes say what they hold,
 * a segment codec and a processor that read them without threads, so that the worker's
 * real paths (images, segments, truncation, damage, re-uploads) run and a seed replays.
 *
 * - An image frame is `SIMF <video> <frame> <version>`; anything else is a corrupt image.
 * - A segment is `SIMS <json>`: `holds` frames (fewer than the key's range when
 *   truncated), `damaged` indexes the decoder cannot produce (each costs only its own
 *   frame, as FFmpeg's concealment does: decision 67), and a `version`. Anything
 *   else is an unreadable container; zero bytes, an empty object. The counting rules are
 *   the product's own (core/ingest/segment-keys.ts `segmentFrameCount`); MP4 states its
 *   count, MPEG-TS is counted packet by packet, as FFmpeg does.
 * - The processor is the stats processor's contract without sharp: one whole-frame
 *   detection whose track ID counts the frames the video's state has seen in order, so an
 *   uninterrupted run's track IDs are known in advance, and a state lost in failover
 *   shows as a counter starting over. A second detection, the walker, crosses the rules'
 *   line and zone ({@link SIM_RULES}) with one track ID while the state lasts, so the
 *   rules' events and totals are those of an uninterrupted run only if the state is.
 */
import { segmentFrameCount } from '../../core/ingest/segment-keys.ts';
import type { FrameInput, FrameOutcome, FrameProcessor, LateFrameInput } from '../../core/ports.ts';
import type { DecodedFrame, LostFrame, SegmentEnd, SegmentItem } from '../../gpu-worker/video/segment-decoder.ts';
import type { SegmentCodec } from '../../gpu-worker/sources/segment/segment-reader.ts';

export interface SimSegmentBody {
  /** Frames the bytes yield (the rest of a declared range is truncated). */
  readonly holds: number;
  /** Indexes the decoder fails on (a damaged packet costs only its frame). */
  readonly damaged?: readonly number[];
  /** Distinguishes a re-upload's bytes. */
  readonly version: number;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export function simFrameBytes(videoId: string, frame: number, version = 0): Uint8Array {
  return enc.encode(`SIMF ${videoId} ${frame} ${version}`);
}

export function simSegmentBytes(body: SimSegmentBody): Uint8Array {
  return enc.encode(`SIMS ${JSON.stringify(body)}`);
}

function parseSegment(input: Uint8Array | string): SimSegmentBody | undefined {
  if (typeof input === 'string') return undefined;
  const text = dec.decode(input);
  if (!text.startsWith('SIMS ')) return undefined;
  try {
    const b = JSON.parse(text.slice(5)) as SimSegmentBody;
    return Number.isInteger(b.holds) && b.holds >= 0 ? b : undefined;
  } catch {
    return undefined;
  }
}

/** One pixel, its value the frame's index and the bytes' version (a re-upload decodes to other pixels). */
function pixel(index: number, version: number): Buffer {
  return Buffer.from([index % 256, version % 256, 7]);
}

async function* decode(input: Uint8Array | string, options: Parameters<SegmentCodec['decode']>[1]): AsyncGenerator<SegmentItem, void, undefined> {
  const n = options.firstFrame;
  const container = options.container ?? 'mp4';
  const body = parseSegment(input);
  let decoded = 0;
  /** The next index to yield, frame or lost (decision 67: a damaged packet costs only its frame). */
  let next = 0;
  let lost = 0;
  let surplus = 0;
  let failure: { reason: NonNullable<SegmentEnd['failure']>['reason']; detail: string } | undefined;
  if (typeof input !== 'string' && input.byteLength === 0) failure = { reason: 'empty-object', detail: 'the object has no bytes' };
  else if (!body) failure = { reason: 'unreadable-container', detail: 'not a simulated segment' };
  else {
    const damaged = new Set(body.damaged ?? []);
    for (let i = 0; i < body.holds; i++) {
      if (options.declaredFrames !== undefined && i >= options.declaredFrames) {
        surplus++;
        continue;
      }
      if (damaged.has(i)) {
        const item: LostFrame = { kind: 'lost', frame: n + i, index: i, reason: 'decode-error', detail: `damaged packet at index ${i}` };
        yield item;
        lost++;
      } else {
        const frame: DecodedFrame = { kind: 'frame', frame: n + i, index: i, ptsMs: i * 40, width: 1, height: 1, sourceWidth: 1, sourceHeight: 1, channels: 3, data: pixel(i, body.version) };
        yield frame;
        decoded++;
      }
      next = i + 1;
    }
  }
  const containerFrames = body && container === 'mp4' ? body.holds : undefined;
  const { frameCount, source } = segmentFrameCount({ container, declared: options.declaredFrames, containerFrames, decoded: next });
  if (!failure && next < frameCount) failure = { reason: 'truncated', detail: `the decoder yielded ${decoded} of the ${frameCount} frames` };
  yield {
    kind: 'end',
    decoded,
    frameCount: Math.max(frameCount, next),
    frameCountSource: source,
    decoder: body ? 'sim cpu' : 'none',
    placement: decoded > 0 ? 'cpu' : 'none',
    surplus,
    ...(lost > 0 ? { lost } : {}),
    ...(failure ? { failure: { ...failure, from: n + next, to: n + Math.max(frameCount, next) } } : {}),
  };
}

/** The thread-free segment codec of the simulation. */
export const SIM_SEGMENT_CODEC: SegmentCodec = {
  decode,
  count: async (input) => {
    if (input.byteLength === 0) return undefined;
    const body = parseSegment(input);
    return body && body.holds > 0 ? body.holds : undefined;
  },
};

interface SimState {
  framesSeen: number;
  lastFrame: number | null;
  /** The first frame this state saw: the walker's track ID, which a state lost in failover would change. */
  bornAt?: number;
}

/** The walker's track IDs: `WALKER_TRACK_BASE + bornAt`. */
export const WALKER_TRACK_BASE = 1_000_000;

/**
 * The rules the simulated world's videos run (`rules/_default.json`): a line the walker
 * crosses twice every 40 frames, a zone it enters and leaves, with a dwell. Only the walker
 * counts (`classes`): the counter's one-frame tracks would enter the zone every frame.
 */
export const SIM_RULES = {
  fps: 10,
  lines: [{ id: 'door', a: [200, 0], b: [200, 1000], classes: ['walker'] }],
  zones: [{ id: 'hall', polygon: [[50, 0], [150, 0], [150, 1000], [50, 1000]], dwellSeconds: 0.5, classes: ['walker'] }],
};

/** The walker's box at `frame`: it walks right 10 px a frame, and starts again every 40 frames. */
export function walkerBox(frame: number): [number, number, number, number] {
  const x = (frame % 40) * 10;
  return [x, 500, x + 10, 600];
}

/** The stats processor's contract, without decoding (see the module's doc). */
export class SimProcessor implements FrameProcessor {
  readonly description = 'simulation processor (track ID = frames seen in order)';
  private readonly videos = new Map<string, SimState>();

  /**
   * @param batchMs simulated time one batch takes (GPU inference, as bench/failover-aws.ts
   *   models it: a worker holds its messages in flight that long, which a kill -9 then leaves
   *   to their visibility timeout). 0 (the default) sets no timer: seeds replay as before.
   */
  private readonly batchMs: number;

  constructor(batchMs = 0) {
    this.batchMs = batchMs;
  }

  async start(): Promise<void> {}

  openVideo(videoId: string, snapshot: string | undefined): void {
    this.videos.set(videoId, snapshot ? (JSON.parse(snapshot) as SimState) : { framesSeen: 0, lastFrame: null });
  }

  private readable(f: FrameInput): boolean {
    return f.pixels !== undefined || dec.decode(f.image.subarray(0, 5)) === 'SIMF ';
  }

  async process(frames: readonly FrameInput[]): Promise<FrameOutcome[]> {
    if (this.batchMs > 0) await new Promise((resolve) => setTimeout(resolve, this.batchMs));
    return frames.map((f): FrameOutcome => {
      if (!this.readable(f)) return { status: 'failed', reason: 'corrupt-image', detail: 'not a simulated frame' };
      const s = this.videos.get(f.videoId);
      if (!s) throw new Error(`video ${f.videoId} was not opened`);
      if (s.lastFrame !== null && f.frame <= s.lastFrame) return { status: 'failed', reason: 'order-violation', detail: `frame ${f.frame} after ${s.lastFrame}` };
      s.framesSeen += 1;
      s.lastFrame = f.frame;
      s.bornAt ??= f.frame;
      return {
        status: 'ok',
        detections: [
          { trackId: s.framesSeen, label: 'frame', score: 0.5, box: [0, 0, 1, 1] },
          { trackId: WALKER_TRACK_BASE + s.bornAt, label: 'walker', score: 0.9, box: walkerBox(f.frame) },
        ],
      };
    });
  }

  async processLate(frames: readonly LateFrameInput[]): Promise<FrameOutcome[]> {
    return frames.map((f): FrameOutcome => {
      if (!this.readable(f)) return { status: 'failed', reason: 'corrupt-image', detail: 'not a simulated frame' };
      return {
        status: 'ok',
        detections: [
          { trackId: f.before?.detections[0]?.trackId ?? 0, label: 'frame', score: 0.5, box: [0, 0, 1, 1] },
          { trackId: f.before?.detections[1]?.trackId ?? 0, label: 'walker', score: 0.9, box: walkerBox(f.frame) },
        ],
      };
    });
  }

  snapshot(videoId: string): string {
    return JSON.stringify(this.videos.get(videoId) ?? { framesSeen: 0, lastFrame: null });
  }

  closeVideo(videoId: string): void {
    this.videos.delete(videoId);
  }

  async stop(): Promise<void> {}
}
