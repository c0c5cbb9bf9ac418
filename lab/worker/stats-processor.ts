/**
 * A simple, real FrameProcessor: decodes each frame with sharp and reports its mean
 * luminance, carrying per-video state (frames seen, running mean) across frames. It
 * makes state continuity visible without a model: `trackId` of the single whole-frame
 * detection is the number of frames this video's state has seen, so a restart from
 * scratch after failover would show as a counter that starts over.
 *
 * Used by fast pipeline tests (`FRAME_PROCESSOR=stats`, added by lab/worker/register.ts);
 * the vision processor is the default.
 *
 * Late frames are decoded the same way but leave the state alone; their detection
 * takes the `before` neighbour's track ID, so a test can see which neighbour a late
 * frame was given.
 */
import sharp from 'sharp';
import type { FrameInput, FrameOutcome, FrameProcessor, LateFrameInput } from '../../core/ports.ts';

/** With `stats`: extra milliseconds per batch, standing in for a slow model in tests. */
export const STATS_PROCESSOR_DELAY_MS_ENV = 'STATS_PROCESSOR_DELAY_MS';

interface StatsState {
  framesSeen: number;
  meanLuma: number;
  lastFrame: number | null;
}

export class StatsProcessor implements FrameProcessor {
  readonly description: string;
  private readonly videos = new Map<string, StatsState>();
  private readonly delayMs: number;

  /** @param delayMs extra time per call, to stand in for a slow model in tests */
  constructor(delayMs = 0) {
    this.delayMs = delayMs;
    this.description = `stats processor (sharp decode, mean luminance; no model${delayMs ? `; ${delayMs} ms per call` : ''})`;
  }

  async start(): Promise<void> {}

  openVideo(videoId: string, snapshot: string | undefined): void {
    this.videos.set(videoId, snapshot ? (JSON.parse(snapshot) as StatsState) : { framesSeen: 0, meanLuma: 0, lastFrame: null });
  }

  async process(frames: readonly FrameInput[]): Promise<FrameOutcome[]> {
    const decoded = await this.decodeAll(frames);
    return frames.map((f, i): FrameOutcome => {
      const d = decoded[i]!;
      if (!d.ok) return { status: 'failed', reason: 'corrupt-image', detail: d.detail };
      const s = this.videos.get(f.videoId);
      if (!s) throw new Error(`video ${f.videoId} was not opened`);
      // Never expected: the worker's sequencer guarantees order. Recorded, not thrown, so tests can see it.
      if (s.lastFrame !== null && f.frame <= s.lastFrame) return { status: 'failed', reason: 'order-violation', detail: `frame ${f.frame} after ${s.lastFrame}` };
      s.framesSeen += 1;
      s.meanLuma += (d.luma - s.meanLuma) / s.framesSeen;
      s.lastFrame = f.frame;
      return {
        status: 'ok',
        detections: [{ trackId: s.framesSeen, label: 'frame', score: Math.min(1, d.luma / 255), box: [0, 0, d.width, d.height] }],
      };
    });
  }

  /**
   * Decodes like `process`, without reading or changing any video's state (the video
   * need not be open). The one whole-frame detection carries the `before` neighbour's
   * first track ID, or 0 when there is none.
   */
  async processLate(frames: readonly LateFrameInput[]): Promise<FrameOutcome[]> {
    const decoded = await this.decodeAll(frames);
    return frames.map((f, i): FrameOutcome => {
      const d = decoded[i]!;
      if (!d.ok) return { status: 'failed', reason: 'corrupt-image', detail: d.detail };
      const trackId = f.before?.detections[0]?.trackId ?? 0;
      return { status: 'ok', detections: [{ trackId, label: 'frame', score: Math.min(1, d.luma / 255), box: [0, 0, d.width, d.height] }] };
    });
  }

  private async decodeAll(frames: readonly FrameInput[]) {
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    return Promise.all(
      frames.map(async (f) => {
        try {
          // A segment's frame comes decoded (packed RGB); an image is decoded here.
          const img = f.pixels ? sharp(f.pixels.data, { raw: { width: f.pixels.width, height: f.pixels.height, channels: 3 } }) : sharp(f.image, { failOn: 'error' });
          const [meta, stats] = await Promise.all([img.metadata(), img.stats()]);
          const channels = stats.channels.slice(0, 3);
          const luma = channels.reduce((a, c) => a + c.mean, 0) / channels.length;
          return { ok: true as const, width: meta.width ?? 0, height: meta.height ?? 0, luma };
        } catch (e) {
          return { ok: false as const, detail: e instanceof Error ? e.message : String(e) };
        }
      }),
    );
  }

  /** The state is a few numbers, far under any budget: `_maxBytes` never needs anything dropped. */
  snapshot(videoId: string, _maxBytes?: number): string {
    const s = this.videos.get(videoId);
    return JSON.stringify(s ?? { framesSeen: 0, meanLuma: 0, lastFrame: null });
  }

  closeVideo(videoId: string): void {
    this.videos.delete(videoId);
  }

  async stop(): Promise<void> {}
}
