/**
 * A video's durable state: everything a new owner needs to continue exactly where
 * the last commit left off. Stored inside the video's lease item and written in the
 * same transaction as the results it covers.
 */
import { randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { emptySequencerState, upgradeSequencerState, type SequencerState } from '../ordering/sequencer.ts';
import type { VideoSummaryItem } from './results.ts';
import type { AnalyticsState } from '../analytics/rule-engine.ts';
import type { SourceWatch } from '../ingest/source-watch.ts';
import { binarySnapshot, binarySnapshotBytes } from './binary-snapshot.ts';
import { CHECKPOINT_DICTIONARIES, STORED_CHECKPOINT_DICTIONARY } from './checkpoint-dictionary.ts';
import { rulesRef } from './rules-ref.ts';
import { packAnalytics, unpackAnalytics } from './stored-analytics.ts';
import type { RulesDocument } from '../analytics/rules.ts';

export interface OwnerRecord {
  readonly worker: string;
  readonly token: number;
  readonly sinceMs: number;
  readonly fromFrame?: number;
}

export interface VideoCheckpoint {
  /** Grows by one on every commit; commits are conditional on it (optimistic concurrency). */
  readonly seq: number;
  /**
   * Unique per write of the checkpoint ({@link newCommitId}): every commit, adoption and
   * reset writes a fresh one. Whether a commit landed is decided by finding its own id in
   * the stored checkpoint, never by comparing `seq` (a counter can match by chance after a
   * rollback: an ABA). Checkpoints written before commit ids existed get
   * {@link legacyCommitId} when they are read ({@link upgradeCheckpoint}).
   */
  readonly commitId: string;
  readonly sequencer: SequencerState;
  /** Opaque FrameProcessor snapshot (tracker state). */
  readonly processor?: string;
  readonly framesOk: number;
  readonly framesLate: number;
  readonly framesFailed: number;
  readonly framesGap: number;
  readonly firstFrame?: number;
  readonly lastFrame?: number;
  readonly complete: boolean;
  /** Most recent owners, oldest first (bounded). */
  readonly owners: readonly OwnerRecord[];
  readonly ownerChanges: number;
  /**
   * Crash-loop evidence (decision 28), absent on the normal path: every commit of frames
   * clears it, every adoption counts in it. So `adoptions` is the number of adoptions since
   * the video last made progress, and `trying` the frame a suspect video was running alone
   * (written just before) with `tries` the adoptions since: a process died running it.
   */
  readonly stall?: StallEvidence;
  /** A live video's source watch (core/ingest/source-watch.ts): absent for videos of images. */
  readonly source?: SourceWatch;
  /**
   * The video's rule state (issue 22, decision 35): the rules version in effect and its
   * rules, each live track's side of each line, zone memberships with entry frames, dwell
   * flags and the totals per rule and class. Absent while the video never had rules.
   * Committed with the frames that changed it, so a successor continues it exactly.
   */
  readonly analytics?: AnalyticsState;
  /**
   * An operator's replay in progress (`affinity replay --from`, decision 46): the video was
   * rewound to its first frame with a fresh tracker and fresh rule state, and frames in
   * order below `silentBelow` are re-run only to rebuild that state. Their records and
   * events exist already and are not written again; from `silentBelow` on, frames are
   * recorded as usual, with the track ids, event ids and totals of an uninterrupted run.
   */
  readonly replay?: {
    readonly silentBelow: number;
    /**
     * The token the replay fenced: its records from `silentBelow` on with this token or an
     * older one are being deleted (absent in checkpoints written before it was kept).
     */
    readonly fencedToken?: number;
  };
}

/**
 * The checkpoint attribute as the lease item stores it (issue 44, decision 76): `commitId`
 * in the clear, since the commit's condition reads `checkpoint.commitId` and an outcome is
 * decided from it (commit-outcome.ts; the seq is the item's `ckSeq`), and everything else
 * as the DEFLATE of its JSON in one binary attribute, `d`, as packed result records are
 * (record-packing.ts). Every commit rewrites the checkpoint, in a transaction (2 write
 * units per started KB), so every byte of it is paid for at every commit:
 * - `d`'s first byte names the preset dictionary the raw DEFLATE after it was made with
 *   (checkpoint-dictionary.ts): a checkpoint is too short for DEFLATE to learn its own keys;
 * - `p` holds a binary processor snapshot (the tracker's, binary-snapshot.ts) as raw
 *   bytes, outside the DEFLATE stream: floats do not compress, and as base64 inside the
 *   JSON they would cost a third more;
 * - the analytics state's rules document is replaced by `rulesRef`, a reference to the
 *   document stored out of line (rules-ref.ts): the store writes it with the first
 *   checkpoint that refers to it, and resolves it when it reads one;
 * - the rest of the analytics state is packed into arrays (stored-analytics.ts).
 * Checkpoints written before are read as they were stored: a plain map (before issue 44),
 * or `commitId`, `seq` and `z`, the raw DEFLATE of all the JSON with no dictionary, the
 * tracker snapshot and the rules inside (issue 44's first form).
 */
export interface StoredCheckpoint {
  readonly commitId: string;
  /**
   * The dictionary's number ({@link CHECKPOINT_DICTIONARIES}), one byte, then the raw
   * DEFLATE of the JSON of the checkpoint's other fields (less `seq`, less `processor` when
   * `p` holds it, the analytics packed with a reference to their rules).
   */
  readonly d: Uint8Array;
  /** The processor snapshot's bytes, when it is binary. */
  readonly p?: Uint8Array;
}

const storedShapes = new WeakMap<VideoCheckpoint, StoredCheckpoint>();

/**
 * A checkpoint as the lease item stores it (see {@link StoredCheckpoint}), compressed once
 * per checkpoint object (a unit may be sent more than once; checkpoints are immutable).
 */
export function storedCheckpoint(ck: VideoCheckpoint): StoredCheckpoint {
  let stored = storedShapes.get(ck);
  if (!stored) {
    const { commitId, seq: _inCkSeq, ...rest } = ck;
    const p = rest.processor === undefined ? undefined : binarySnapshotBytes(rest.processor);
    const { processor: _binary, ...others } = rest;
    const content: Omit<VideoCheckpoint, 'commitId' | 'seq'> = p ? others : rest;
    let json: string;
    if (rest.analytics) {
      const { rules, ...analytics } = rest.analytics;
      json = JSON.stringify({ ...content, analytics: { ...packAnalytics(analytics), ...(rules ? { rulesRef: rulesRef(rules).ref } : {}) } });
    } else json = JSON.stringify(content);
    const deflated = deflateRawSync(json, { dictionary: CHECKPOINT_DICTIONARIES.get(STORED_CHECKPOINT_DICTIONARY)! });
    const d = new Uint8Array(1 + deflated.byteLength);
    d[0] = STORED_CHECKPOINT_DICTIONARY;
    d.set(deflated, 1);
    stored = { commitId, d, ...(p ? { p } : {}) };
    storedShapes.set(ck, stored);
  }
  return stored;
}

/**
 * The checkpoint a lease item's `checkpoint` attribute holds, compressed ({@link StoredCheckpoint})
 * or as a plain map (written before issue 44), for {@link upgradeCheckpoint}; undefined
 * when there is none. Throws, naming the video, on a compressed checkpoint that does not
 * inflate or parse: a corrupt checkpoint is never read as a fresh one (the successor would
 * restart the video's tracks and counts).
 */
export function readStoredCheckpoint(stored: unknown, videoId: string): ReadCheckpoint | undefined {
  if (stored === undefined || stored === null) return undefined;
  const s = stored as { d?: unknown; z?: unknown; p?: unknown; commitId?: unknown; seq?: unknown };
  if (!(s.d instanceof Uint8Array) && !(s.z instanceof Uint8Array)) return stored as Omit<VideoCheckpoint, 'commitId'>;
  const fix = `if point-in-time recovery is on (the stack's pointInTimeRecovery setting, on by default) restore the leases table to a time before the corruption, otherwise from an on-demand backup if you took one; or delete the item video#${videoId} (its tracks and counts then restart)`;
  let deflated: Uint8Array;
  let dictionary: Buffer | undefined;
  if (s.d instanceof Uint8Array) {
    if (s.d.byteLength === 0) throw new Error(`checkpoint of video ${videoId} is corrupt (its compressed state is empty); ${fix}`);
    dictionary = CHECKPOINT_DICTIONARIES.get(s.d[0]!);
    if (!dictionary) throw new Error(`checkpoint of video ${videoId} names compression dictionary ${s.d[0]}, which this version does not have: it was written by a newer version; run that version (or newer) of the worker`);
    deflated = s.d.subarray(1);
  } else deflated = s.z as Uint8Array;
  if (s.p !== undefined && !(s.p instanceof Uint8Array)) throw new Error(`checkpoint of video ${videoId} is corrupt (its processor snapshot is not binary); ${fix}`);
  let rest: Omit<VideoCheckpoint, 'commitId' | 'seq'>;
  try {
    rest = JSON.parse(inflateRawSync(deflated, dictionary ? { dictionary } : {}).toString('utf8')) as typeof rest;
  } catch (e) {
    throw new Error(`checkpoint of video ${videoId} is corrupt (its compressed state does not inflate to JSON: ${e instanceof Error ? e.message : String(e)}); ${fix}`);
  }
  if (s.p instanceof Uint8Array) rest = { ...rest, processor: binarySnapshot(s.p) };
  let ref: string | undefined;
  if (rest.analytics) {
    const { rulesRef: r, ...analytics } = rest.analytics as AnalyticsState & { rulesRef?: unknown };
    if (r !== undefined && (typeof r !== 'string' || r.length === 0)) throw new Error(`checkpoint of video ${videoId} is corrupt (its rules reference is not a string); ${fix}`);
    ref = r;
    try {
      rest = { ...rest, analytics: unpackAnalytics(analytics as unknown as Record<string, unknown>) };
    } catch (e) {
      throw new Error(`checkpoint of video ${videoId} is corrupt (${e instanceof Error ? e.message : String(e)}); ${fix}`);
    }
  }
  // `seq` is the item's ckSeq (the caller's, {@link upgradeCheckpoint}); only issue 44's first form stored it here too.
  return { ...rest, seq: Number(s.seq ?? 0), ...(typeof s.commitId === 'string' ? { commitId: s.commitId } : {}), ...(ref !== undefined ? { rulesRef: ref } : {}) };
}

/**
 * A checkpoint as read from its stored form, for {@link upgradeCheckpoint}: `rulesRef`
 * when its rules document is stored out of line and still to be read
 * ({@link withResolvedRules}); its analytics then carry no rules yet.
 */
export type ReadCheckpoint = Omit<VideoCheckpoint, 'commitId'> & { readonly commitId?: string; readonly rulesRef?: string };

/** The checkpoint with the rules document its `rulesRef` names back in its analytics. */
export function withResolvedRules(ck: ReadCheckpoint, rules: RulesDocument): ReadCheckpoint {
  const { rulesRef: _resolved, ...rest } = ck;
  return { ...rest, ...(rest.analytics ? { analytics: { ...rest.analytics, rules } } : {}) };
}

/** The out-of-line rules document a stored checkpoint refers to (see {@link StoredCheckpoint}), or undefined. */
export function checkpointRules(ck: VideoCheckpoint): { readonly ref: string; readonly json: string; readonly rules: RulesDocument } | undefined {
  const rules = ck.analytics?.rules;
  return rules ? { ...rulesRef(rules), rules } : undefined;
}

/** See {@link VideoCheckpoint.stall}. */
export interface StallEvidence {
  /** Adoptions since the video's last commit of frames. */
  readonly adoptions: number;
  /** The frame a suspect video committed it was about to run alone (a marker). */
  readonly trying?: number;
  /**
   * Deaths of processes that were running `trying` alone: adoptions from the tenure that
   * wrote the marker. An owner that died before it wrote its own marker never ran the frame
   * (its adoption's answer was lost, or it was killed first): its death is not counted.
   */
  readonly tries?: number;
  /**
   * The fencing token of the tenure that wrote the `trying` marker. Absent in markers
   * written before it was kept: then every adoption counts, as it did.
   */
  readonly tryingToken?: number;
}

export const MAX_OWNER_HISTORY = 50;

/**
 * A fresh commit id: 96 random bits, base64url (16 characters, where a UUID takes 36), so
 * two writes of a video's checkpoint never share one (unlike a counter): a billion writes
 * of one video collide with a chance under 1e-11. Every commit rewrites it in the clear,
 * so its length is paid at every commit (issue 44).
 */
export function newCommitId(): string {
  return randomBytes(12).toString('base64url');
}

/**
 * The id a checkpoint written before commit ids existed is read with: derived from its
 * seq, so every reader of the same stored checkpoint derives the same id. Only the first
 * commit after an upgrade can see one; it writes a fresh id.
 */
export function legacyCommitId(seq: number): string {
  return `legacy-seq-${seq}`;
}

export function emptyCheckpoint(firstFrameNumber = -1): VideoCheckpoint {
  return {
    seq: 0,
    commitId: legacyCommitId(0),
    sequencer: emptySequencerState(firstFrameNumber),
    framesOk: 0,
    framesLate: 0,
    framesFailed: 0,
    framesGap: 0,
    complete: false,
    owners: [],
    ownerChanges: 0,
  };
}

/**
 * Fills fields a checkpoint written by an older version lacks; `storedSeq` is the item's
 * `ckSeq` when the caller has it (it wins over the checkpoint's own seq).
 */
export function upgradeCheckpoint(ck: Omit<VideoCheckpoint, 'commitId'> & { readonly commitId?: string; readonly rulesRef?: string }, storedSeq?: number): VideoCheckpoint {
  if (ck.rulesRef !== undefined) throw new Error(`checkpoint's rules document ${ck.rulesRef} was not read (a bug: the store resolves it first)`);
  const seq = storedSeq ?? ck.seq ?? 0;
  return {
    ...ck,
    seq,
    commitId: typeof ck.commitId === 'string' && ck.commitId.length > 0 ? ck.commitId : legacyCommitId(seq),
    framesLate: ck.framesLate ?? 0,
    sequencer: upgradeSequencerState(ck.sequencer),
  };
}

/**
 * The checkpoint after a change of owner. The adoption is also the crash-loop breaker's
 * counter (decision 28): it costs no extra write, since the adoption writes the checkpoint anyway.
 * `counted` false for a clean handover (the previous owner released the slot, decision 29):
 * nobody died, so the evidence stays as it was.
 */
export function withNewOwner(ck: VideoCheckpoint, owner: OwnerRecord, counted = true, previousToken?: number): VideoCheckpoint {
  const owners = [...ck.owners, owner].slice(-MAX_OWNER_HISTORY);
  if (!counted) return { ...ck, owners, ownerChanges: ck.ownerChanges + 1 };
  return { ...ck, owners, ownerChanges: ck.ownerChanges + 1, stall: stallAfterAdoption(ck.stall, previousToken) };
}

/**
 * The stall evidence after one more adoption, taken from the tenure `previousToken`:
 * adoptions + 1, and, while a frame is being tried, tries + 1 when that tenure wrote the
 * marker (it was running the frame alone when it died). A tenure that died before writing
 * its own marker inherited the frame but never ran it: no death on it is counted, so two
 * operator kills in a row (one while the frame ran alone, one while the successor was
 * still adopting) cannot park an innocent frame. Unknown writer or previous token: counted.
 */
export function stallAfterAdoption(stall: StallEvidence | undefined, previousToken?: number): StallEvidence {
  const adoptions = (stall?.adoptions ?? 0) + 1;
  if (stall?.trying === undefined) return { adoptions };
  const ranIt = stall.tryingToken === undefined || previousToken === undefined || stall.tryingToken === previousToken;
  const tries = (stall.tries ?? 0) + (ranIt ? 1 : 0);
  return { adoptions, trying: stall.trying, ...(tries > 0 ? { tries } : {}), ...(stall.tryingToken !== undefined ? { tryingToken: stall.tryingToken } : {}) };
}

/** Derives the summary item the results table exposes from a checkpoint. */
export function summaryOf(
  videoId: string,
  ck: VideoCheckpoint,
  lease: { readonly token: number; readonly worker: string; readonly slot: number },
  nowMs: number,
): VideoSummaryItem {
  return {
    videoId,
    frame: -1,
    kind: 'summary',
    status: ck.complete ? 'complete' : 'active',
    framesOk: ck.framesOk,
    framesLate: ck.framesLate,
    framesFailed: ck.framesFailed,
    framesGap: ck.framesGap,
    ...(ck.firstFrame !== undefined ? { firstFrame: ck.firstFrame } : {}),
    ...(ck.lastFrame !== undefined ? { lastFrame: ck.lastFrame } : {}),
    ...(ck.sequencer.endFrame !== null ? { endFrame: ck.sequencer.endFrame } : {}),
    ownerChanges: ck.ownerChanges,
    ...(ck.analytics && (Object.keys(ck.analytics.totals.lines).length > 0 || Object.keys(ck.analytics.totals.zones).length > 0) ? { ruleTotals: ck.analytics.totals } : {}),
    token: lease.token,
    worker: lease.worker,
    slot: lease.slot,
    updatedAtMs: nowMs,
    owners: ck.owners,
  };
}
