/**
 * ByteTrack-style multi-object tracker, one instance per video.
 *
 * - Motion: a constant-velocity Kalman filter on (cx, cy, w, h). With ByteTrack's
 *   (BoT-SORT xywh variant) diagonal process and measurement noise and a
 *   diagonal initial covariance, the 8-state filter splits exactly into four
 *   independent 2-state (position, velocity) filters, so each is a 2x2 covariance
 *   held in plain numbers.
 * - Association: two stages. High-score detections against every tracked and
 *   lost track; then low-score detections against the tracks still tracked and
 *   unmatched. Unconfirmed (one-frame) tracks get the leftover high detections.
 *   Cost is 1 - IoU of the predicted box (infinite across labels), solved with
 *   the Hungarian algorithm.
 * - Frame numbers may skip: the filter predicts once per elapsed frame.
 * - State, including the track-id counter, serialises to JSON, which round-trips
 *   every float exactly, so restore-then-continue equals an uninterrupted run.
 * - Bounded state: `serialize(maxBytes)` / `compact(maxBytes)` evict the tracks that
 *   matter least until the serialisation fits (lost tracks, oldest lost first; then
 *   unconfirmed; only then confirmed tracked ones, lowest score first). The eviction is
 *   applied to the live tracker too, so memory, the checkpoint and a restored tracker
 *   agree and restore-then-continue still equals an uninterrupted run.
 */
import { DEFAULT_TUNABLES } from '../../core/config.ts';
import { assign } from './assignment.ts';
import { iou, type Box } from './postprocess.ts';
import { kfInitiate, kfPredict, kfUpdate } from './kalman-box.ts';

export interface TrackerOptions {
  /** Detections at or above this score take part in the first association and may start tracks. */
  readonly highScoreThreshold: number;
  /** Detections below this score are ignored entirely. */
  readonly lowScoreThreshold: number;
  /** A new track needs a detection at least this confident. */
  readonly newTrackThreshold: number;
  /** Max 1 - IoU for the first association. */
  readonly firstMatchMaxCost: number;
  /** Max 1 - IoU for the second (low-score) association. */
  readonly secondMatchMaxCost: number;
  /** Max 1 - IoU for unconfirmed tracks. */
  readonly unconfirmedMatchMaxCost: number;
  /** A lost track is dropped after this many frames without a match. */
  readonly maxLostFrames: number;
}

/** ByteTrack's defaults (track_thresh 0.5, match_thresh 0.8, track_buffer 30); the score thresholds are tunables. */
export const DEFAULT_TRACKER_OPTIONS: TrackerOptions = Object.freeze({
  highScoreThreshold: DEFAULT_TUNABLES.trackHighScoreThreshold,
  lowScoreThreshold: DEFAULT_TUNABLES.trackLowScoreThreshold,
  newTrackThreshold: DEFAULT_TUNABLES.newTrackScoreThreshold,
  firstMatchMaxCost: 0.8,
  secondMatchMaxCost: 0.5,
  unconfirmedMatchMaxCost: 0.7,
  maxLostFrames: 30,
});

/** A detection fed to the tracker, in source pixels. */
export interface TrackerInput {
  readonly box: Box;
  readonly score: number;
  readonly label: string;
}

/** A detection the tracker confirmed this frame. */
export interface TrackedDetection extends TrackerInput {
  readonly trackId: number;
  /** Index of the input detection this came from. */
  readonly detectionIndex: number;
}

const TRACKED = 0;
const LOST = 1;

/**
 * One track. `kf` holds, for each of cx, cy, w, h: [position, velocity,
 * P00, P01, P11] (5 numbers each, 20 in all).
 */
interface Track {
  id: number;
  state: number;
  activated: boolean;
  label: string;
  score: number;
  startFrame: number;
  lastSeenFrame: number;
  kf: number[];
}

function trackBox(t: Track): Box {
  const cx = t.kf[0];
  const cy = t.kf[5];
  const w = t.kf[10];
  const h = t.kf[15];
  return [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2];
}

/** Serialised form, version 1: compact arrays, JSON numbers round-trip exactly. */
interface TrackerSnapshotV1 {
  v: 1;
  /** Next track id to hand out. */
  n: number;
  /** Last frame number seen, or null before the first frame. */
  f: number | null;
  /** Tracks: [id, state, activated 0/1, label, score, startFrame, lastSeenFrame, ...kf(20)]. */
  t: (number | string)[][];
}

/** Serialised row of one track (see {@link TrackerSnapshotV1.t}). */
function trackRow(t: Track): (number | string)[] {
  return [t.id, t.state, t.activated ? 1 : 0, t.label, t.score, t.startFrame, t.lastSeenFrame, ...t.kf];
}

/**
 * Eviction class of a track under a byte budget, lowest goes first:
 * 0 lost (confirmed, currently unmatched), 1 unconfirmed (one-frame, tentative),
 * 2 confirmed and tracked. (Removed tracks are never kept, so there is no class for them.)
 */
function evictionClass(t: Track): number {
  if (t.state === LOST) return 0;
  if (!t.activated) return 1;
  return 2;
}

/**
 * Eviction order: by class; lost tracks longest unmatched first; unconfirmed and
 * tracked ones lowest score first, then least recently updated; ties by id (oldest first),
 * so the order is total and the result deterministic.
 */
function evictionOrder(a: Track, b: Track): number {
  const ca = evictionClass(a);
  const cb = evictionClass(b);
  if (ca !== cb) return ca - cb;
  if (ca === 0) return a.lastSeenFrame - b.lastSeenFrame || a.id - b.id;
  return a.score - b.score || a.lastSeenFrame - b.lastSeenFrame || a.id - b.id;
}

/** What {@link ByteTracker.compact} did to fit a byte budget. */
export interface TrackerCompaction {
  /** The serialisation after eviction (what {@link ByteTracker.serialize} with the budget returns). */
  readonly snapshot: string;
  /** UTF-8 bytes of `snapshot`. */
  readonly bytes: number;
  /** UTF-8 bytes of the full serialisation, before any eviction. */
  readonly fullBytes: number;
  /** Tracks evicted, by kind. All zero when the budget was already met. */
  readonly evicted: { readonly lost: number; readonly unconfirmed: number; readonly tracked: number };
  /** IDs of the evicted tracks, in eviction order. */
  readonly evictedIds: readonly number[];
  /**
   * False only when even a tracker with no tracks is larger than the budget: the
   * snapshot then holds the counter and frame alone (a few dozen bytes), which are never dropped.
   */
  readonly fits: boolean;
}

/** Per-video ByteTrack state. */
export class ByteTracker {
  readonly options: TrackerOptions;
  private nextId = 1;
  private lastFrame: number | null = null;
  private tracks: Track[] = [];

  constructor(options: Partial<TrackerOptions> = {}) {
    this.options = { ...DEFAULT_TRACKER_OPTIONS, ...options };
  }

  /** Number of live (tracked, unconfirmed or lost) tracks. */
  get trackCount(): number {
    return this.tracks.length;
  }

  /** Last frame number processed, or null. */
  get lastFrameNumber(): number | null {
    return this.lastFrame;
  }

  /**
   * Advances the tracker to `frame` with that frame's detections and returns the
   * confirmed tracks matched in it. `frame` must exceed the previous frame; the
   * difference is the number of prediction steps.
   */
  update(frame: number, detections: readonly TrackerInput[]): TrackedDetection[] {
    if (this.lastFrame !== null && frame <= this.lastFrame) {
      throw new RangeError(`frame ${frame} is not after the last tracked frame ${this.lastFrame}`);
    }
    const firstFrame = this.lastFrame === null;
    const elapsed = firstFrame ? 0 : frame - this.lastFrame!;
    this.lastFrame = frame;
    const o = this.options;

    // Long gaps only need enough steps to push every track past its lost deadline.
    const steps = Math.min(elapsed, o.maxLostFrames + 1);
    for (const t of this.tracks) for (let s = 0; s < steps; s++) kfPredict(t.kf, t.state !== TRACKED);

    const high: number[] = [];
    const low: number[] = [];
    detections.forEach((d, i) => {
      if (d.score >= o.highScoreThreshold) high.push(i);
      else if (d.score >= o.lowScoreThreshold) low.push(i);
    });

    const matchedDet = new Map<Track, number>();
    const pool = this.tracks.filter((t) => t.activated);
    const unconfirmed = this.tracks.filter((t) => !t.activated);

    // Stage 1: high-score detections vs all confirmed tracks (tracked + lost).
    const first = this.associate(pool, high, detections, o.firstMatchMaxCost);
    for (const [ti, di] of first.matches) matchedDet.set(pool[ti], high[di]);

    // Stage 2: low-score detections vs tracks that were tracked and are still unmatched.
    const remainingTracked = first.unmatchedRows.map((i) => pool[i]).filter((t) => t.state === TRACKED);
    const second = this.associate(remainingTracked, low, detections, o.secondMatchMaxCost);
    for (const [ti, di] of second.matches) matchedDet.set(remainingTracked[ti], low[di]);
    const secondUnmatched = new Set(second.unmatchedRows.map((i) => remainingTracked[i]));

    // Stage 3: leftover high detections vs unconfirmed tracks.
    const leftoverHigh = first.unmatchedCols.map((i) => high[i]);
    const third = this.associate(unconfirmed, leftoverHigh, detections, o.unconfirmedMatchMaxCost);
    for (const [ti, di] of third.matches) matchedDet.set(unconfirmed[ti], leftoverHigh[di]);
    const thirdUnmatchedDets = third.unmatchedCols.map((i) => leftoverHigh[i]);
    const unmatchedUnconfirmed = new Set(third.unmatchedRows.map((i) => unconfirmed[i]));

    const output: TrackedDetection[] = [];
    const survivors: Track[] = [];
    for (const t of this.tracks) {
      const di = matchedDet.get(t);
      if (di !== undefined) {
        const d = detections[di];
        kfUpdate(t.kf, d.box);
        t.state = TRACKED;
        t.activated = true;
        t.score = d.score;
        t.lastSeenFrame = frame;
        survivors.push(t);
        output.push({ trackId: t.id, detectionIndex: di, box: d.box, score: d.score, label: d.label });
        continue;
      }
      if (unmatchedUnconfirmed.has(t)) continue;
      if (secondUnmatched.has(t)) t.state = LOST;
      if (t.state === LOST && frame - t.lastSeenFrame > o.maxLostFrames) continue;
      survivors.push(t);
    }

    for (const di of thirdUnmatchedDets) {
      const d = detections[di];
      if (d.score < o.newTrackThreshold) continue;
      const t: Track = {
        id: this.nextId++,
        state: TRACKED,
        // ByteTrack confirms a new track at once only on the very first frame.
        activated: firstFrame,
        label: d.label,
        score: d.score,
        startFrame: frame,
        lastSeenFrame: frame,
        kf: kfInitiate(d.box),
      };
      survivors.push(t);
      if (firstFrame) output.push({ trackId: t.id, detectionIndex: di, box: d.box, score: d.score, label: d.label });
    }
    this.tracks = this.removeDuplicates(survivors);
    output.sort((a, b) => a.detectionIndex - b.detectionIndex);
    return output;
  }

  private associate(tracks: readonly Track[], detIdx: readonly number[], detections: readonly TrackerInput[], maxCost: number) {
    const predicted = tracks.map(trackBox);
    const cost = tracks.map((t, ti) =>
      detIdx.map((di) => (detections[di].label === t.label ? 1 - iou(predicted[ti], detections[di].box) : Number.POSITIVE_INFINITY)),
    );
    return assign(cost, maxCost, detIdx.length);
  }

  /** ByteTrack's remove_duplicate_stracks: a lost track overlapping a tracked one (IoU > 0.85) goes, keeping the older. */
  private removeDuplicates(tracks: Track[]): Track[] {
    const tracked = tracks.filter((t) => t.state === TRACKED && t.activated);
    const lost = tracks.filter((t) => t.state === LOST);
    const drop = new Set<Track>();
    for (const a of tracked) {
      for (const b of lost) {
        if (a.label !== b.label || iou(trackBox(a), trackBox(b)) <= 0.85) continue;
        const ageA = a.lastSeenFrame - a.startFrame;
        const ageB = b.lastSeenFrame - b.startFrame;
        drop.add(ageA > ageB ? b : a);
      }
    }
    return drop.size === 0 ? tracks : tracks.filter((t) => !drop.has(t));
  }

  /**
   * Compact JSON checkpoint; {@link ByteTracker.restore} gives back an identical tracker.
   *
   * With `maxBytes`, the tracker first {@link ByteTracker.compact | compacts} itself to fit:
   * the tracks that matter least are evicted from this tracker (not only from the returned
   * string), so the snapshot still describes the live state exactly. When the state
   * already fits, nothing changes and the result is byte-identical to `serialize()`.
   */
  serialize(maxBytes?: number): string {
    if (maxBytes !== undefined) return this.compact(maxBytes).snapshot;
    const snap: TrackerSnapshotV1 = { v: 1, n: this.nextId, f: this.lastFrame, t: this.tracks.map(trackRow) };
    return JSON.stringify(snap);
  }

  /**
   * Evicts tracks until the serialisation is at most `maxBytes` UTF-8 bytes, and returns
   * it. Order (see {@link evictionOrder}): lost tracks, longest since last matched first;
   * then unconfirmed tracks; only as a last resort confirmed tracked ones, lowest score
   * first. Evicted tracks leave the live tracker as if they had expired: an object that
   * comes back later starts a new track with a new ID. The ID counter and the last frame
   * are never dropped, so IDs stay unique; the kept tracks keep their order, so
   * association on later frames is what an uninterrupted run with the same state gives.
   *
   * Cost: each track is stringified once (as for `serialize()`), plus one sort of the
   * tracks; the size after each eviction is known exactly from the per-track row sizes.
   */
  compact(maxBytes: number): TrackerCompaction {
    if (Number.isNaN(maxBytes)) throw new RangeError('maxBytes must be a number');
    const empty = JSON.stringify({ v: 1, n: this.nextId, f: this.lastFrame, t: [] } satisfies TrackerSnapshotV1);
    // `...,"t":[` + rows joined by "," + `]}`: identical to JSON.stringify of the whole snapshot.
    const prefix = empty.slice(0, -2);
    const suffix = empty.slice(-2);
    const rows = this.tracks.map((t) => JSON.stringify(trackRow(t)));
    const rowBytes = rows.map((r) => Buffer.byteLength(r));
    const frame = Buffer.byteLength(empty);
    let rowSum = rowBytes.reduce((a, b) => a + b, 0);
    let count = rows.length;
    const sizeOf = () => frame + rowSum + Math.max(0, count - 1);
    const fullBytes = sizeOf();

    const evicted = new Set<Track>();
    const evictedIds: number[] = [];
    const byKind = { lost: 0, unconfirmed: 0, tracked: 0 };
    if (fullBytes > maxBytes) {
      const index = new Map(this.tracks.map((t, i) => [t, i]));
      const order = [...this.tracks].sort(evictionOrder);
      for (const t of order) {
        if (sizeOf() <= maxBytes) break;
        evicted.add(t);
        evictedIds.push(t.id);
        rowSum -= rowBytes[index.get(t)!];
        count--;
        const kind = evictionClass(t);
        if (kind === 0) byKind.lost++;
        else if (kind === 1) byKind.unconfirmed++;
        else byKind.tracked++;
      }
    }
    const bytes = sizeOf();
    let kept = rows;
    if (evicted.size > 0) {
      kept = rows.filter((_, i) => !evicted.has(this.tracks[i]));
      this.tracks = this.tracks.filter((t) => !evicted.has(t));
    }
    return {
      snapshot: prefix + kept.join(',') + suffix,
      bytes,
      fullBytes,
      evicted: byKind,
      evictedIds,
      fits: bytes <= maxBytes,
    };
  }

  /** Rebuilds a tracker from {@link ByteTracker.serialize} output. */
  static restore(snapshot: string, options: Partial<TrackerOptions> = {}): ByteTracker {
    const snap = JSON.parse(snapshot) as TrackerSnapshotV1;
    if (snap.v !== 1 || !Array.isArray(snap.t)) throw new Error('unsupported tracker snapshot');
    const tracker = new ByteTracker(options);
    tracker.nextId = snap.n;
    tracker.lastFrame = snap.f;
    tracker.tracks = snap.t.map((row) => ({
      id: row[0] as number,
      state: row[1] as number,
      activated: row[2] === 1,
      label: row[3] as string,
      score: row[4] as number,
      startFrame: row[5] as number,
      lastSeenFrame: row[6] as number,
      kf: row.slice(7) as number[],
    }));
    return tracker;
  }
}
