/**
 * `affinity reconcile <id> [--dry-run]`: re-sends the frames whose object exists in S3 but
 * whose record is a gap or missing (core/commit/operations/reconcile.ts). Parses and prints.
 */
import { reconcile, type ReconcileResult } from '../../core/commit/operations/reconcile.ts';
import type { Io } from '../io.ts';
import { asCommand, targetPorts } from '../operations.ts';
import type { Target } from '../target.ts';

export type ReconcileSummary = ReconcileResult;

export async function reconcileCommand(target: Target, o: { videoId: string; dryRun?: boolean }, io: Io): Promise<ReconcileSummary> {
  const r = await asCommand(() => reconcile(targetPorts(target), o));
  const gaps = r.findings.filter((f) => f.why === 'gap-with-object');
  const missing = r.findings.filter((f) => f.why === 'no-record');
  io.out(`${o.videoId}: ${r.objects} frame object(s), ${r.records} record(s)`);
  io.out(`  gap records whose object exists: ${gaps.length}${gaps.length > 0 ? ` (${ranges(gaps.map((f) => f.frame))})` : ''}`);
  io.out(`  objects with no record:          ${missing.length}${missing.length > 0 ? ` (${ranges(missing.map((f) => f.frame))})` : ''}`);
  if (r.findings.length === 0) io.out('nothing to reconcile');
  else if (o.dryRun) io.out(`dry run: would re-send ${r.findings.length} frame(s); nothing sent`);
  else io.out(`re-sent ${r.resent} frame(s) with replay tag ${r.replayTag}; the owning worker records each (a gap becomes late). Check with \`affinity video ${o.videoId}\``);
  return r;
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
