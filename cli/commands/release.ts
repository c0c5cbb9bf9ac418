/**
 * `affinity release <id> --force [--yes]`: an operator override that unpins a video, fenced
 * (core/commit/operations/release.ts). Parses, confirms and prints.
 */
import { forceRelease } from '../../core/commit/operations/release.ts';
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
  io.out(`released ${o.videoId} from slot ${r.slot}: token ${r.previousToken} -> ${r.token}; its next frame will be admitted afresh`);
  return { released: true, token: r.token };
}
