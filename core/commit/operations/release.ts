/**
 * `release --force`: an operator override that unpins a video. Still fenced: the release
 * is conditional on the token read a moment before, and it bumps the token, so a worker
 * that still thinks it owns the video can no longer write.
 *
 * A released video is admitted again only by a message for it (the router pins it, a worker
 * adopts its checkpoint). A video that was waiting (frames buffered behind a missing one,
 * late frames queued, an end marker known but not reached) has had those messages already:
 * their frames live in its checkpoint, and no new message would come, so its frames would
 * never get a record and it would never complete. So the release re-sends, with a fresh
 * replay tag (FIFO deduplication would drop a plain re-send), the objects the checkpoint
 * waits on: its buffered and late frames and its end marker ({@link heldObjects}). The
 * router admits the video at once; its next owner adopts the checkpoint, finds those frames
 * already held (duplicates) and goes on from where the old owner was. A finished video is
 * re-sent nothing.
 */
import { parseSourceKey } from '../../ingest/segment-keys.ts';
import type { StoredObject } from '../../ingest/port.ts';
import type { VideoCheckpoint } from '../checkpoint.ts';
import type { VideoRecord } from '../../leases/port.ts';
import { OperatorError, type OperatorPorts } from './ports.ts';

export interface ReleaseResult {
  readonly videoId: string;
  readonly slot: number;
  readonly previousToken: number;
  readonly token: number;
  /** The video had completed: nothing was re-sent. */
  readonly complete: boolean;
  /** Frames (images, or segments by their first frame) re-sent because the checkpoint held them. */
  readonly resentFrames: readonly number[];
  /** Whether the end marker was re-sent. */
  readonly resentEndMarker: boolean;
  /** The tag of the re-sends; absent when nothing was re-sent. */
  readonly replayTag?: string;
}

/**
 * The objects a released video's checkpoint waits on, in frame order with the end marker
 * last (pure): every object in `objects` (the video's, as listed) that holds a frame the
 * checkpoint buffers or queues as late, and the end marker, unless the video completed.
 * An object held but gone from S3 is not re-sent (nothing could be); its frame is settled
 * by the next owner as any missing frame is.
 */
export function heldObjects(checkpoint: VideoCheckpoint, objects: readonly StoredObject[]): { frames: StoredObject[]; endMarker: StoredObject | undefined } {
  if (checkpoint.complete) return { frames: [], endMarker: undefined };
  const held = new Set([...checkpoint.sequencer.buffered, ...checkpoint.sequencer.late].map((r) => r.key));
  const frames = objects.filter((ob) => held.has(ob.key)).sort((a, b) => firstFrameOf(a) - firstFrameOf(b));
  const endMarker = objects.find((ob) => parseSourceKey(ob.key).kind === 'end');
  return { frames, endMarker };
}

function firstFrameOf(ob: StoredObject): number {
  const p = parseSourceKey(ob.key);
  return p.kind === 'source' ? p.firstFrame : Number.MAX_SAFE_INTEGER;
}

/**
 * Releases a pinned video, then re-sends what its checkpoint waits on (see the header).
 * `confirm` is asked (with the lease as read) before anything changes; a `false` answer
 * aborts with nothing changed. The CLI asks the operator; a simulation answers itself.
 */
export async function forceRelease(
  p: Pick<OperatorPorts, 'leases' | 'now' | 'where' | 'objects' | 'ingest' | 'newTag'>,
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
  const released = { videoId: o.videoId, slot: v.pinnedSlot, previousToken: v.token, token: v.token + 1 };
  // The checkpoint as released: the release changes the token and the pin, never the checkpoint.
  const checkpoint = v.checkpoint;
  if (checkpoint.complete) return { ...released, complete: true, resentFrames: [], resentEndMarker: false };
  const { frames, endMarker } = heldObjects(checkpoint, await p.objects.list(o.videoId));
  const toSend = [...frames, ...(endMarker ? [endMarker] : [])];
  const result = { ...released, complete: false, resentFrames: frames.map(firstFrameOf), resentEndMarker: endMarker !== undefined };
  if (toSend.length === 0) return result;
  const replayTag = p.newTag('release');
  const r = await p.ingest.resend(toSend, replayTag, 'affinity-release');
  if (r.failure !== undefined) {
    // Released all the same: the operator must know the video now waits for a message.
    throw new OperatorError(
      `released "${o.videoId}" from slot ${released.slot} (token ${released.previousToken} -> ${released.token}), but re-sending the ${toSend.length} object(s) its checkpoint waits on failed after ${r.sent}: ${r.failure}; ` +
        `until a message comes for it no worker takes it: run \`affinity replay ${o.videoId} --from ${checkpoint.sequencer.nextFrame}\` to send its frames again`,
    );
  }
  return { ...result, replayTag };
}
