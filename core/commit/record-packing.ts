/**
 * How a commit unit's frame records are stored (issue 34 part 3, decision 56): the frames
 * of one encoded segment that a unit commits in order are one *packed* item, not one item
 * per frame. A packed item sits at its first frame's sort key and covers
 * `frame .. frame + packedCount - 1`; its `packedRecords` is the JSON of each frame's own
 * fields in frame order. Everything else (a JPEG's record, a gap, a late frame that
 * replaces a gap, a segment frame alone in its unit) stays one item per frame.
 *
 * Readers never see the packed shape: the results reader expands it into the same
 * {@link FrameResultItem}s, each carrying `packed` (its item's first frame and count) so
 * that tools which delete or replay know the unit they act on. Pure.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Detection } from '../ports.ts';
import { parseSourceKey } from '../ingest/segment-keys.ts';
import { BitReader, BitWriter, bestRiceParameter, riceBits, unzigzag, zigzag } from './bit-codes.ts';
import type { FrameResultItem, FrameStatus } from './results.ts';

/** The `status` of a packed item: never a frame's status, so a `status <> ok` filter keeps it for the reader to expand. */
export const PACKED_STATUS = 'packed';

/**
 * Most bytes of a packed item's records before compression, counted as their JSON in
 * format 1 (what every later format is shorter than). DEFLATE never grows data by more than
 * a few bytes per 16 KB block, so the item stays under DynamoDB's 400 KB item limit
 * whatever the detections; typical records are stored 5-13 times smaller than that JSON
 * (format 3), so an item is a few KB and a consistent read of a frame a few read units.
 * Longer runs split.
 */
export const MAX_PACKED_RECORDS_BYTES = 240_000;

/** One frame's own fields inside a packed item (the frame number is its position). */
export interface PackedFrame {
  readonly status: FrameStatus;
  readonly detections: readonly Detection[];
  readonly reason?: string;
  readonly detail?: string;
  readonly ptsMs?: number;
}

/** A run of one segment's frame records stored as one item of the results table. */
export interface PackedRecordsItem {
  readonly videoId: string;
  /** The first frame it covers (the item's sort key). */
  readonly frame: number;
  readonly status: typeof PACKED_STATUS;
  /** Frames covered: `frame .. frame + packedCount - 1`. */
  readonly packedCount: number;
  /** {@link PackedFrame}s in frame order ({@link encodeRecords}: format 3; 2 or 1 as written before decision 77 and issue 44, or for numbers format 3 does not hold), compressed with raw DEFLATE. */
  readonly packedRecords: Uint8Array;
  readonly token: number;
  readonly worker: string;
  readonly committedAtMs: number;
  /** The segment's S3 key (every frame of the run shares it). */
  readonly key: string;
  readonly ttlEpochSeconds?: number;
}

/** An item as the results table holds it: one frame's record or a packed run. */
export type StoredResultItem = FrameResultItem | PackedRecordsItem;

export function isPacked(item: { readonly status?: unknown }): item is PackedRecordsItem {
  return item.status === PACKED_STATUS;
}

const round = (x: number, step: number) => Math.round(x / step) * step;
const r2 = (x: number) => Number(round(x, 0.01).toFixed(2));
const r4 = (x: number) => Number(round(x, 0.0001).toFixed(4));

/** A frame's own fields, as a packed item keeps them (boxes to 0.01 px, scores to 1e-4, pts to 0.01 ms). */
function frameOwnFields(r: FrameResultItem): PackedFrame {
  return {
    status: r.status,
    detections: r.detections.map((d) => ({ ...d, box: [r2(d.box[0]), r2(d.box[1]), r2(d.box[2]), r2(d.box[3])] as const, score: r4(d.score) })),
    ...(r.reason !== undefined ? { reason: r.reason } : {}),
    ...(r.detail !== undefined ? { detail: r.detail } : {}),
    ...(r.ptsMs !== undefined ? { ptsMs: r2(r.ptsMs) } : {}),
  };
}

/** Whether `next` may join the run that ends with `last`: the next frame, of the same source object, written the same way. */
function joins(last: FrameResultItem, next: FrameResultItem): boolean {
  return (
    next.frame === last.frame + 1 &&
    next.key !== undefined &&
    next.key === last.key &&
    next.token === last.token &&
    next.worker === last.worker &&
    next.committedAtMs === last.committedAtMs &&
    next.ttlEpochSeconds === last.ttlEpochSeconds
  );
}

/** A run's records as one item: `own` is each record's own fields, in frame order. */
function packedItem(run: readonly FrameResultItem[], own: readonly PackedFrame[]): PackedRecordsItem {
  const first = run[0]!;
  return {
    videoId: first.videoId,
    frame: first.frame,
    status: PACKED_STATUS,
    packedCount: run.length,
    packedRecords: new Uint8Array(deflateRawSync(encodeRecords(own))),
    token: first.token,
    worker: first.worker,
    committedAtMs: first.committedAtMs,
    key: first.key!,
    ...(first.ttlEpochSeconds !== undefined ? { ttlEpochSeconds: first.ttlEpochSeconds } : {}),
  };
}

/**
 * The records of a run as stored, before compression: format 3 (decision 77) when every
 * number fits it, else format 2 (issue 44, decision 65) when every detection has exactly
 * the four fields of a {@link Detection} and an integer track id, else format 1 (the JSON
 * array of {@link PackedFrame}s). `format` asks for an older one (the benches and tests
 * compare them). All three keep the same numbers, to the bit.
 */
export function encodeRecords(frames: readonly PackedFrame[], format: 1 | 2 | 3 = 3): Uint8Array {
  const plain = format >= 2 && frames.every((f) => f.detections.every((d) => Number.isInteger(d.trackId) && Object.keys(d).length === 4 && d.box.length === 4));
  if (!plain) return Buffer.from(JSON.stringify(frames));
  if (format === 3 && fitsFormat3(frames)) return encodeFormat3(frames);
  return Buffer.from(encodeFormat2(frames));
}

/**
 * Format 2: `{"v":2,"l":[labels],"f":[[status, ptsDelta, [trackId, label index, score, dx1, dy1, dx2, dy2, ...], reason?, detail?], ...]}`,
 * with boxes in hundredths of a pixel, each the difference from the same track's box in
 * the frame before it within the run (or absolute for the track's first box), scores in
 * ten-thousandths, and pts in hundredths of a ms as the difference from the frame before
 * (null: none). The same precision as format 1, to the bit; a moving box's corners change
 * by a few pixels a frame, so the differences compress about a third smaller than the
 * absolute numbers.
 */
function encodeFormat2(frames: readonly PackedFrame[]): string {
  const labels: string[] = [];
  const labelIndex = new Map<string, number>();
  const lastBox = new Map<number, readonly number[]>();
  let lastPts: number | undefined;
  const rows = frames.map((f) => {
    const flat: number[] = [];
    for (const d of f.detections) {
      let li = labelIndex.get(d.label);
      if (li === undefined) {
        li = labels.push(d.label) - 1;
        labelIndex.set(d.label, li);
      }
      const box = d.box.map(hundredths);
      const prev = lastBox.get(d.trackId);
      lastBox.set(d.trackId, box);
      flat.push(d.trackId, li, Math.round(d.score * 10_000), ...(prev ? box.map((x, i) => x - prev[i]!) : box));
    }
    const pts = f.ptsMs !== undefined ? hundredths(f.ptsMs) : undefined;
    const ptsField = pts === undefined ? null : lastPts === undefined ? pts : pts - lastPts;
    if (pts !== undefined) lastPts = pts;
    const row: unknown[] = [f.status, ptsField, flat];
    if (f.reason !== undefined || f.detail !== undefined) row.push(f.reason ?? null);
    if (f.detail !== undefined) row.push(f.detail);
    return row;
  });
  return JSON.stringify({ v: 2, l: labels, f: rows });
}

const hundredths = (x: number) => Math.round(x * 100);
const tenThousandths = (x: number) => Math.round(x * 10_000);

/**
 * Format 3 (decision 77): the same integers as format 2 (boxes in hundredths of a pixel,
 * scores in ten-thousandths, pts in hundredths of a ms), written as Rice codes in a bit
 * stream instead of JSON text. Layout, before DEFLATE:
 *
 *   byte 3 | h, the header's length (a Rice code, k = 7) | h bytes of JSON header | 10 Rice parameters of 5 bits | values
 *
 * The header holds the strings: `{"n": frames, "l": [labels], "s": [statuses], "x": [[frame index, reason | null, detail?], ...]}`
 * (`x` only when a frame has a reason or a detail). The values follow in reading order:
 * per frame its status index, pts, whether its tracks are the frame before's and if not
 * its detection count; per detection its track and label (unless the same), score and
 * box. Each value is an unsigned number (zigzag for signed ones) in the Rice code of its
 * column ({@link Column}), whose parameter the encoder picks for the fewest bits.
 * What each column holds is a residual against what the run so far predicts:
 * - pts: 0 none, else 1 + the difference from the previous pts plus the previous step;
 * - same: 0 when the frame's tracks are the frame before's, in the same order and with
 *   the same labels (most frames of a steady scene), and then its count, tracks and
 *   labels are not written; else 1;
 * - count: the difference from the frame before's;
 * - track: 2 × (its place in the frame before's list − its own place), or for a track
 *   not in the frame before 1 + 2 × (its id − (the run's largest id so far + 1));
 * - label: 0 the same as the track's label before in the run, else 1 + its index;
 * - score and box: the difference from the same track's before in the run (a track's
 *   first score and box, in their own columns, as they are).
 * Numbers above 2^48 (a box corner past 2.8e12 px, a track id past 2.8e14) do not fit: such
 * a run is stored in format 2, so every difference stays a safe integer.
 */
const FORMAT3 = 3;
const FORMAT3_LIMIT = 2 ** 48;
/** Format 3's value columns, in the order of their Rice parameters. */
const Column = { status: 0, pts: 1, same: 2, count: 3, track: 4, label: 5, firstScore: 6, score: 7, firstBox: 8, box: 9 } as const;
const COLUMNS = 10;
const RICE_PARAMETER_BITS = 5;

function fitsFormat3(frames: readonly PackedFrame[]): boolean {
  const fits = (x: number) => Number.isFinite(x) && Math.abs(x) <= FORMAT3_LIMIT;
  return frames.every(
    (f) =>
      typeof f.status === 'string' &&
      (f.ptsMs === undefined || fits(hundredths(f.ptsMs))) &&
      (f.reason === undefined || typeof f.reason === 'string') &&
      (f.detail === undefined || typeof f.detail === 'string') &&
      f.detections.every((d) => typeof d.label === 'string' && fits(d.trackId) && fits(tenThousandths(d.score)) && d.box.every((x) => fits(hundredths(x)))),
  );
}

/** What a run's records predict of the next ones (the encoder and decoder keep the same). */
class RunState {
  readonly labels: string[] = [];
  readonly statuses: string[] = [];
  lastPts: number | undefined;
  ptsStep = 0;
  lastCount = 0;
  lastIds: number[] = [];
  nextId = 0;
  readonly tracks = new Map<number, { label: number; score: number; box: number[] }>();

  predictedPts(): number {
    return (this.lastPts ?? 0) + this.ptsStep;
  }

  seePts(pts: number): void {
    this.ptsStep = this.lastPts === undefined ? 0 : pts - this.lastPts;
    this.lastPts = pts;
  }

  seeFrame(ids: number[]): void {
    this.lastCount = ids.length;
    this.lastIds = ids;
    for (const id of ids) if (id + 1 > this.nextId) this.nextId = id + 1;
  }
}

function encodeFormat3(frames: readonly PackedFrame[]): Uint8Array {
  const s = new RunState();
  const labelIndex = new Map<string, number>();
  const statusIndex = new Map<string, number>();
  const indexOf = (list: string[], index: Map<string, number>, x: string) => {
    let i = index.get(x);
    if (i === undefined) {
      i = list.push(x) - 1;
      index.set(x, i);
    }
    return i;
  };
  const extras: unknown[][] = [];
  // Every value in reading order with its column; the Rice parameters are chosen once all are known.
  const values: number[] = [];
  const columns: number[] = [];
  const put = (column: number, z: number) => {
    values.push(z);
    columns.push(column);
  };
  frames.forEach((f, fi) => {
    put(Column.status, indexOf(s.statuses, statusIndex, f.status));
    if (f.ptsMs === undefined) put(Column.pts, 0);
    else {
      const pts = hundredths(f.ptsMs);
      put(Column.pts, 1 + zigzag(pts - s.predictedPts()));
      s.seePts(pts);
    }
    const labels = f.detections.map((d) => indexOf(s.labels, labelIndex, d.label));
    const same = f.detections.length === s.lastCount && f.detections.every((d, i) => d.trackId === s.lastIds[i] && s.tracks.get(d.trackId)?.label === labels[i]);
    put(Column.same, same ? 0 : 1);
    if (!same) put(Column.count, zigzag(f.detections.length - s.lastCount));
    const ids: number[] = [];
    f.detections.forEach((d, i) => {
      const label = labels[i]!;
      const track = s.tracks.get(d.trackId);
      if (!same) {
        const before = s.lastIds.indexOf(d.trackId);
        put(Column.track, before >= 0 ? 2 * zigzag(before - i) : 1 + 2 * zigzag(d.trackId - s.nextId));
        if (before < 0 && d.trackId + 1 > s.nextId) s.nextId = d.trackId + 1;
        put(Column.label, track?.label === label ? 0 : 1 + label);
      }
      ids.push(d.trackId);
      const score = tenThousandths(d.score);
      const box = d.box.map(hundredths);
      if (track) {
        put(Column.score, zigzag(score - track.score));
        box.forEach((x, j) => put(Column.box, zigzag(x - track.box[j]!)));
      } else {
        put(Column.firstScore, zigzag(score));
        for (const x of box) put(Column.firstBox, zigzag(x));
      }
      s.tracks.set(d.trackId, { label, score, box });
    });
    s.seeFrame(ids);
    if (f.reason !== undefined || f.detail !== undefined) extras.push([fi, f.reason ?? null, ...(f.detail !== undefined ? [f.detail] : [])]);
  });
  const header = Buffer.from(JSON.stringify({ n: frames.length, l: s.labels, s: s.statuses, ...(extras.length > 0 ? { x: extras } : {}) }));
  const byColumn: number[][] = Array.from({ length: COLUMNS }, () => []);
  values.forEach((z, i) => byColumn[columns[i]!]!.push(z));
  const k = byColumn.map(bestRiceParameter);
  const w = new BitWriter();
  for (const p of k) w.bits(p, RICE_PARAMETER_BITS);
  values.forEach((z, i) => w.rice(z, k[columns[i]!]!));
  const lead = new BitWriter();
  lead.bits(FORMAT3, 8);
  lead.rice(header.byteLength, 7);
  return Buffer.concat([lead.finish(), header, w.finish()]);
}

function decodeFormat3(bytes: Uint8Array): PackedFrame[] {
  const what = 'packed records (format 3)';
  const lead = new BitReader(bytes, what);
  lead.bits(8);
  const headerBytes = lead.rice(7);
  const headerStart = Math.ceil(riceBits(headerBytes, 7) / 8) + 1;
  if (headerStart + headerBytes > bytes.byteLength) throw new Error(`${what}: truncated`);
  const header = JSON.parse(Buffer.from(bytes.subarray(headerStart, headerStart + headerBytes)).toString('utf8')) as { n?: unknown; l?: unknown; s?: unknown; x?: unknown };
  if (!Number.isSafeInteger(header.n) || !Array.isArray(header.l) || !Array.isArray(header.s) || (header.x !== undefined && !Array.isArray(header.x))) throw new Error(`${what}: a header without its frame count, labels or statuses`);
  const n = header.n as number;
  const labels = header.l as string[];
  const statuses = header.s as string[];
  const extras = new Map<number, [string | null, string | undefined]>();
  for (const x of (header.x ?? []) as unknown[][]) {
    if (!Array.isArray(x) || !Number.isSafeInteger(x[0]) || (x[0] as number) < 0 || (x[0] as number) >= n) throw new Error(`${what}: a reason for a frame outside the run`);
    extras.set(x[0] as number, [x[1] as string | null, x[2] as string | undefined]);
  }
  const r = new BitReader(bytes.subarray(headerStart + headerBytes), what);
  const k = Array.from({ length: COLUMNS }, () => r.bits(RICE_PARAMETER_BITS));
  const read = (column: number) => r.rice(k[column]!);
  const s = new RunState();
  const out: PackedFrame[] = [];
  for (let fi = 0; fi < n; fi++) {
    const status = statuses[read(Column.status)];
    if (status === undefined) throw new Error(`${what}: a status index past the ${statuses.length} statuses`);
    const ptsCode = read(Column.pts);
    let ptsMs: number | undefined;
    if (ptsCode > 0) {
      const pts = s.predictedPts() + unzigzag(ptsCode - 1);
      s.seePts(pts);
      ptsMs = pts / 100;
    }
    const same = read(Column.same);
    if (same > 1) throw new Error(`${what}: a frame marked ${same}`);
    const count = same === 0 ? s.lastCount : s.lastCount + unzigzag(read(Column.count));
    if (count < 0) throw new Error(`${what}: a frame with ${count} detections`);
    const ids: number[] = [];
    const detections: Detection[] = [];
    for (let i = 0; i < count; i++) {
      let trackId: number;
      let label: number | undefined;
      let labelCode = 0;
      if (same === 0) {
        trackId = s.lastIds[i]!;
        label = s.tracks.get(trackId)?.label;
      } else {
        const t = read(Column.track);
        if (t % 2 === 0) {
          const id = s.lastIds[i + unzigzag(t / 2)];
          if (id === undefined) throw new Error(`${what}: a track reference outside the frame before`);
          trackId = id;
        } else {
          trackId = s.nextId + unzigzag((t - 1) / 2);
          if (trackId + 1 > s.nextId) s.nextId = trackId + 1;
        }
        labelCode = read(Column.label);
        label = labelCode === 0 ? s.tracks.get(trackId)?.label : labelCode - 1;
      }
      ids.push(trackId);
      const track = s.tracks.get(trackId);
      if (label === undefined || labels[label] === undefined) throw new Error(`${what}: label ${labelCode === 0 ? 'of a new track' : `index ${label}`} of ${labels.length}`);
      let score: number;
      let box: number[];
      if (track) {
        score = track.score + unzigzag(read(Column.score));
        box = track.box.map((x) => x + unzigzag(read(Column.box)));
      } else {
        score = unzigzag(read(Column.firstScore));
        box = [0, 1, 2, 3].map(() => unzigzag(read(Column.firstBox)));
      }
      s.tracks.set(trackId, { label, score, box });
      detections.push({ trackId, label: labels[label]!, score: score / 10_000, box: [box[0]! / 100, box[1]! / 100, box[2]! / 100, box[3]! / 100] });
    }
    s.seeFrame(ids);
    const [reason, detail] = extras.get(fi) ?? [];
    out.push({
      status: status as FrameStatus,
      detections,
      ...(reason !== undefined && reason !== null ? { reason } : {}),
      ...(detail !== undefined ? { detail } : {}),
      ...(ptsMs !== undefined ? { ptsMs } : {}),
    });
  }
  if (!r.atEnd()) throw new Error(`${what}: bytes left after the last frame`);
  return out;
}

/**
 * The frames of a run, from any format of {@link encodeRecords} (what `inflateRawSync`
 * gives; a string is read as JSON, formats 1 and 2); throws on anything else.
 */
export function decodeRecords(data: string | Uint8Array): PackedFrame[] {
  if (typeof data !== 'string' && data[0] === FORMAT3) return decodeFormat3(data);
  const json = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
  const parsed = JSON.parse(json) as unknown;
  if (Array.isArray(parsed)) return parsed as PackedFrame[];
  const doc = parsed as { v?: unknown; l?: unknown; f?: unknown };
  if (doc?.v !== 2 || !Array.isArray(doc.l) || !Array.isArray(doc.f)) throw new Error(`packed records in an unknown format (${JSON.stringify(doc?.v ?? null)})`);
  const labels = doc.l as string[];
  const lastBox = new Map<number, number[]>();
  let lastPts: number | undefined;
  return (doc.f as unknown[][]).map((row) => {
    const [status, ptsField, flat, reason, detail] = row as [FrameStatus, number | null, number[], string | null | undefined, string | undefined];
    if (!Array.isArray(flat) || flat.length % 7 !== 0) throw new Error('packed records (format 2): a frame\'s detections are not groups of 7 numbers');
    const detections: Detection[] = [];
    for (let i = 0; i < flat.length; i += 7) {
      const trackId = flat[i]!;
      const label = labels[flat[i + 1]!];
      if (label === undefined) throw new Error(`packed records (format 2): label index ${flat[i + 1]} of ${labels.length}`);
      const prev = lastBox.get(trackId);
      const box = [0, 1, 2, 3].map((j) => flat[i + 3 + j]! + (prev ? prev[j]! : 0));
      lastBox.set(trackId, box);
      detections.push({ trackId, label, score: flat[i + 2]! / 10_000, box: [box[0]! / 100, box[1]! / 100, box[2]! / 100, box[3]! / 100] });
    }
    let ptsMs: number | undefined;
    if (ptsField !== null && ptsField !== undefined) {
      const pts = lastPts === undefined ? ptsField : lastPts + ptsField;
      lastPts = pts;
      ptsMs = pts / 100;
    }
    return {
      status,
      detections,
      ...(reason !== undefined && reason !== null ? { reason } : {}),
      ...(detail !== undefined ? { detail } : {}),
      ...(ptsMs !== undefined ? { ptsMs } : {}),
    };
  });
}

/** A stored item's size for the transaction's 4 MB cap: its JSON, with the binary records counted as their bytes. */
export function storedItemBytes(item: StoredResultItem): number {
  if (!isPacked(item)) return Buffer.byteLength(JSON.stringify(item));
  const { packedRecords, ...rest } = item;
  return Buffer.byteLength(JSON.stringify(rest)) + packedRecords.byteLength;
}

/**
 * The items a unit's results are written as, in order. Consecutive frames of one source
 * object (so of one segment: a JPEG covers one frame) become one packed item, split where
 * its records' JSON would pass `maxBytes`; a result that may replace a gap record
 * (`replacesGap`) keeps its own item, since its write is conditional on that frame's
 * record alone; gaps have no source object and stay single. A run of one stays a plain
 * record: packing it saves nothing.
 */
export function storedItems(results: readonly FrameResultItem[], replacesGap: readonly number[] = [], maxBytes = MAX_PACKED_RECORDS_BYTES): StoredResultItem[] {
  const replaceable = new Set(replacesGap);
  const out: StoredResultItem[] = [];
  let run: FrameResultItem[] = [];
  let own: PackedFrame[] = [];
  let runBytes = 0;
  const flush = () => {
    if (run.length === 1) out.push(run[0]!);
    else if (run.length > 1) out.push(packedItem(run, own));
    run = [];
    own = [];
    runBytes = 0;
  };
  for (const r of results) {
    if (replaceable.has(r.frame) || r.key === undefined) {
      flush();
      out.push(r);
      continue;
    }
    // JSON of the run in format 1 (brackets, commas, and each frame's own fields): the cap
    // holds whichever format is stored, since format 2 is shorter (no field names, one
    // label table, a few more digits at most for a track's first box), and format 3 shorter
    // still (a number at most about twice its binary length in bits, where JSON spends 8
    // bits a decimal digit, 2.4 a binary one; record-packing.test.ts checks it on random runs).
    const fields = frameOwnFields(r);
    const bytes = Buffer.byteLength(JSON.stringify(fields)) + 1;
    if (run.length > 0 && (!joins(run[run.length - 1]!, r) || runBytes + bytes + 1 > maxBytes)) flush();
    run.push(r);
    own.push(fields);
    runBytes += bytes;
  }
  flush();
  return out;
}

/**
 * The frame records a stored item holds, in frame order, clipped to `from..to` when given.
 * A packed item's records carry `packed` (its first frame and count). Throws on a packed
 * item whose records do not parse or disagree with its count: a corrupt item is not
 * silently read as fewer records.
 */
export function expandStored(item: StoredResultItem, from = Number.NEGATIVE_INFINITY, to = Number.POSITIVE_INFINITY): FrameResultItem[] {
  if (!isPacked(item)) return item.frame >= from && item.frame <= to ? [item] : [];
  let frames: PackedFrame[];
  try {
    frames = decodeRecords(inflateRawSync(item.packedRecords));
  } catch (e) {
    throw new Error(`packed records of ${item.videoId} at frame ${item.frame} do not read (${e instanceof Error ? e.message : String(e)}): the item is corrupt; its frames are in its segment ${item.key}`);
  }
  if (!Array.isArray(frames) || frames.length !== item.packedCount) throw new Error(`packed records of ${item.videoId} at frame ${item.frame}: ${Array.isArray(frames) ? frames.length : 'no'} records for a count of ${item.packedCount}`);
  const packed = { first: item.frame, count: item.packedCount };
  const out: FrameResultItem[] = [];
  for (let i = Math.max(0, from - item.frame); i < frames.length && item.frame + i <= to; i++) {
    out.push({
      videoId: item.videoId,
      frame: item.frame + i,
      ...frames[i]!,
      token: item.token,
      worker: item.worker,
      committedAtMs: item.committedAtMs,
      key: item.key,
      ...(item.ttlEpochSeconds !== undefined ? { ttlEpochSeconds: item.ttlEpochSeconds } : {}),
      packed,
    });
  }
  return out;
}


/**
 * The frames of a unit whose record must be checked for before it is written: its
 * create-only records of encoded segments. A packed item's condition covers only its own
 * key, so a record already standing for a frame inside the run (or a run standing over
 * one of its frames) would not fail it: the committer reads these frames' records first
 * and treats any it finds as a conflict, as a per-frame condition would have (decision 56).
 * Such records exist only in rare paths: frames recorded `after-end-of-stream` before the
 * end marker moved later, and the race of an operator's replay.
 *
 * A gap is checked too: its own condition covers only its own key, and a packed run
 * stored over it (a segment's tail recorded past an end marker that moved later, whose
 * segment starts below the listing that declared the gap) would get a second record
 * beside it (issue 40). Gaps are rare, so the read costs little.
 */
export function framesToCheck(results: readonly FrameResultItem[], replacesGap: readonly number[] = []): number[] {
  const replaceable = new Set(replacesGap);
  // A segment's frames share its key: each key is parsed once.
  const isSegment = new Map<string, boolean>();
  const out: number[] = [];
  for (const r of results) {
    if (replaceable.has(r.frame)) continue;
    if (r.status === 'gap') {
      out.push(r.frame);
      continue;
    }
    if (r.key === undefined) continue;
    let segment = isSegment.get(r.key);
    if (segment === undefined) {
      const parsed = parseSourceKey(r.key);
      segment = parsed.kind === 'source' && parsed.container !== 'image';
      isSegment.set(r.key, segment);
    }
    if (segment) out.push(r.frame);
  }
  return out;
}
