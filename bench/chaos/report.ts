/**
 * The chaos run's report: faults counted by kind (planned frame and notification faults,
 * applied timed faults, injected AWS errors from their log), what the faulted frames ended
 * as, the invariants, and the JSON written to bench/results/chaos-<seed>.json.
 */
import { existsSync, readFileSync } from 'node:fs';
import type { LocalStack } from '../../local/stack.ts';
import { table } from '../../cli/format.ts';
import { countBy, statusCounts, type VideoLeft } from '../harness/collect.ts';
import type { InvariantResult } from '../harness/invariants.ts';
import { machine, writeResult, type Bench } from '../harness/main.ts';
import type { Outcome } from '../harness/watch.ts';
import { FRAME_FAULTS, NOTIFICATION_FAULTS, TIMED_FAULTS, type AppliedDetail, type PlannedUpload } from './faults.ts';
import { CRASH_FRAME_KIND, plannedCounts, type ChaosOptions, type ChaosPlan } from './plan.ts';
import { SEGMENT_FAULTS, SEGMENT_MISSING } from './segments.ts';

/** A timed fault as it was applied. */
export type AppliedFault = AppliedDetail & { readonly kind: string; readonly atS: number };

/** What the run did and saw, for the report. */
export interface ChaosFacts {
  readonly o: ChaosOptions;
  readonly plan: ChaosPlan;
  readonly stack: LocalStack;
  readonly outcome: Outcome;
  readonly finishedS: number;
  readonly applied: readonly AppliedFault[];
  readonly janitor: { readonly scheduledRuns: number; readonly skipped: number };
  readonly awsFaultLog: string;
  readonly left: readonly (VideoLeft & { uploaded: ReadonlySet<number> })[];
  readonly invariants: readonly InvariantResult[];
  /** Messages left in each DLQ at the end. */
  readonly dlqs: Readonly<Record<string, number>>;
}

/** Injected AWS errors by service, error and role, from the fault-injection log. */
function awsFaultCounts(log: string): Record<string, number> {
  if (!existsSync(log)) return {};
  const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
  const counts = countBy(lines, (line) => {
    const [role, service, , error] = line.split('\t');
    return `AWS ${service} ${error} (${role})`;
  });
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => a.localeCompare(b)));
}

/** Prints the report and writes it; returns it. */
export function report(f: ChaosFacts, bench: Bench) {
  const { o, plan, stack } = f;
  const say = bench.say;
  const timed = Object.fromEntries(TIMED_FAULTS.map((k) => [k.kind, f.applied.filter((a) => a.kind === k.kind && !a.skipped).length]));
  // A skip is asked for at its time; what counts is the scheduled runs really skipped.
  timed['janitor run skipped'] = f.janitor.skipped;
  const faults: Record<string, number> = { ...timed, ...plannedCounts(plan), ...awsFaultCounts(f.awsFaultLog) };
  const faultTotal = Object.values(faults).reduce((a, b) => a + b, 0);

  const recordOf = (videoId: string, frame: number) => f.left.find((x) => x.videoId === videoId)!.records.find((r) => r.frame === frame);
  const endedAs = (uploads: readonly PlannedUpload[]) =>
    countBy(uploads, (u) => {
      const r = recordOf(u.videoId, u.frame);
      return r ? `${r.status}${r.reason ? ` ${r.reason}` : ''}` : 'none';
    });
  const faultedFrames: Record<string, Record<string, number>> = {};
  for (const k of FRAME_FAULTS) if (!k.neverUploaded) faultedFrames[k.kind] = endedAs(plan.uploads.filter((u) => !u.segment && u.frameFault === k.kind));
  faultedFrames[NOTIFICATION_FAULTS[0]!.kind] = endedAs(plan.uploads.filter((u) => !u.segment && u.notification?.kind === 'drop'));
  if (plan.segments) {
    // A segment's frames, each as the frame it covers.
    const framesOf = (uploads: readonly PlannedUpload[]) => uploads.flatMap((u) => Array.from({ length: u.segment!.frames }, (_, i) => ({ ...u, frame: u.frame + i })));
    const segmentUploads = plan.uploads.filter((u) => u.segment);
    faultedFrames['segment frames, all'] = endedAs(framesOf(segmentUploads));
    for (const k of SEGMENT_FAULTS) {
      if (!k.neverUploaded) faultedFrames[`${k.kind} (its frames)`] = endedAs(framesOf(segmentUploads.filter((u) => u.frameFault === k.kind)));
    }
    for (const k of NOTIFICATION_FAULTS) faultedFrames[`segment ${k.kind} (its frames)`] = endedAs(framesOf(segmentUploads.filter((u) => u.notificationFault === k.kind)));
    faultedFrames[`${SEGMENT_MISSING} (its frames)`] = countBy(
      [...plan.segments.lost.entries()].flatMap(([videoId, frames]) => [...frames].map((frame) => ({ videoId, frame }))),
      (x) => recordOf(x.videoId, x.frame)?.status ?? 'none',
    );
  }
  faultedFrames['frame never uploaded'] = countBy(
    [...plan.lost.entries()].flatMap(([videoId, frames]) => [...frames].map((frame) => ({ videoId, frame }))),
    (x) => recordOf(x.videoId, x.frame)?.status ?? 'none',
  );
  // Expected: `failed crashed-worker` (after at most 3 crashes), or `ok` where the worker does not know WORKER_CRASH_ON_KEY.
  if (plan.crashFrame) faultedFrames[CRASH_FRAME_KIND] = endedAs([{ ...plan.crashFrame, dueMs: 0 }]);

  const workers = stack.launcher.workers();
  const exits = countBy(
    workers.filter((w) => !w.alive),
    (w) => w.exitSignal ?? `code ${w.exitCode}`,
  );
  const all = statusCounts(f.left.flatMap((v) => v.records));
  const records = { ok: all.ok, late: all.late, failed: all.failed, gap: all.gap };
  const violations = f.invariants.reduce((a, i) => a + i.violations, 0);

  say('');
  say(`outcome: ${f.outcome} ${f.finishedS.toFixed(1)} s after the first upload; records ok ${records.ok}, late ${records.late}, failed ${records.failed}, gap ${records.gap}`);
  say(
    `workers started ${workers.length}; exits: ${Object.entries(exits).map(([k, c]) => `${k} ${c}`).join(', ') || 'none'}; ` +
      `janitor scheduled runs ${f.janitor.scheduledRuns}, skipped ${f.janitor.skipped}`,
  );
  say('');
  say(`faults (${faultTotal} in all):`);
  for (const line of table(['fault', 'count'], Object.entries(faults))) say(`  ${line}`);
  say('');
  say('faulted frames ended as:');
  for (const [k, m] of Object.entries(faultedFrames)) say(`  ${k}: ${Object.entries(m).map(([s, c]) => `${s} ${c}`).join(', ') || '-'}`);
  say('');
  say('invariants:');
  for (const line of table(['invariant', 'checked', 'violations'], f.invariants.map((i) => [i.name, i.checked, i.violations]))) say(`  ${line}`);
  for (const i of f.invariants) for (const e of i.examples) say(`  ! ${i.name}: ${e}`);
  say(`DLQs at the end: ${Object.entries(f.dlqs).map(([q, n]) => `${q} ${n}`).join(', ')}`);
  say(`violations: ${violations} (target 0); seed ${o.seed}`);

  const result = {
    command: `npx node bench/chaos.ts --seed ${o.seed}${o.defaultTunables ? ' --default-tunables' : ''}${o.hotSpare ? ' --hot-spare' : ''}${o.segmentVideos !== 2 ? ` --segment-videos ${o.segmentVideos}` : ''}${o.timeoutMs !== 220_000 ? ` --timeout-s ${o.timeoutMs / 1000}` : ''}`,
    date: new Date().toISOString(),
    machine: machine(),
    seed: o.seed,
    options: o,
    tunables: stack.tunables,
    outcome: f.outcome,
    firstUploadToOutcomeS: f.finishedS,
    runtimeS: (Date.now() - bench.t0) / 1000,
    records,
    faultTotal,
    faults,
    processFaults: f.applied,
    notifications: stack.notifier.counts,
    faultedFrames,
    workers: { started: workers.length, exits },
    janitor: f.janitor,
    crashFrame: plan.crashFrame ?? null,
    workerExits: workers.map((w) => ({ workerId: w.workerId, slot: w.slot, exit: w.alive ? 'alive' : (w.exitSignal ?? `code ${w.exitCode}`) })),
    dlqs: f.dlqs,
    invariants: f.invariants,
    violations,
    videos: f.left.map((v) => ({
      videoId: v.videoId,
      uploaded: v.uploaded.size,
      ...(plan.segments?.segments.has(v.videoId) ? { segments: [...plan.segments.segments.get(v.videoId)!].map(([firstFrame, s]) => ({ firstFrame, frames: s.frames, yields: s.yields, fault: plan.uploads.find((u) => u.videoId === v.videoId && u.frame === firstFrame && u.segment)?.frameFault ?? (plan.segments!.lost.get(v.videoId)?.has(firstFrame) ? SEGMENT_MISSING : null) })) } : {}),
      records: v.records.length,
      summary: v.summary
        ? {
            status: v.summary.status,
            framesOk: v.summary.framesOk,
            framesLate: v.summary.framesLate,
            framesFailed: v.summary.framesFailed,
            framesGap: v.summary.framesGap,
            ownerChanges: v.summary.ownerChanges,
            owners: v.summary.owners,
          }
        : null,
    })),
  };
  writeResult(o.out, result, say);
  return result;
}
