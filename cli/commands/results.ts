/**
 * `affinity results <id> [--json|--csv]`: streams a video's results in frame order,
 * one page of the Query at a time (the summary item is excluded).
 *
 *   text  one line per detection; a frame without detections gets one line
 *   csv   the same rows with a header
 *   json  one JSON object per frame per line (NDJSON)
 */
import type { FrameResultItem } from '../../core/commit/results.ts';
import { CliError, type Io } from '../io.ts';
import { queryResults } from '../read.ts';
import type { Target } from '../target.ts';

export type ResultsFormat = 'text' | 'csv' | 'json';

export const CSV_HEADER = 'frame,status,trackId,label,score,x1,y1,x2,y2,reason,worker,token';

function csvCell(v: string | number | undefined): string {
  if (v === undefined) return '';
  const s = String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const round = (n: number) => Math.round(n * 10) / 10;

/** Lines for one result item in the given format. Pure. */
export function formatResult(r: FrameResultItem, format: ResultsFormat): string[] {
  if (format === 'json') return [JSON.stringify(r)];
  const frameLabel = r.throughFrame !== undefined ? `${r.frame}-${r.throughFrame}` : String(r.frame);
  if (format === 'csv') {
    const base = (d?: FrameResultItem['detections'][number]) =>
      [
        r.frame,
        r.status,
        d?.trackId,
        d?.label,
        d ? d.score.toFixed(3) : undefined,
        ...(d ? d.box.map(round) : [undefined, undefined, undefined, undefined]),
        r.reason ?? (r.throughFrame !== undefined ? `through ${r.throughFrame}` : undefined),
        r.worker,
        r.token,
      ]
        .map(csvCell)
        .join(',');
    return r.detections.length > 0 ? r.detections.map((d) => base(d)) : [base()];
  }
  if (r.detections.length === 0) {
    return [`${frameLabel}\t${r.status}${r.reason ? `\t${r.reason}${r.detail ? `: ${r.detail}` : ''}` : r.status === 'ok' ? '\t(no detections)' : ''}`];
  }
  return r.detections.map(
    (d) => `${frameLabel}\t${r.status}\ttrack ${d.trackId}\t${d.label}\t${d.score.toFixed(2)}\t[${d.box.map((n) => Math.round(n)).join(', ')}]`,
  );
}

export async function resultsCommand(target: Target, o: { videoId: string; format: ResultsFormat }, io: Io): Promise<{ frames: number; lines: number }> {
  let frames = 0;
  let lines = 0;
  if (o.format === 'csv') {
    io.out(CSV_HEADER);
  }
  for await (const page of queryResults(target, o.videoId)) {
    for (const r of page) {
      frames++;
      for (const line of formatResult(r, o.format)) {
        io.out(line);
        lines++;
      }
    }
  }
  if (frames === 0) throw new CliError(`no results for video "${o.videoId}" in ${target.description}`);
  return { frames, lines };
}
