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
 * - The filter's numbers and each track's score are single precision (float32, as in
 *   ByteTrack's C++ deployment): every `update` rounds them with `Math.fround` when it
 *   ends, so the live state is always exactly what the compact binary snapshot (version 2,
 *   issue 44, decision 76) holds, whatever frames a checkpoint falls on. Restore-then-continue
 *   therefore equals an uninterrupted run, and a checkpoint costs 4 bytes a number instead
 *   of a JSON double's 17-20. (A version 1 snapshot, JSON of doubles, is still read; it is
 *   rounded to float32 when restored.)
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
import { binarySnapshot, binarySnapshotBytes, binarySnapshotLength } from '../../core/commit/binary-snapshot.ts';
import { unzigzag, zigzag } from '../../core/commit/bit-codes.ts';


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

/** Serialised form, version 1 (read only, written before issue 44): JSON arrays of doubles. */
interface TrackerSnapshotV1 {
  v: 1;
  /** Next track id to hand out. */
  n: number;
  /** Last frame number seen, or null before the first frame. */
  f: number | null;
  /** Tracks: [id, state, activated 0/1, label, score, startFrame, lastSeenFrame, ...kf(20)]. */
  t: (number | string)[][];
}

/** Rounds a track's filter and score to float32 in place (see the module comment). */
function quantise(t: Track): void {
  t.score = Math.fround(t.score);
  for (let i = 0; i < t.kf.length; i++) t.kf[i] = Math.fround(t.kf[i]);
}

/*
 * Snapshot version 2 (binary, carried as text by core/commit/binary-snapshot.ts, stored
 * as raw bytes beside the checkpoint):
 *   u8 2 | varint next id | varint frame (0 = none, else 1 + zigzag(frame)) |
 *   varint label count, labels (varint UTF-8 length, bytes) | then per track, to the end:
 *   varint id | u8 flags | varint label index | f32 score | varint zigzag(frame − start) |
 *   varint zigzag(frame − last seen) | 14 or 20 f32 filter numbers, little-endian.
 * Flags: 1 lost, 2 activated, 4 shared covariances, 8 size at rest. The filter's noise scales with the
 * box's width for cx and w and with its height for cy and h (kalman-box.ts), so the 2x2
 * covariances of cx and w are the same numbers, as are those of cy and h: when they are
 * (always, unless a snapshot from elsewhere says otherwise) the row keeps only the first
 * of each pair (14 numbers, flag 4). A lost track's size velocities are zero (ByteTrack
 * freezes its size while it is not tracked): when both are, they are left out (flag 8).
 */
const SNAPSHOT_V2 = 2;
const FLAG_LOST = 1;
const FLAG_ACTIVATED = 2;
const FLAG_SHARED_COVARIANCE = 4;
const FLAG_SIZE_AT_REST = 8;
/** Filter indexes a row keeps when covariances are shared: every mean, cx's and cy's covariances. */
const SHARED_KEPT = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 16] as const;

class ByteWriter {
  private buf = new Uint8Array(256);
  private view = new DataView(this.buf.buffer);
  length = 0;
  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n));
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  u8(x: number): void {
    this.room(1);
    this.buf[this.length++] = x;
  }
  /** Unsigned LEB128 of a non-negative safe integer. */
  varint(x: number): void {
    if (!Number.isSafeInteger(x) || x < 0) throw new RangeError(`tracker snapshot: ${x} is not a non-negative integer`);
    while (x >= 0x80) {
      this.u8((x % 0x80) | 0x80);
      x = Math.floor(x / 0x80);
    }
    this.u8(x);
  }
  zigzag(x: number): void {
    this.varint(zigzag(x));
  }
  f32(x: number): void {
    this.room(4);
    this.view.setFloat32(this.length, x, true);
    this.length += 4;
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  done(): Uint8Array {
    return this.buf.slice(0, this.length);
  }
}

class ByteReader {
  private at = 0;
  private readonly view: DataView;
  private readonly buf: Uint8Array;
  constructor(buf: Uint8Array) {
    this.buf = buf;
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }
  get done(): boolean {
    return this.at >= this.buf.length;
  }
  private need(n: number): void {
    if (this.at + n > this.buf.length) throw new Error('tracker snapshot is truncated');
  }
  u8(): number {
    this.need(1);
    return this.buf[this.at++]!;
  }
  varint(): number {
    let x = 0;
    let scale = 1;
    for (;;) {
      const b = this.u8();
      x += (b & 0x7f) * scale;
      if (b < 0x80) return x;
      scale *= 0x80;
      if (scale > 2 ** 56) throw new Error('tracker snapshot has an overlong number');
    }
  }
  zigzag(): number {
    return unzigzag(this.varint());
  }
  f32(): number {
    this.need(4);
    const x = this.view.getFloat32(this.at, true);
    this.at += 4;
    return x;
  }
  bytes(n: number): Uint8Array {
    this.need(n);
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
}

const sharesCovariance = (kf: readonly number[]) =>
  kf[2] === kf[12] && kf[3] === kf[13] && kf[4] === kf[14] && kf[7] === kf[17] && kf[8] === kf[18] && kf[9] === kf[19];

/** One track's version 2 row (see the format above); `frame` is the snapshot's frame. */
function encodeRow(t: Track, frame: number, labelIndex: number): Uint8Array {
  const w = new ByteWriter();
  const shared = sharesCovariance(t.kf);
  // Object.is: a negative zero must be written as such (it prints and adds like zero, but is not one).
  const atRest = Object.is(t.kf[11], 0) && Object.is(t.kf[16], 0);
  w.varint(t.id);
  w.u8((t.state === LOST ? FLAG_LOST : 0) | (t.activated ? FLAG_ACTIVATED : 0) | (shared ? FLAG_SHARED_COVARIANCE : 0) | (atRest ? FLAG_SIZE_AT_REST : 0));
  w.varint(labelIndex);
  w.f32(t.score);
  w.zigzag(frame - t.startFrame);
  w.zigzag(frame - t.lastSeenFrame);
  for (const i of shared ? SHARED_KEPT : ALL_KF) if (!(atRest && (i === 11 || i === 16))) w.f32(t.kf[i]);
  return w.done();
}

const ALL_KF = Array.from({ length: 20 }, (_, i) => i);

/** The snapshot's header: version, next id, frame and the label table. */
function encodeHeader(nextId: number, frame: number | null, labels: readonly string[]): Uint8Array {
  const w = new ByteWriter();
  w.u8(SNAPSHOT_V2);
  w.varint(nextId);
  if (frame === null) w.varint(0);
  else w.varint(1 + (frame >= 0 ? 2 * frame : -2 * frame - 1));
  w.varint(labels.length);
  for (const l of labels) {
    const b = Buffer.from(l, 'utf8');
    w.varint(b.length);
    w.bytes(b);
  }
  return w.done();
}

function decodeV2(bytes: Uint8Array): TrackerSnapshotV1 {
  const r = new ByteReader(bytes);
  if (r.u8() !== SNAPSHOT_V2) throw new Error('unsupported tracker snapshot version');
  const n = r.varint();
  const fz = r.varint();
  const f = fz === 0 ? null : (fz - 1) % 2 === 0 ? (fz - 1) / 2 : -fz / 2;
  const labels = Array.from({ length: r.varint() }, () => Buffer.from(r.bytes(r.varint())).toString('utf8'));
  const t: (number | string)[][] = [];
  while (!r.done) {
    const id = r.varint();
    const flags = r.u8();
    const label = labels[r.varint()];
    if (label === undefined || f === null) throw new Error('tracker snapshot has a track without a label or a frame');
    const score = r.f32();
    const startFrame = f - r.zigzag();
    const lastSeenFrame = f - r.zigzag();
    const atRest = (flags & FLAG_SIZE_AT_REST) !== 0;
    const read = (i: number) => (atRest && (i === 11 || i === 16) ? 0 : r.f32());
    let kf: number[];
    if (flags & FLAG_SHARED_COVARIANCE) {
      const kept = SHARED_KEPT.map(read);
      kf = [...kept.slice(0, 12), kept[2]!, kept[3]!, kept[4]!, kept[12]!, kept[13]!, kept[7]!, kept[8]!, kept[9]!];
    } else kf = ALL_KF.map(read);
    t.push([id, flags & FLAG_LOST ? LOST : TRACKED, flags & FLAG_ACTIVATED ? 1 : 0, label, score, startFrame, lastSeenFrame, ...kf]);
  }
  return { v: 1, n, f, t };
}

/**
 * The content of a snapshot of either version, as version 1's shape (rows of
 * [id, state, activated, label, score, startFrame, lastSeenFrame, ...kf(20)]). Throws on
 * a snapshot that is neither.
 */
export function readTrackerSnapshot(snapshot: string): { readonly n: number; readonly f: number | null; readonly t: readonly (readonly (number | string)[])[] } {
  const bytes = binarySnapshotBytes(snapshot);
  if (bytes) return decodeV2(bytes);
  const snap = JSON.parse(snapshot) as TrackerSnapshotV1;
  if (snap.v !== 1 || !Array.isArray(snap.t)) throw new Error('unsupported tracker snapshot');
  return snap;
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
    for (const t of this.tracks) quantise(t);
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
   * Compact checkpoint (version 2, binary as text: see the format above);
   * {@link ByteTracker.restore} gives back an identical tracker.
   *
   * With `maxBytes`, the tracker first {@link ByteTracker.compact | compacts} itself to fit:
   * the tracks that matter least are evicted from this tracker (not only from the returned
   * string), so the snapshot still describes the live state exactly. When the state
   * already fits, nothing changes and the result is byte-identical to `serialize()`.
   */
  serialize(maxBytes?: number): string {
    if (maxBytes !== undefined) return this.compact(maxBytes).snapshot;
    return this.encode(this.tracks);
  }

  /** The labels of `tracks` in order of first appearance: the snapshot's label table. */
  private static labelsOf(tracks: readonly Track[]): string[] {
    return [...new Set(tracks.map((t) => t.label))];
  }

  private encode(tracks: readonly Track[]): string {
    const labels = ByteTracker.labelsOf(tracks);
    const index = new Map(labels.map((l, i) => [l, i]));
    const frame = this.lastFrame ?? 0;
    const parts = [encodeHeader(this.nextId, this.lastFrame, labels), ...tracks.map((t) => encodeRow(t, frame, index.get(t.label)!))];
    return binarySnapshot(Buffer.concat(parts));
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
   * Cost: each track is encoded once, plus one sort of the tracks. The size after each
   * eviction is bounded from the per-track row sizes with every label still in the label
   * table (a label that leaves with its last track only makes the snapshot smaller), so
   * the result always fits when it can.
   */
  compact(maxBytes: number): TrackerCompaction {
    if (Number.isNaN(maxBytes)) throw new RangeError('maxBytes must be a number');
    const labels = ByteTracker.labelsOf(this.tracks);
    const index = new Map(labels.map((l, i) => [l, i]));
    const frame = this.lastFrame ?? 0;
    const header = encodeHeader(this.nextId, this.lastFrame, labels).length;
    const rowBytes = this.tracks.map((t) => encodeRow(t, frame, index.get(t.label)!).length);
    let rowSum = rowBytes.reduce((a, b) => a + b, 0);
    const sizeOf = () => binarySnapshotLength(header + rowSum);
    const fullBytes = sizeOf();

    const evicted = new Set<Track>();
    const evictedIds: number[] = [];
    const byKind = { lost: 0, unconfirmed: 0, tracked: 0 };
    if (fullBytes > maxBytes) {
      const position = new Map(this.tracks.map((t, i) => [t, i]));
      const order = [...this.tracks].sort(evictionOrder);
      for (const t of order) {
        if (sizeOf() <= maxBytes) break;
        evicted.add(t);
        evictedIds.push(t.id);
        rowSum -= rowBytes[position.get(t)!];
        const kind = evictionClass(t);
        if (kind === 0) byKind.lost++;
        else if (kind === 1) byKind.unconfirmed++;
        else byKind.tracked++;
      }
      if (evicted.size > 0) this.tracks = this.tracks.filter((t) => !evicted.has(t));
    }
    const snapshot = this.encode(this.tracks);
    const bytes = Buffer.byteLength(snapshot);
    return { snapshot, bytes, fullBytes, evicted: byKind, evictedIds, fits: bytes <= maxBytes };
  }

  /** Rebuilds a tracker from {@link ByteTracker.serialize} output, of this version or version 1 (JSON, rounded to float32 here). */
  static restore(snapshot: string, options: Partial<TrackerOptions> = {}): ByteTracker {
    const snap = readTrackerSnapshot(snapshot);
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
    for (const t of tracker.tracks) quantise(t);
    return tracker;
  }
}
