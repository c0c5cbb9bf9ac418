/**
 * `release --force`: an operator override that unpins a video. Still fenced: the release
 * is conditional on the token read a moment before, and it bumps the token, so a worker
 * that still thinks it owns the video can no longer write.
 */
import type { VideoRecord } from '../../leases/port.ts';
import { OperatorError, type OperatorPorts } from './ports.ts';

export interface ReleaseResult {
  readonly videoId: string;
  readonly slot: number;
  readonly previousToken: number;
  readonly token: number;
}

/**
 * Releases a pinned video. `confirm` is asked (with the lease as read) before anything
 * changes; a `false` answer aborts with nothing changed. The CLI asks the operator; a
 * simulation answers itself.
 */
export async function forceRelease(
  p: Pick<OperatorPorts, 'leases' | 'now' | 'where'>,
  o: { readonly videoId: string; readonly retentionDays: number; readonly confirm?: (lease: VideoRecord & { readonly pinnedSlot: number }) => Promise<boolean> },
): Promise<ReleaseResult> {
  const v = await p.leases.getVideo(o.videoId);
  if (v.state === 'new') throw new OperatorError(`no such video "${o.videoId}": it has no lease in ${p.where}`);
  if (v.pinnedSlot === undefined) throw new OperatorError(`video "${o.videoId}" is not leased (state ${v.state}, token ${v.token}); nothing to release`);
  const pinned = { ...v, pinnedSlot: v.pinnedSlot };
  if (o.confirm && !(await o.confirm(pinned))) throw new OperatorError('aborted; nothing changed');
  if (!(await p.leases.forceReleaseVideo(o.videoId, v.token, p.now(), o.retentionDays))) {
    throw new OperatorError(`the lease of "${o.videoId}" changed while releasing (token is no longer ${v.token}); nothing changed; check \`affinity video ${o.videoId}\` and retry`);
  }
  return { videoId: o.videoId, slot: v.pinnedSlot, previousToken: v.token, token: v.token + 1 };
}
