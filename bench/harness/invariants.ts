/**
 * The chaos run's invariants, checked on what the pipeline left behind (bench/chaos.ts),
 * pure so that test/chaos/invariants.test.ts checks them on made-up damage:
 *  1. every uploaded frame has exactly one record (and a frame never uploaded, none or a `gap`);
 *  2. no frame whose object exists in S3 at the end has a `gap` record;
 *  3. every record's token >= the token of the lease that held the video when the frame
 *     was written: the summary's owner history says which tenure covers each frame (an
 *     owner holds frames from its `fromFrame`), and the record's token must be at least
 *     that owner's, and one of the owners' tokens;
 *  4. no two owners' tenures overlap: each token belongs to one worker, owner tokens rise,
 *     and in-order records (not `late`, and written by the tenure covering their frame)
 *     never go down in token along the frames;
 *  5. summaries equal the records they summarise (ok, late, failed, gap counts);
 *  6. track IDs equal an uninterrupted run's on frames processed in order (`ok`), with the
 *     `stats` processor, whose track ID counts the frames a video's state has seen;
 *  7. every video whose end marker was put ends `complete`;
 *  8. no message is left in any DLQ (ingest or slot): nothing ends there without a record;
 *  9. the frames of each uploaded encoded segment (issue 34; 1 covers them as uploaded
 *     frames, 2 as objects in S3): `ok` or `late` for each frame its bytes decode to, and
 *     `failed` with the decoder's reason for each frame of a truncated segment past them.
 */
import { MAX_OWNER_HISTORY } from '../../core/commit/checkpoint.ts';
import type { FrameResultItem, VideoSummaryItem } from '../../core/commit/results.ts';
import { gapFrames } from './collect.ts';


export interface InvariantResult {
  readonly name: string;
  /** Items checked (frames, records, summaries). */
  readonly checked: number;
  readonly violations: number;
  /** Up to 10 descriptions of violations, for the report. */
  readonly examples: readonly string[];
}

class Tally {
  checked = 0;
  violations = 0;
  readonly examples: string[] = [];
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  check(ok: boolean, what: () => string): void {
    this.checked++;
    if (ok) return;
    this.violations++;
    if (this.examples.length < 10) this.examples.push(what());
  }
  result(): InvariantResult {
    return { name: this.name, checked: this.checked, violations: this.violations, examples: this.examples };
  }
}

/** The video's state as the run left it. */
export interface VideoOutcome {
  readonly videoId: string;
  readonly uploaded: ReadonlySet<number>;
  /** Frames never uploaded (their record, if any, must be a gap). */
  readonly neverUploaded: ReadonlySet<number>;
  readonly records: readonly FrameResultItem[];
  readonly summary: VideoSummaryItem | undefined;
  readonly inS3: ReadonlySet<number>;
  /** Its `_end` marker was put (the video must complete). */
  readonly endMarked?: boolean;
  /**
   * The encoded segments uploaded for the video: each covers `[firstFrame, firstFrame +
   * frames)` and its bytes decode to its first `yields` frames (fewer than `frames` when
   * truncated).
   */
  readonly segments?: readonly { readonly firstFrame: number; readonly frames: number; readonly yields: number; readonly decoded?: readonly number[] }[];
  /**
   * An operator's `replay` kept the records below this frame (the lowest effective
   * `--from` of the run): they were written under a tenure before the replay's, whose
   * adopter then took the video over from its first frame again. Their token need only be
   * one of the video's owners'.
   */
  readonly keptByReplayBelow?: number;
  /**
   * The uploader first put an end marker at this frame and later moved it on: frames
   * above it may stand `failed: after-end-of-stream`, recorded under the tenure that
   * believed the first marker (one record each, decision 56's test), instead of ok.
   */
  readonly endMovedFrom?: number;
  /**
   * Frames uploaded (or notified) after frames above them: whichever tenure holds the video
   * when one arrives records it (late, or failed when its object is corrupt), so its token
   * need not follow the frames' order.
   */
  readonly arrivedLate?: ReadonlySet<number>;
}

/**
 * Checks the invariants over every video's outcome and, when given, the messages left in
 * each DLQ by queue name. Pure: unit-testable on made-up records.
 */
export function checkInvariants(videos: readonly VideoOutcome[], dlqMessages?: Readonly<Record<string, number>>): InvariantResult[] {
  const once = new Tally('every uploaded frame has exactly one record');
  const gapButExists = new Tally('no frame whose object exists ends as gap');
  const tokenAtWrite = new Tally("every record's token >= the token of the lease that held the video when it was written");
  const tenures = new Tally("no two owners' tenures overlap for a video");
  const summaries = new Tally('summaries equal the records they summarise');
  const tracks = new Tally("track IDs equal an uninterrupted run's on frames processed in order");
  const complete = new Tally('every video with an end marker completes');
  const dlqs = new Tally('no message in any DLQ');
  const segmentFrames = new Tally("segment frames: ok or late where the segment decodes, failed with the decoder's reason past it");
  for (const [queue, n] of Object.entries(dlqMessages ?? {})) dlqs.check(n === 0, () => `${queue}: ${n} message(s)`);
  for (const v of videos) {
    const perFrame = new Map<number, number>();
    for (const r of v.records) perFrame.set(r.frame, (perFrame.get(r.frame) ?? 0) + 1);
    for (const f of v.uploaded) once.check(perFrame.get(f) === 1, () => `${v.videoId}/${f}: ${perFrame.get(f) ?? 0} records`);
    for (const [f, n] of perFrame) {
      if (v.uploaded.has(f)) continue;
      const status = v.records.find((r) => r.frame === f)?.status;
      once.check(v.neverUploaded.has(f) && n === 1 && status === 'gap', () => `${v.videoId}/${f}: ${n} record(s) (${status}) for a frame never uploaded`);
    }

    const gaps = gapFrames(v.records);
    for (const f of v.inS3) gapButExists.check(!gaps.has(f), () => `${v.videoId}/${f}: object exists, record is gap`);

    const pastMovedEnd = (r: FrameResultItem) => v.endMovedFrom !== undefined && r.frame > v.endMovedFrom && r.status === 'failed' && r.reason === 'after-end-of-stream';
    const owners = [...(v.summary?.owners ?? [])];
    const historyComplete = (v.summary?.ownerChanges ?? 0) <= MAX_OWNER_HISTORY;
    const ownerTokens = new Set(owners.map((o) => o.token));
    const sortedRecords = [...v.records].sort((a, b) => a.frame - b.frame);
    for (const r of sortedRecords) {
      // The tenure covering frame r.frame: the last owner that took the video at or below it.
      let holder = owners[0];
      for (const o of owners) if ((o.fromFrame ?? Number.NEGATIVE_INFINITY) <= r.frame) holder = o;
      const keptByReplay = (v.keptByReplayBelow !== undefined && r.frame < v.keptByReplayBelow) || pastMovedEnd(r);
      tokenAtWrite.check(
        holder !== undefined && (keptByReplay || r.token >= holder.token) && (!historyComplete || ownerTokens.has(r.token)),
        () => `${v.videoId}/${r.frame} (${r.status}): token ${r.token} by ${r.worker}; lease holder for this frame: ${holder ? `${holder.worker} token ${holder.token} from frame ${holder.fromFrame}` : 'none'}`,
      );
    }

    const workerOfToken = new Map<number, string>();
    let prev: (typeof owners)[number] | undefined;
    for (const o of owners) {
      tenures.check(!prev || o.token > prev.token, () => `${v.videoId}: owner ${o.worker} token ${o.token} after ${prev!.worker} token ${prev!.token}`);
      tenures.check(!workerOfToken.has(o.token) || workerOfToken.get(o.token) === o.worker, () => `${v.videoId}: token ${o.token} held by ${workerOfToken.get(o.token)} and ${o.worker}`);
      workerOfToken.set(o.token, o.worker);
      prev = o;
    }
    let lastToken = Number.NEGATIVE_INFINITY;
    let lastFrame = 0;
    for (const r of sortedRecords) {
      const owner = workerOfToken.get(r.token);
      tenures.check(owner === undefined || owner === r.worker, () => `${v.videoId}/${r.frame}: token ${r.token} is ${owner}'s, record written by ${r.worker}`);
      if (owner === undefined) workerOfToken.set(r.token, r.worker);
      // A late record is written whenever its frame arrives, under the token of that moment;
      // so is any record written by a tenure that began after its frame (a gap replaced by a
      // frame that arrived after its video moved on, e.g. `failed object-missing`).
      if (r.status === 'late' || pastMovedEnd(r) || v.arrivedLate?.has(r.frame)) continue;
      const writer = owners.find((o) => o.token === r.token);
      if (writer?.fromFrame !== undefined && writer.fromFrame > r.frame) continue;
      tenures.check(r.token >= lastToken, () => `${v.videoId}/${r.frame}: in-order record under token ${r.token} after frame ${lastFrame} under token ${lastToken}`);
      lastToken = r.token;
      lastFrame = r.frame;
    }

    const count = (s: string) => v.records.filter((r) => String(r.status) === s).length;
    const s = v.summary;
    summaries.check(s !== undefined, () => `${v.videoId}: no summary`);
    if (s) {
      const got = { ok: s.framesOk, late: s.framesLate ?? 0, failed: s.framesFailed, gap: s.framesGap };
      const want = { ok: count('ok'), late: count('late'), failed: count('failed'), gap: gaps.size };
      summaries.check(JSON.stringify(got) === JSON.stringify(want), () => `${v.videoId}: summary ${JSON.stringify(got)}, records ${JSON.stringify(want)}`);
    }

    let k = 0;
    for (const r of sortedRecords) {
      if (r.status !== 'ok') continue;
      k++;
      const id = r.detections[0]?.trackId;
      tracks.check(id === k, () => `${v.videoId}/${r.frame}: track ID ${id}, an in-order run gives ${k} (token ${r.token}, ${r.worker})`);
    }

    const byFrame = new Map(v.records.map((r) => [r.frame, r]));
    for (const seg of v.segments ?? []) {
      for (let f = seg.firstFrame; f < seg.firstFrame + seg.frames; f++) {
        const r = byFrame.get(f);
        const decodes = seg.decoded ? seg.decoded.includes(f - seg.firstFrame) : f < seg.firstFrame + seg.yields;
        const status = r ? `${r.status}${r.reason ? ` ${r.reason}` : ''}` : 'no record';
        segmentFrames.check(
          (r !== undefined && pastMovedEnd(r)) || (decodes ? r?.status === 'ok' || r?.status === 'late' : r?.status === 'failed' && !!r.reason && r.reason !== 'order-violation'),
          () => `${v.videoId}/${f} (segment ${seg.firstFrame} of ${seg.frames} frames, decodes ${seg.yields}): ${status}, want ${decodes ? 'ok or late' : "failed with the decoder's reason"}`,
        );
      }
    }

    if (v.endMarked) complete.check(v.summary?.status === 'complete', () => `${v.videoId}: end marker put, summary ${v.summary?.status ?? 'missing'}`);
  }
  return [once, gapButExists, tokenAtWrite, tenures, summaries, tracks, complete, dlqs, segmentFrames].map((t) => t.result());
}

