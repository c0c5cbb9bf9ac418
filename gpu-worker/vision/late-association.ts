/**
 * Track IDs for a late frame: a frame that arrives after the live tracker has
 * moved past it. Rewinding the tracker would change the IDs of frames already
 * committed, so instead the late frame's detections are associated with the
 * tracks of its nearest committed neighbours, read from their results. Pure: no
 * model, no tracker state, no I/O.
 */
import type { Detection, NeighbourFrame } from '../../core/ports.ts';
import { assign } from './assignment.ts';
import { iou, type Box } from './postprocess.ts';

/**
 * Least IoU between a detection and a track's predicted box for them to match.
 * Lower than the 0.5 used for evaluation because a one-sided prediction is the
 * neighbour's box unmoved, and a small object moving a few pixels per frame loses
 * overlap quickly; higher than ByteTrack's 0.2 (first-stage cost limit 0.8)
 * because there is no motion model here to vouch for a weak overlap.
 */
export const DEFAULT_LATE_MIN_IOU = 0.3;

/** A detection of the late frame before association (as the detector gives it). */
export interface LateDetectionInput {
  readonly box: readonly [number, number, number, number];
  readonly score: number;
  readonly label: string;
}

export interface LateAssociationOptions {
  /** Least IoU for a match (default {@link DEFAULT_LATE_MIN_IOU}). */
  readonly minIou?: number;
}

/** Where a neighbouring track is expected to be in the late frame. */
export interface PredictedTrack {
  readonly trackId: number;
  readonly label: string;
  readonly box: Box;
  /** `both` = interpolated between the neighbours; otherwise the one neighbour that has the track. */
  readonly source: 'both' | 'before' | 'after';
}

/** The first detection of each track in a neighbour; trackId 0 (unassociated) is no track. */
function tracksOf(neighbour: NeighbourFrame | undefined): Map<number, Detection> {
  const byId = new Map<number, Detection>();
  for (const d of neighbour?.detections ?? []) {
    // A late neighbour may carry unassociated detections (trackId 0): they name no track.
    if (d.trackId === 0 || byId.has(d.trackId)) continue;
    byId.set(d.trackId, d);
  }
  return byId;
}

function copyBox(b: readonly number[]): Box {
  return [b[0], b[1], b[2], b[3]];
}

/**
 * Predicts the box of every track present in a neighbour at `frame`.
 *
 * - In both neighbours: linear interpolation of each corner, weighted by frame
 *   distance (the nearer neighbour counts more). Objects move roughly at constant
 *   velocity over a short gap, and corner-wise interpolation also follows an
 *   object that grows while entering the image.
 * - In one neighbour only: that neighbour's box, unmoved. With one observation there
 *   is no velocity to extrapolate with, and a guessed one would push the box away
 *   from where an object that stopped, or is leaving, really is.
 *
 * The interpolation weight is clamped to [0, 1] so that neighbours given on the
 * wrong side of `frame` (the port promises they are not) never extrapolate.
 */
export function predictTracks(frame: number, before?: NeighbourFrame, after?: NeighbourFrame): PredictedTrack[] {
  const fromBefore = tracksOf(before);
  const fromAfter = tracksOf(after);
  // Both maps are empty when their neighbour is absent, so `both` implies both frames exist.
  const span = (after?.frame ?? 0) - (before?.frame ?? 0);
  const t = span > 0 ? Math.min(1, Math.max(0, (frame - (before?.frame ?? 0)) / span)) : 0;
  const predicted: PredictedTrack[] = [];
  for (const [trackId, b] of fromBefore) {
    const a = fromAfter.get(trackId);
    if (!a) {
      predicted.push({ trackId, label: b.label, box: copyBox(b.box), source: 'before' });
      continue;
    }
    // The tracker never relabels a track; should the two sides disagree, the nearer one wins.
    const label = t <= 0.5 ? b.label : a.label;
    const box = copyBox(b.box.map((v, k) => v + (a.box[k] - v) * t));
    predicted.push({ trackId, label, box, source: 'both' });
  }
  for (const [trackId, a] of fromAfter) {
    if (fromBefore.has(trackId)) continue;
    predicted.push({ trackId, label: a.label, box: copyBox(a.box), source: 'after' });
  }
  return predicted;
}

/**
 * Gives the detections of late frame `frame` track IDs from its neighbours: every
 * track present in `before` or `after` is predicted at `frame` ({@link predictTracks}),
 * then detections and predicted tracks are matched one-to-one by the Hungarian
 * algorithm on 1 - IoU, only within the same label and only at IoU >= `minIou`.
 * A detection left unmatched gets trackId 0. Returns the detections in input order.
 *
 * One-to-one matters: two detections of one frame must never share a track ID, and
 * when tracks cross, the globally cheapest assignment (not each detection's best
 * box) keeps them apart.
 */
export function associateLateFrame(
  frame: number,
  detections: readonly LateDetectionInput[],
  before?: NeighbourFrame,
  after?: NeighbourFrame,
  options: LateAssociationOptions = {},
): Detection[] {
  const minIou = options.minIou ?? DEFAULT_LATE_MIN_IOU;
  const tracks = predictTracks(frame, before, after);
  const cost = detections.map((d) =>
    tracks.map((t) => (t.label === d.label ? 1 - iou(d.box, t.box) : Number.POSITIVE_INFINITY)),
  );
  const trackIds = new Array<number>(detections.length).fill(0);
  for (const [di, ti] of assign(cost, 1 - minIou, tracks.length).matches) trackIds[di] = tracks[ti].trackId;
  return detections.map((d, i) => ({ trackId: trackIds[i], label: d.label, score: d.score, box: copyBox(d.box) }));
}
