/**
 * `reconcile`: finds the frames of a video whose object exists in S3 but whose record says
 * otherwise, and sends them through the pipeline again.
 *
 * The worker re-checks a video's gaps against S3 once before it completes and when it
 * releases it idle (docs/decisions.md, "Gaps are re-checked against S3"). An object that
 * arrives after that, with its notification lost, is found by no one: this operation is the
 * on-demand re-check.
 *
 *  1. lists the video's objects (S3 LIST is strongly consistent) and reads its records;
 *  2. picks the frames with an object whose record is `gap` (`gap-with-object`), and those
 *     with an object and no record at all that the checkpoint does not hold (`no-record`);
 *  3. re-sends them as S3 events on the ingest queue with a fresh replay tag, as `replay`
 *     does: the router gives them fresh FIFO dedup ids (a plain re-send inside the 5-minute
 *     dedup window would be dropped), writes the tag into the slot messages, and routes them
 *     to the video's slot, pinning the video again (and asking for a worker) if it was
 *     released. The owning worker reads each frame's record: a gap is processed as `late`
 *     and its record replaced (conditionally on it still being a gap), a frame without a
 *     record is processed, one that has a record by then is a duplicate. So a reconcile can
 *     run at any time, any number of times, and once what it sent is recorded, the next
 *     run finds nothing.
 *
 * Nothing is deleted and no lease is touched.
 */
import { objectRanges, type ObjectRange } from '../../ingest/object-ranges.ts';
import type { FrameResultItem } from '../results.ts';
import { OperatorError, type OperatorPorts } from './ports.ts';

/** A frame to send again, and why. */
export interface ReconcileFinding {
  readonly frame: number;
  readonly key: string;
  readonly why: 'gap-with-object' | 'no-record';
}

/** What a reconcile found and did. */
export interface ReconcileResult {
  readonly videoId: string;
  /** Frame objects (images and segments). */
  readonly objects: number;
  readonly records: number;
  readonly findings: readonly ReconcileFinding[];
  /** Frames sent again (0 with `dryRun`, or when there was nothing to send). */
  readonly resent: number;
  readonly replayTag?: string;
}

/**
 * The objects to send again, from the video's objects (each with the frames it covers:
 * core/ingest/object-ranges.ts) and records (pure). `held` are the frames the checkpoint
 * holds (buffered or queued late): known to the worker, not lost. A segment is sent again
 * when any frame it covers has no record or a gap record (the finding names the first such
 * frame): the worker then decides each of its frames by its record, so the ones recorded
 * already stay as they are.
 *
 * A segment that declares no frame count covers at most the frames up to the next object;
 * the worker counts its frames itself, and the frames after its count up to the next
 * object are gaps no object holds. Once any of its frames has a record naming it, those
 * records say how far it reaches: frames past the last of them are not its own, and a
 * re-send would change nothing about them (so a reconcile would find them again on every
 * run and never reach "nothing to reconcile").
 */
export function findUnreconciled(objects: readonly ObjectRange[], records: readonly FrameResultItem[], held: ReadonlySet<number>): ReconcileFinding[] {
  const status = new Map<number, FrameResultItem['status']>();
  /** The highest frame whose record names each key. */
  const reach = new Map<string, number>();
  for (const r of records) {
    // Records written before gaps were per frame cover a run: frame..throughFrame.
    const last = r.status === 'gap' && r.throughFrame !== undefined ? r.throughFrame : r.frame;
    for (let f = r.frame; f <= last; f++) status.set(f, r.status);
    if (r.key !== undefined) reach.set(r.key, Math.max(reach.get(r.key) ?? r.frame, r.frame));
  }
  const findings: ReconcileFinding[] = [];
  const seen = new Set<number>();
  for (const ob of objects) {
    if (seen.has(ob.first)) continue;
    seen.add(ob.first);
    const known = ob.declared ? undefined : reach.get(ob.object.key);
    const end = known !== undefined ? Math.min(ob.first + ob.count, known + 1) : ob.first + ob.count;
    for (let f = ob.first; f < end; f++) {
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

export async function reconcile(p: OperatorPorts, o: { readonly videoId: string; readonly dryRun?: boolean }): Promise<ReconcileResult> {
  const v = await p.leases.getVideo(o.videoId);
  if (v.state === 'new') throw new OperatorError(`no such video "${o.videoId}": it has no lease in ${p.where}`);
  // Objects first, then records: a frame committed in between is then seen with its
  // record (not re-sent); one uploaded in between is left to its own notification.
  const objects = await p.objects.list(o.videoId);
  const records: FrameResultItem[] = [];
  for await (const page of p.results.pages(o.videoId)) records.push(...page);
  const held = new Set([...v.checkpoint.sequencer.buffered, ...v.checkpoint.sequencer.late].map((r) => r.frame));
  const ranges = await objectRanges(objects, (key) => p.objects.declaredFrames(key));
  const findings = findUnreconciled(ranges, records, held);
  const base = { videoId: o.videoId, objects: ranges.length, records: records.length, findings };
  if (findings.length === 0 || o.dryRun) return { ...base, resent: 0 };
  const replayTag = p.newTag('reconcile');
  const byKey = new Map(objects.map((ob) => [ob.key, ob]));
  const r = await p.ingest.resend(findings.map((f) => byKey.get(f.key)!), replayTag, 'affinity-reconcile');
  if (r.failure !== undefined) throw new OperatorError(`re-sending frames failed after ${r.sent}: ${r.failure}; run reconcile again (it is safe to repeat)`);
  return { ...base, resent: r.sent, replayTag };
}
