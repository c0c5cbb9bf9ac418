/**
 * `affinity video <id> [--json]`: the lease (slot, token, owner), owner history,
 * progress (summary counts, next frame, buffered frames), gaps and failures.
 */
import type { VideoRecord } from '../../core/leases/dynamodb/lease-store.ts';
import type { FrameResultItem, VideoSummaryItem } from '../../core/commit/results.ts';
import { formatDurationMs, ranges, table } from '../format.ts';
import { CliError, type Io } from '../io.ts';
import { getSummary, leaseStore, queryResults } from '../read.ts';
import type { Target } from '../target.ts';

export interface VideoReport {
  readonly videoId: string;
  readonly lease: {
    readonly state: VideoRecord['state'];
    readonly slot?: number;
    readonly token: number;
    readonly owner?: string;
    readonly ownerEpoch?: number;
  };
  readonly progress: {
    readonly nextFrame: number;
    readonly buffered: readonly number[];
    readonly endFrame: number | null;
    readonly complete: boolean;
    readonly checkpointSeq: number;
  };
  readonly owners: VideoRecord['checkpoint']['owners'];
  readonly summary?: VideoSummaryItem;
  /** Gap runs: frame..throughFrame. */
  readonly gaps: readonly { frame: number; throughFrame: number; reason?: string }[];
  readonly failures: readonly { frame: number; reason?: string; detail?: string; worker: string }[];
}

/** Splits non-ok result items into gap runs and failures. Pure. */
export function problemsOf(items: readonly FrameResultItem[]): Pick<VideoReport, 'gaps' | 'failures'> {
  const gaps: { frame: number; throughFrame: number; reason?: string }[] = [];
  const failures: { frame: number; reason?: string; detail?: string; worker: string }[] = [];
  for (const r of [...items].sort((a, b) => a.frame - b.frame)) {
    if (r.status === 'gap') {
      const through = r.throughFrame ?? r.frame;
      const last = gaps.at(-1);
      // Per-frame gap items of one run read better as one range.
      if (last && last.throughFrame + 1 === r.frame && last.reason === r.reason) last.throughFrame = through;
      else gaps.push({ frame: r.frame, throughFrame: through, ...(r.reason ? { reason: r.reason } : {}) });
    } else if (r.status === 'failed') {
      failures.push({ frame: r.frame, ...(r.reason ? { reason: r.reason } : {}), ...(r.detail ? { detail: r.detail } : {}), worker: r.worker });
    }
  }
  return { gaps, failures };
}

/** Failed frames that share a reason and detail: one line of `affinity video` for all of them. */
export interface FailureGroup {
  readonly reason?: string;
  readonly detail?: string;
  /** In frame order. */
  readonly frames: readonly number[];
  /** The workers that recorded them, in order of first appearance. */
  readonly workers: readonly string[];
}

/**
 * Groups failures by reason and detail, in order of each group's first frame: a damaged
 * segment fails hundreds of frames for one reason, which reads as one line with its frame
 * ranges and count, not hundreds of identical lines. Pure.
 */
export function failureGroups(failures: VideoReport['failures']): FailureGroup[] {
  const groups = new Map<string, { reason?: string; detail?: string; frames: number[]; workers: string[] }>();
  for (const f of [...failures].sort((a, b) => a.frame - b.frame)) {
    const key = JSON.stringify([f.reason ?? null, f.detail ?? null]);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = { ...(f.reason !== undefined ? { reason: f.reason } : {}), ...(f.detail !== undefined ? { detail: f.detail } : {}), frames: [], workers: [] }));
    g.frames.push(f.frame);
    if (!g.workers.includes(f.worker)) g.workers.push(f.worker);
  }
  return [...groups.values()];
}

/** The line of one failure group: `frames (count)  reason: detail  (workers)`. Pure. */
export function failureGroupLine(g: FailureGroup): string {
  const frames = g.frames.length === 1 ? String(g.frames[0]) : `${ranges(g.frames)} (${g.frames.length} frames)`;
  const workers = g.workers.length <= 2 ? g.workers.join(', ') : `${g.workers[0]} and ${g.workers.length - 1} other workers`;
  return `  ${frames}  ${g.reason ?? 'unknown'}${g.detail ? `: ${g.detail}` : ''}  (${workers})`;
}

export async function collectVideo(target: Target, videoId: string): Promise<VideoReport> {
  const store = leaseStore(target);
  const [v, summary] = await Promise.all([store.getVideo(videoId), getSummary(target, videoId)]);
  const problems: FrameResultItem[] = [];
  for await (const page of queryResults(target, videoId, { nonOkOnly: true })) problems.push(...page);
  if (v.state === 'new' && !summary && problems.length === 0) {
    throw new CliError(`no such video "${videoId}": it has no lease and no results in ${target.description}`);
  }
  const ck = v.checkpoint;
  return {
    videoId,
    lease: {
      state: v.state,
      ...(v.pinnedSlot !== undefined ? { slot: v.pinnedSlot } : {}),
      token: v.token,
      ...(v.owner ? { owner: v.owner } : {}),
      ...(v.ownerEpoch !== undefined ? { ownerEpoch: v.ownerEpoch } : {}),
    },
    progress: {
      nextFrame: ck.sequencer.nextFrame,
      buffered: ck.sequencer.buffered.map((b) => b.frame).sort((a, b) => a - b),
      endFrame: ck.sequencer.endFrame,
      complete: ck.complete,
      checkpointSeq: ck.seq,
    },
    owners: ck.owners.length > 0 ? ck.owners : (summary?.owners ?? []),
    ...(summary ? { summary } : {}),
    ...problemsOf(problems),
  };
}

export function printVideo(r: VideoReport, io: Io, nowMs = Date.now()): void {
  const l = r.lease;
  io.out(`video ${r.videoId}`);
  io.out(
    `  lease     ${l.state}${l.slot !== undefined ? `, slot ${l.slot}` : ''}, token ${l.token}` +
      (l.owner ? `, owner ${l.owner} (slot epoch ${l.ownerEpoch ?? '?'})` : l.state === 'pinned' ? ', not adopted yet' : ''),
  );
  const p = r.progress;
  io.out(
    `  progress  next frame ${p.nextFrame}` +
      `, buffered ${p.buffered.length > 0 ? `[${ranges(p.buffered)}]` : 'none'}` +
      `, end ${p.endFrame ?? 'not announced'}` +
      `${p.complete ? ', complete' : ''} (checkpoint #${p.checkpointSeq})`,
  );
  const s = r.summary;
  if (s) {
    io.out(
      `  results   ${s.status}: ${s.framesOk} ok, ${s.framesLate ?? 0} late, ${s.framesFailed} failed, ${s.framesGap} gap` +
        (s.firstFrame !== undefined ? `, frames ${s.firstFrame}..${s.lastFrame ?? '?'}` : '') +
        `, ${s.ownerChanges} owner change(s), updated ${formatDurationMs(nowMs - s.updatedAtMs)} ago`,
    );
  } else {
    io.out('  results   none committed yet');
  }
  io.out('');
  io.out(`OWNERS (${r.owners.length})`);
  if (r.owners.length > 0) {
    for (const line of table(
      ['token', 'worker', 'since', 'from frame'],
      r.owners.map((o) => [o.token, o.worker, new Date(o.sinceMs).toISOString(), o.fromFrame ?? '-']),
    ))
      io.out(`  ${line}`);
  }
  io.out('');
  io.out(`GAPS (${r.gaps.length})`);
  for (const g of r.gaps) io.out(`  ${g.frame === g.throughFrame ? `${g.frame}` : `${g.frame}-${g.throughFrame}`}  ${g.reason ?? ''}`.trimEnd());
  io.out('');
  const groups = failureGroups(r.failures);
  io.out(`FAILURES (${r.failures.length}${groups.length > 1 ? `, ${groups.length} reasons` : ''})`);
  for (const g of groups) io.out(failureGroupLine(g));
}

export async function videoCommand(target: Target, o: { videoId: string; json?: boolean }, io: Io): Promise<VideoReport> {
  const report = await collectVideo(target, o.videoId);
  if (o.json) io.out(JSON.stringify(report, null, 2));
  else printVideo(report, io);
  return report;
}
