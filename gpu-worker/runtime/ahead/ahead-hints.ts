/**
 * What the worker hands the processor ahead of a round (decisions 39, 42): bytes a
 * prefetch brought for messages already received are decoded ahead; bytes read ahead by
 * predicted key, for a frame the video would run next, are detected ahead. The choice is
 * pure ({@link detectAheadHint}); {@link aheadHooks} wires it to the prefetch.
 */
import { parseFrameKey } from '../../../core/ingest/keys.ts';
import type { FrameInput, FrameProcessor } from '../../../core/ports.ts';

/** What the hint needs of a video the worker owns. */
export interface AheadVideo {
  /** video-session.ts: not settled, not backing off, not isolated, within its start and end. */
  wouldRun(frame: number, nowMs: number): boolean;
}

/**
 * The frame to detect ahead for bytes read ahead under `key`, or undefined: only a frame
 * key of a video this worker owns and would run next. A video under crash isolation never
 * qualifies (`wouldRun` says no): its frames reach the model only through the probe
 * (decision 41), and a poison frame detected ahead would kill the worker outside it.
 */
export function detectAheadHint(key: string, image: Uint8Array, videoOf: (videoId: string) => AheadVideo | undefined, nowMs: number): FrameInput | undefined {
  const k = parseFrameKey(key);
  if (k.kind !== 'frame') return undefined;
  const video = videoOf(k.videoId);
  if (!video?.wouldRun(k.frame, nowMs)) return undefined;
  return { videoId: k.videoId, frame: k.frame, image, key };
}

/** The prefetch's callbacks (frame-prefetch.ts): decode ahead always, detect ahead when `detectAheadFrames` > 0 and the processor can. */
export function aheadHooks(
  processor: FrameProcessor,
  detectAheadFrames: number,
  videoOf: (videoId: string) => AheadVideo | undefined,
  now: () => number,
): { onFetched: (bytes: Uint8Array) => void; onReadAhead?: (bytes: Uint8Array, key: string) => void } {
  const onFetched = (bytes: Uint8Array) => processor.prepareAhead?.(bytes);
  if (detectAheadFrames <= 0 || !processor.detectAhead) return { onFetched };
  return {
    onFetched,
    onReadAhead: (bytes, key) => {
      const hint = detectAheadHint(key, bytes, videoOf, now());
      if (hint) processor.detectAhead?.(hint);
    },
  };
}
