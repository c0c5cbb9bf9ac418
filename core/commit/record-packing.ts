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
import type { FrameResultItem, FrameStatus } from './results.ts';

/** The `status` of a packed item: never a frame's status, so a `status <> ok` filter keeps it for the reader to expand. */
export const PACKED_STATUS = 'packed';

/**
 * Most bytes of a packed item's records before compression (their JSON). DEFLATE never
 * grows data by more than a few bytes per 16 KB block, so the item stays under DynamoDB's
 * 400 KB item limit whatever the detections; typical records compress 3-9 times, so an
 * item is a few KB and a consistent read of a frame a few read units. Longer runs split.
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
  /** {@link PackedFrame}s in frame order ({@link encodeRecords}: format 2, or 1 as written before issue 44), compressed with raw DEFLATE. */
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
 * The records of a run as stored (issue 44), before compression. Format 2, when every
 * detection has exactly the four fields of a {@link Detection} and an integer track id:
 * `{"v":2,"l":[labels],"f":[[status, ptsDelta, [trackId, label index, score, dx1, dy1, dx2, dy2, ...], reason?, detail?], ...]}`,
 * with boxes in hundredths of a pixel, each the difference from the same track's box in
 * the frame before it within the run (or absolute for the track's first box), scores in
 * ten-thousandths, and pts in hundredths of a ms as the difference from the frame before
 * (null: none). The same precision as format 1, to the bit; a moving box's corners change
 * by a few pixels a frame, so the differences compress about a third smaller than the
 * absolute numbers. Anything else is format 1: the JSON array of {@link PackedFrame}s.
 */
export function encodeRecords(frames: readonly PackedFrame[]): string {
  const plain = frames.every((f) => f.detections.every((d) => Number.isInteger(d.trackId) && Object.keys(d).length === 4 && d.box.length === 4));
  if (!plain) return JSON.stringify(frames);
  const labels: string[] = [];
  const labelIndex = new Map<string, number>();
  const lastBox = new Map<number, readonly number[]>();
  let lastPts: number | undefined;
  const hundredths = (x: number) => Math.round(x * 100);
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

/** The frames of a run, from either format of {@link encodeRecords}; throws on anything else. */
export function decodeRecords(json: string): PackedFrame[] {
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
    // label table, a few more digits at most for a track's first box).
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
  const frames = decodeRecords(inflateRawSync(item.packedRecords).toString('utf8'));
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
