/**
 * The simulation's media (lab/sim/): frames and segments whose bytes say what they hold,
 * a segment codec and a processor that read them without threads, so that the worker's
 * real paths (images, segments, truncation, damage, re-uploads) run and a seed replays.
 *
 * - An image frame is `SIMF <video> <frame> <version>`; anything else is a corrupt image.
 * - A segment is `SIMS <json>`: `holds` frames (fewer than the key's range when
 *   truncated), `damaged` indexes the decoder cannot produce, and a `version`. Anything
 *   else is an unreadable container; zero bytes, an empty object. The counting rules are
 *   the product's own (core/ingest/segment-keys.ts `segmentFrameCount`); MP4 states its
 *   count, MPEG-TS is counted packet by packet, as FFmpeg does.
 * - The processor is the stats processor's contract without sharp: one whole-frame
 *   detection whose track ID counts the frames the video's state has seen in order, so an
 *   uninterrupted run's track IDs are known in advance, and a state lost in failover
 *   shows as a counter starting over.
 */
import { segmentFrameCount } from '../../core/ingest/segment-keys.ts';
import type { FrameInput, FrameOutcome, FrameProcessor, LateFrameInput } from '../../core/ports.ts';
import type { DecodedFrame, SegmentEnd, SegmentItem } from '../../gpu-worker/video/segment-decoder.ts';
import type { SegmentCodec } from '../../gpu-worker/video/segment-reader.ts';

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
  let surplus = 0;
  let failure: { reason: NonNullable<SegmentEnd['failure']>['reason']; detail: string } | undefined;
  if (typeof input !== 'string' && input.byteLength === 0) failure = { reason: 'empty-object', detail: 'the object has no bytes' };
  else if (!body) failure = { reason: 'unreadable-container', detail: 'not a simulated segment' };
  else {
    const damaged = new Set(body.damaged ?? []);
    for (let i = 0; i < body.holds; i++) {
      if (damaged.has(i)) {
        // The product's decoder stops at its first error (decision 48): the rest fails with it.
        failure = { reason: 'decode-error', detail: `damaged packet at index ${i}` };
        break;
      }
      if (options.declaredFrames !== undefined && decoded >= options.declaredFrames) {
        surplus++;
        continue;
      }
      const frame: DecodedFrame = { kind: 'frame', frame: n + decoded, index: decoded, ptsMs: decoded * 40, width: 1, height: 1, sourceWidth: 1, sourceHeight: 1, channels: 3, data: pixel(decoded, body.version) };
      yield frame;
      decoded++;
    }
  }
  const containerFrames = body && container === 'mp4' ? body.holds : undefined;
  const { frameCount, source } = segmentFrameCount({ container, declared: options.declaredFrames, containerFrames, decoded });
  if (!failure && decoded < frameCount) failure = { reason: 'truncated', detail: `the decoder yielded ${decoded} of the ${frameCount} frames` };
  yield {
    kind: 'end',
    decoded,
    frameCount: Math.max(frameCount, decoded),
    frameCountSource: source,
    decoder: body ? 'sim cpu' : 'none',
    placement: body ? 'cpu' : 'none',
    surplus,
    ...(failure ? { failure: { ...failure, from: n + decoded, to: n + Math.max(frameCount, decoded) } } : {}),
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
      return { status: 'ok', detections: [{ trackId: s.framesSeen, label: 'frame', score: 0.5, box: [0, 0, 1, 1] }] };
    });
  }

  async processLate(frames: readonly LateFrameInput[]): Promise<FrameOutcome[]> {
    return frames.map((f): FrameOutcome => {
      if (!this.readable(f)) return { status: 'failed', reason: 'corrupt-image', detail: 'not a simulated frame' };
      return { status: 'ok', detections: [{ trackId: f.before?.detections[0]?.trackId ?? 0, label: 'frame', score: 0.5, box: [0, 0, 1, 1] }] };
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
