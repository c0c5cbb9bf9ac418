/**
 * `affinity release <id> --force [--yes]`: an operator override that unpins a video, fenced
 * (core/commit/operations/release.ts). Parses, confirms and prints.
 */
import { forceRelease, type ReleaseResult } from '../../core/commit/operations/release.ts';
import { CliError, type Io } from '../io.ts';
import { asCommand, targetPorts } from '../operations.ts';
import type { Target } from '../target.ts';

export interface ReleaseOptions {
  readonly videoId: string;
  readonly force?: boolean;
  readonly yes?: boolean;
}

export async function releaseCommand(target: Target, o: ReleaseOptions, io: Io): Promise<{ released: boolean; token: number }> {
  if (!o.force) {
    throw new CliError('release is an admin override: pass --force to confirm you mean it (workers release videos themselves when idle or finished)', 2);
  }
  const r = await asCommand(() =>
    forceRelease(targetPorts(target), {
      videoId: o.videoId,
      retentionDays: target.releasedVideoRetentionDays,
      confirm: async (v) => {
        if (o.yes) return true;
        const what = `video ${o.videoId}: slot ${v.pinnedSlot}, token ${v.token}, owner ${v.owner ?? '(none yet)'}`;
        if (!io.interactive) throw new CliError(`refusing to force-release ${what} without confirmation: not a terminal; pass --yes to confirm`, 2);
        return io.confirm(`Force-release ${what}? The owner will be fenced and its in-flight work for this video discarded.`);
      },
    }),
  );
  io.out(`released ${o.videoId} from slot ${r.slot}: token ${r.previousToken} -> ${r.token}; ${releaseFollowUp(r)}`);
  return { released: true, token: r.token };
}

/** What happens to the video next, as the release left it. */
export function releaseFollowUp(r: Pick<ReleaseResult, 'complete' | 'resentFrames' | 'resentEndMarker'>): string {
  if (r.complete) return 'it had completed: nothing re-sent';
  const what = [
    ...(r.resentFrames.length > 0 ? [`${r.resentFrames.length === 1 ? 'frame' : 'frames'} ${frameList(r.resentFrames)}`] : []),
    ...(r.resentEndMarker ? ['its end marker'] : []),
  ];
  if (what.length === 0) return 'its checkpoint waited on nothing in S3: its next upload admits it afresh';
  return `re-sent what its checkpoint held (${what.join(' and ')}): it is admitted again now, and its next owner goes on from the checkpoint`;
}

/** `3, 5-9, 12`: runs of consecutive frames collapsed. */
function frameList(frames: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < frames.length; ) {
    let j = i;
    while (j + 1 < frames.length && frames[j + 1] === frames[j]! + 1) j++;
    parts.push(j > i ? `${frames[i]}-${frames[j]}` : `${frames[i]}`);
    i = j + 1;
  }
  return parts.join(', ');
}
