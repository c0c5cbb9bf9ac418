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
import { parseSourceKey } from '../ingest/segment-keys.ts';
import { decodeRecords, encodeRecords, type PackedFrame } from './record-formats.ts';
import type { FrameResultItem } from './results.ts';

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
