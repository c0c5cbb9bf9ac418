/**
 * The sequencer's serialisable state, the types of what it takes and emits, and its
 * constants (core/ordering/sequencer.ts has the rule and the decisions; this file only the shapes,
 * so each stays readable). Everything here is re-exported by core/ordering/sequencer.ts.
 */
import type { GapRange } from './gap-ranges.ts';

export type { GapRange } from './gap-ranges.ts';

/** A frame known to exist in S3 but not yet processed. */
export interface FrameRef {
  readonly frame: number;
  readonly bucket: string;
  readonly key: string;
  readonly sizeBytes: number;
}

/** A frame known to exist, with when it became known (notification or listing), epoch ms. */
export interface KnownFrame extends FrameRef {
  readonly seenAtMs: number;
}

/** A late frame waiting to be processed, and whether its record replaces a gap. */
export interface LateFrame extends FrameRef {
  readonly replacesGap: boolean;
}

/** Serialisable sequencer state; lives inside the video checkpoint. */
export interface SequencerState {
  /** Frame number the video starts at; null while the automatic start is undecided. */
  firstFrame: number | null;
  /** When the first frame of the video became known (automatic start), epoch ms. */
  firstSeenAtMs: number | null;
  /** Next frame the tracker expects (meaningless while `firstFrame` is null). */
  nextFrame: number;
  /** Known frames at or after `nextFrame`, ascending, no duplicates. */
  buffered: KnownFrame[];
  /** Late frames to process (below `nextFrame`), ascending, no duplicates. */
  late: LateFrame[];
  /** Last frame number, from the end-of-stream marker. */
  endFrame: number | null;
  /** When a frame of this video last became known, epoch ms. */
  lastArrivalMs: number | null;
  /** The latest S3 listing: frames `from..through` did not exist at `atMs`. */
  absent: { from: number; through: number; atMs: number } | null;
  /**
   * When the latest listing was made (rate limit), epoch ms. Before the start is decided,
   * null means the listing at first sight is still to be asked for (a failed one sets it).
   */
  listedAtMs: number | null;
  /** The frames recorded as `gap`, as ranges (core/ordering/gap-ranges.ts). */
  gaps: GapRange[];
  /**
   * A re-check of the gaps is due (null: none): gaps from `fromFrame` on are still to be
   * listed; `atMs` is when this re-check last listed (null: not yet), for the rate limit.
   */
  recheck: { fromFrame: number; atMs: number | null } | null;
}

export type OfferResult =
  | 'accepted'
  | 'duplicate'
  /** Below `nextFrame` (or the chosen start): late or a duplicate; the record decides (see {@link VideoSequencer.addLate}). */
  | 'below'
  /** Beyond the end marker; rejected unless it already has a record. */
  | 'after-end'
  /** Below an explicitly configured `firstFrameNumber`; rejected unless it already has a record. */
  | 'before-first';

export type SequencedStep =
  | { readonly type: 'frame'; readonly ref: FrameRef }
  | { readonly type: 'late'; readonly ref: LateFrame }
  /** Frame `frame` does not exist: the watermark passed it and a listing confirmed it. */
  | { readonly type: 'gap'; readonly frame: number; readonly reason: 'missing-frame' }
  | { readonly type: 'reject'; readonly ref: FrameRef; readonly reason: 'after-end-of-stream' | 'before-first-frame' };

export interface SequencerOptions {
  readonly reorderWaitMs: number;
  readonly reorderBufferFrames: number;
  /** Where every video starts; a negative value means automatic (the lowest frame that exists). */
  readonly firstFrameNumber: number;
}

/** Known frames needed near the next known frame before the frames below it count as overdue. */
export const SUPPORT_FRAMES = 2;
/** How far above the next known frame supporting frames may lie. */
export const SUPPORT_WINDOW_FRAMES = 8;
/** A video quiet for this many reorder waits, with frames outstanding, makes its missing frame overdue. */
export const QUIET_WAITS = 2;
/**
 * The same, when the only evidence is frames far ahead without support (a stray) and no
 * end marker: a pause of the uploader must not turn everything below a stray into gaps
 * (60 s at the default wait). A stray with nothing after it is still settled, not kept.
 */
export const STRAY_QUIET_WAITS = 12;
/** Least time between two listings of one video, ms. */
export const MIN_LISTING_INTERVAL_MS = 1_000;

/** A request to list the video's objects from `fromFrame` on. */
export interface ListingRequest {
  readonly fromFrame: number;
  readonly why: 'start' | 'overdue' | 'recheck';
  /** For a re-check: the listing may stop once it covers this frame. */
  readonly throughFrame?: number;
}

/** What one re-check listing must cover: recorded gaps from `fromFrame` to `toFrame`. */
export interface GapRecheck {
  readonly fromFrame: number;
  readonly toFrame: number;
  /** Gap frames in that span (a mixed range counts whole). */
  readonly frames: number;
}

/** What a listing taught the sequencer about its gaps. */
export interface ListingLesson {
  /** Listed frames recorded as gap, now queued as late steps that replace their gap. */
  readonly lateFrames: number;
  /**
   * Listed frames in a mixed gap range (core/ordering/gap-ranges.ts): maybe gaps. The caller reads
   * each one's record: `gap` → `addLate(ref, true)`, none → `addLate(ref, false)`, any
   * other → `forgetGap(frame)`.
   */
  readonly verify: readonly FrameRef[];
  /** True when no re-check is due any more (none was, or this listing finished it). */
  readonly recheckDone: boolean;
}

export function emptySequencerState(firstFrameNumber = -1): SequencerState {
  const explicit = firstFrameNumber >= 0;
  return {
    firstFrame: explicit ? firstFrameNumber : null,
    firstSeenAtMs: null,
    nextFrame: explicit ? firstFrameNumber : 0,
    buffered: [],
    late: [],
    endFrame: null,
    lastArrivalMs: null,
    absent: null,
    listedAtMs: null,
    gaps: [],
    recheck: null,
  };
}

/**
 * Fills fields a checkpoint written by an older version lacks, and unpacks the runs
 * {@link packSequencerState} wrote.
 */
export function upgradeSequencerState(s: Partial<SequencerState> & Pick<SequencerState, 'nextFrame'>): SequencerState {
  return {
    firstFrame: s.firstFrame ?? null,
    firstSeenAtMs: s.firstSeenAtMs ?? null,
    nextFrame: s.nextFrame,
    buffered: unpackRuns(s.buffered ?? []).map((b) => ({ ...b, seenAtMs: b.seenAtMs ?? 0 })),
    late: unpackRuns(s.late ?? []),
    endFrame: s.endFrame ?? null,
    lastArrivalMs: s.lastArrivalMs ?? null,
    absent: s.absent ?? null,
    listedAtMs: s.listedAtMs ?? null,
    // Checkpoints older than gap tracking: their gaps are unknown here (`affinity reconcile` finds them).
    gaps: s.gaps ?? [],
    recheck: s.recheck ?? null,
  };
}

/** A reference with only its own fields (a KnownFrame or LateFrame carries more), as the buffer stores it. */
export function plainRef(r: FrameRef): FrameRef {
  return { frame: r.frame, bucket: r.bucket, key: r.key, sizeBytes: r.sizeBytes };
}

/**
 * An entry of a packed list: `count` consecutive frames from `frame` that share every
 * other field (one segment's frames: one key, one arrival). Absent `count` is one frame.
 */
type Packed<T extends FrameRef> = T & { readonly count?: number };

/**
 * The state as a checkpoint stores it: runs of consecutive buffered or late frames that
 * share their key and the rest ({@link Packed}) become one entry. A segment's frames are
 * all buffered at once (core/ingest/segment-keys.ts), and the checkpoint lives in one
 * DynamoDB item (400 KB): a backlog of 10-s segments at 30 fps is thousands of frame
 * references, but only one entry per segment. Per-frame keys (images) pack to themselves.
 * {@link upgradeSequencerState} unpacks.
 */
export function packSequencerState(s: SequencerState): SequencerState {
  return { ...s, buffered: packRuns(s.buffered), late: packRuns(s.late) };
}

function sameRun(a: FrameRef, b: FrameRef): boolean {
  const x = a as unknown as Record<string, unknown>;
  const y = b as unknown as Record<string, unknown>;
  const fields = (o: Record<string, unknown>) => Object.keys(o).filter((k) => k !== 'frame' && k !== 'count');
  const fx = fields(x);
  return fx.length === fields(y).length && fx.every((k) => x[k] === y[k]);
}

function packRuns<T extends FrameRef>(list: readonly T[]): T[] {
  const out: Packed<T>[] = [];
  for (const e of list) {
    const last = out.at(-1);
    if (last && last.frame + (last.count ?? 1) === e.frame && sameRun(last, e)) {
      out[out.length - 1] = { ...last, count: (last.count ?? 1) + 1 };
    } else out.push(e);
  }
  return out;
}

function unpackRuns<T extends FrameRef>(list: readonly Packed<T>[]): T[] {
  if (!list.some((e) => e.count !== undefined)) return list as T[];
  const out: T[] = [];
  for (const e of list) {
    const { count, ...one } = e;
    for (let i = 0; i < (count ?? 1); i++) out.push({ ...(one as unknown as T), frame: e.frame + i });
  }
  return out;
}
