/**
 * `affinity replay <id> --from <frame>`: reprocesses a video from a frame on, from the
 * frames still in S3, so that records, track ids, events and rule totals equal an
 * uninterrupted run (core/commit/operations/replay.ts, decision 46). Parses and prints.
 */
import { replay, type ReplayResult } from '../../core/commit/operations/replay.ts';
import type { Io } from '../io.ts';
import { asCommand, targetPorts } from '../operations.ts';
import type { Target } from '../target.ts';

export type ReplaySummary = ReplayResult;

export async function replayCommand(target: Target, o: { videoId: string; fromFrame: number }, io: Io): Promise<ReplaySummary> {
  const r = await asCommand(() => replay(targetPorts(target), o));
  for (const w of r.widened) {
    if (w.why === 'inside-run') io.err(`frame ${r.askedFrom} lies inside a stored run (a gap run, or a segment's packed records) starting at ${w.from}; replaying from ${w.from}`);
    else io.err(`frame(s) ${w.from === w.through ? w.from : `${w.from}-${w.through}`} below ${r.askedFrom} have no record yet (still waiting, late, or never uploaded): re-run silently they would get none; replaying from ${w.from}`);
  }
  const rebuilt = r.rebuiltFrom < r.fromFrame ? ` (and ${r.rebuilt} from frame ${r.rebuiltFrom} to rebuild the tracker and rules, recorded already)` : '';
  const end = r.endMarker ? ' and the end marker' : r.endFrameKnown !== null ? ` (end frame ${r.endFrameKnown} already known)` : '';
  io.out(
    `replaying ${o.videoId} from frame ${r.fromFrame}: token ${r.previousToken} -> ${r.token}, deleted ${r.deleted} result(s) and ${r.eventsDeleted} event(s), ` +
      (r.keptNewer > 0 ? `kept ${r.keptNewer} committed since the reset, ` : '') +
      `re-sent ${r.resent} frame(s)${rebuilt}${end} (replay tag ${r.replayTag})`,
  );
  return r;
}
