/**
 * How a packed item's records are written (issue 44): formats 1 (the JSON array of each
 * frame's fields), 2 (decision 65: boxes as each track's change, JSON) and 3 (decision 77:
 * the same integers as Rice codes in a bit stream), all keeping the same numbers to the
 * bit. Which frames make a packed item, and how readers expand it, is record-packing.ts's;
 * this module only turns a run's {@link PackedFrame}s into bytes and back. Pure.
 */
import type { Detection } from '../ports.ts';
import { BitReader, BitWriter, bestRiceParameter, riceBits, unzigzag, zigzag } from './bit-codes.ts';
import type { FrameStatus } from './results.ts';

/** One frame's own fields inside a packed item (the frame number is its position). */
export interface PackedFrame {
  readonly status: FrameStatus;
  readonly detections: readonly Detection[];
  readonly reason?: string;
  readonly detail?: string;
  readonly ptsMs?: number;
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
