/**
 * `affinity reconcile <id> [--dry-run]`: finds the frames of a video whose object exists
 * in S3 but whose record says otherwise, and sends them through the pipeline again.
 *
 * The worker re-checks a video's gaps against S3 once before it completes and when it
 * releases it idle (docs/decisions.md, "Gaps are re-checked against S3"). An object that
 * arrives after that, with its notification lost, is found by no one: this command is the
 * on-demand re-check.
 *
 *  1. lists the video's objects (S3 LIST is strongly consistent) and reads its records;
 *  2. picks the frames with an object whose record is `gap` (`gap-with-object`), and those
 *     with an object and no record at all that the checkpoint does not hold (`no-record`);
 *  3. re-sends them as S3 events on the ingest queue with a fresh `replayTag` attribute,
 *     as `affinity replay` does: the router gives them fresh FIFO dedup ids (a plain
 *     re-send inside the 5-minute dedup window would be dropped), writes the tag into the
 *     slot messages, and routes them to the video's slot, pinning the video again (and
 *     asking for a worker) if it was released. The owning worker reads each frame's
 *     record: a gap is processed as `late` and its record replaced (conditionally on it
 *     still being a gap), a frame without a record is processed, one that has a record by
 *     then is a duplicate. So a reconcile can run at any time, any number of times.
 *
 * Nothing is deleted and no lease is touched.
 */
import { randomUUID } from 'node:crypto';
import { storedObjectRanges, type ObjectRange } from '../video/object-ranges.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { CliError, type Io } from '../io.ts';
import { allResults, leaseStore, listVideoObjects, type StoredObject } from '../read.ts';
import type { Target } from '../target.ts';
import { resendAsUploads } from '../resend.ts';

/** A frame to send again, and why. */
export interface ReconcileFinding {
  readonly frame: number;
  readonly key: string;
  readonly why: 'gap-with-object' | 'no-record';
}

/** What a reconcile found and did. */
export interface ReconcileSummary {
  readonly videoId: string;
  readonly objects: number;
  readonly records: number;
  readonly findings: readonly ReconcileFinding[];
  /** Frames sent again (0 with `dryRun`). */
  readonly resent: number;
  readonly replayTag?: string;
}

/**
 * The objects to send again, from the video's objects (each with the frames it covers:
 * cli/video/object-ranges.ts) and records (pure). `held` are the frames the checkpoint
 * holds (buffered or queued late): known to the worker, not lost. A segment is sent again
 * when any frame it covers has no record or a gap record (the finding names the first such
 * frame): the worker then decides each of its frames by its record, so the ones recorded
 * already stay as they are.
 */
export function findUnreconciled(objects: readonly ObjectRange[], records: readonly FrameResultItem[], held: ReadonlySet<number>): ReconcileFinding[] {
  const status = new Map<number, FrameResultItem['status']>();
  for (const r of records) {
    // Records written before gaps were per frame cover a run: frame..throughFrame.
    const last = r.status === 'gap' && r.throughFrame !== undefined ? r.throughFrame : r.frame;
    for (let f = r.frame; f <= last; f++) status.set(f, r.status);
  }
  const findings: ReconcileFinding[] = [];
  const seen = new Set<number>();
  for (const ob of objects) {
    if (seen.has(ob.first)) continue;
    seen.add(ob.first);
    for (let f = ob.first; f < ob.first + ob.count; f++) {
      const s = status.get(f);
      const why = s === 'gap' ? 'gap-with-object' : s === undefined && !held.has(f) ? 'no-record' : undefined;
      if (why) {
        findings.push({ frame: f, key: ob.object.key, why });
        break;
      }
    }
  }
  return findings.sort((a, b) => a.frame - b.frame);
}

export async function reconcileCommand(target: Target, o: { videoId: string; dryRun?: boolean }, io: Io): Promise<ReconcileSummary> {
  const v = await leaseStore(target).getVideo(o.videoId);
  if (v.state === 'new') throw new CliError(`no such video "${o.videoId}": it has no lease in ${target.description}`);
  // Objects first, then records: a frame committed in between is then seen with its
  // record (not re-sent); one uploaded in between is left to its own notification.
  const objects = await listVideoObjects(target, o.videoId);
  const records = await allResults(target, o.videoId);
  const held = new Set([...v.checkpoint.sequencer.buffered, ...v.checkpoint.sequencer.late].map((r) => r.frame));
  const ranges_ = await storedObjectRanges(target, objects);
  const findings = findUnreconciled(ranges_, records, held);
  const frames = ranges_.length;
  const gaps = findings.filter((f) => f.why === 'gap-with-object');
  const missing = findings.filter((f) => f.why === 'no-record');
  io.out(`${o.videoId}: ${frames} frame object(s), ${records.length} record(s)`);
  io.out(`  gap records whose object exists: ${gaps.length}${gaps.length > 0 ? ` (${ranges(gaps.map((f) => f.frame))})` : ''}`);
  io.out(`  objects with no record:          ${missing.length}${missing.length > 0 ? ` (${ranges(missing.map((f) => f.frame))})` : ''}`);
  const base = { videoId: o.videoId, objects: frames, records: records.length, findings };
  if (findings.length === 0) {
    io.out('nothing to reconcile');
    return { ...base, resent: 0 };
  }
  if (o.dryRun) {
    io.out(`dry run: would re-send ${findings.length} frame(s); nothing sent`);
    return { ...base, resent: 0 };
  }
  const replayTag = `reconcile-${Date.now().toString(36)}-${randomUUID().slice(0, 8)}`;
  const byKey = new Map(objects.map((ob) => [ob.key, ob]));
  const resent = await resend(target, findings.map((f) => byKey.get(f.key)!), replayTag);
  io.out(`re-sent ${resent} frame(s) with replay tag ${replayTag}; the owning worker records each (a gap becomes late). Check with \`affinity video ${o.videoId}\``);
  return { ...base, resent, replayTag };
}

/** Sends objects as S3 ObjectCreated events on the ingest queue, tagged so FIFO dedup keeps them. */
function resend(target: Target, objects: readonly StoredObject[], replayTag: string): Promise<number> {
  return resendAsUploads(target, objects, replayTag, 'affinity-reconcile', 'run reconcile again (it is safe to repeat)');
}

/** `3, 7-9, 12`. */
function ranges(frames: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < frames.length; ) {
    let j = i;
    while (j + 1 < frames.length && frames[j + 1] === frames[j]! + 1) j++;
    parts.push(i === j ? String(frames[i]) : `${frames[i]}-${frames[j]}`);
    i = j + 1;
  }
  const text = parts.join(', ');
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}
