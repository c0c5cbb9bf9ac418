/**
 * `affinity release <id> --force [--yes]`: an operator override that unpins a video.
 * Still fenced: the release is conditional on the token read a moment before, and it
 * bumps the token, so a worker that still thinks it owns the video can no longer write.
 */
import { CliError, type Io } from '../io.ts';
import { leaseStore } from '../read.ts';
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
  const store = leaseStore(target);
  const v = await store.getVideo(o.videoId);
  if (v.state === 'new') throw new CliError(`no such video "${o.videoId}": it has no lease in ${target.description}`);
  if (v.pinnedSlot === undefined) {
    throw new CliError(`video "${o.videoId}" is not leased (state ${v.state}, token ${v.token}); nothing to release`);
  }
  const what = `video ${o.videoId}: slot ${v.pinnedSlot}, token ${v.token}, owner ${v.owner ?? '(none yet)'}`;
  if (!o.yes) {
    if (!io.interactive) {
      throw new CliError(`refusing to force-release ${what} without confirmation: not a terminal; pass --yes to confirm`, 2);
    }
    const ok = await io.confirm(`Force-release ${what}? The owner will be fenced and its in-flight work for this video discarded.`);
    if (!ok) throw new CliError('aborted; nothing changed');
  }
  const released = await store.forceReleaseVideo(o.videoId, v.token, Date.now(), target.releasedVideoRetentionDays);
  if (!released) {
    throw new CliError(`the lease of "${o.videoId}" changed while releasing (token is no longer ${v.token}); nothing changed; check \`affinity video ${o.videoId}\` and retry`);
  }
  io.out(`released ${o.videoId} from slot ${v.pinnedSlot}: token ${v.token} -> ${v.token + 1}; its next frame will be admitted afresh`);
  return { released, token: v.token + 1 };
}
