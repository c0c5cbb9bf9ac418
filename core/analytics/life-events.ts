/**
 * Life events written outside the commit builder (issue 22): the take-over, written in
 * the adoption's own transaction (core/leases/dynamodb/lease-store.ts), so it exists iff the change
 * of owner landed.
 */
import type { VideoCheckpoint } from '../commit/checkpoint.ts';
import { DETAIL_TYPE, eventId, type EventItem } from './event-schema.ts';

/**
 * How the video changed owner (decision 29's handover kinds): its owner's slot was taken
 * over from a task that died or paused past its lease (`from-dead-owner`), a live owner
 * handed it over (`clean`: drain, lease-lost exit), or nobody held it any more
 * (`released`: an idle release or the janitor's unpin).
 */
export type TakeOverHandover = 'from-dead-owner' | 'clean' | 'released';

/**
 * The `video.taken-over` event of an adoption, or undefined for a first adoption (no
 * previous owner: the video's start is `video.started`, raised by its first commit).
 * Its id carries the new token, so each change of owner has its own event.
 */
export function takeOverEvent(
  videoId: string,
  before: VideoCheckpoint,
  next: { readonly worker: string; readonly token: number },
  nowMs: number,
  handover: TakeOverHandover = 'from-dead-owner',
): EventItem | undefined {
  const previous = before.owners[before.owners.length - 1];
  if (!previous) return undefined;
  const frame = before.sequencer.nextFrame;
  return {
    videoId,
    eventId: eventId({ frame, kind: 'video.taken-over', discriminator: next.token }),
    kind: 'video.taken-over',
    detailType: DETAIL_TYPE['video.taken-over'],
    frame,
    detail: { oldOwner: previous.worker, oldToken: previous.token, newOwner: next.worker, newToken: next.token, handover },
    token: next.token,
    atMs: nowMs,
  };
}
