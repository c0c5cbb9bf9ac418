/**
 * The video driver shared by the randomized commit tests on DynamoDB Local
 * (test/core/commit/dynamodb/commit-outcomes-random.int.test.ts, commit-outbox-random.int.test.ts):
 * a video as the driver last knew it, its re-adoption through the faulty client, and a
 * lease moved under it as an operator or the janitor would.
 */
import type { CommitUnit, LeaseStore, SlotFence } from '../../core/leases/dynamodb/lease-store.ts';
import type { VideoCheckpoint } from '../../core/commit/checkpoint.ts';

export interface DrivenVideo {
  readonly videoId: string;
  token: number;
  committed: VideoCheckpoint;
  /** A unit whose outcome is unknown: re-read before anything else happens to the video. */
  unknown?: CommitUnit;
}

/** Re-adopts through the faulty client: an adoption whose answer is lost is retried, and finds itself. */
export async function readopt(store: LeaseStore, v: DrivenVideo, fence: SlotFence): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      const r = await store.adoptVideo(v.videoId, fence, Date.now());
      if (typeof r === 'string') throw new Error(`re-adoption of ${v.videoId}: ${r}`);
      v.token = r.token;
      v.committed = r.checkpoint;
      return;
    } catch (e) {
      if (e instanceof Error && e.message.startsWith('re-adoption')) throw e;
    }
  }
  throw new Error(`could not re-adopt ${v.videoId}`);
}

/** Moves a video's lease under the driver (through `clean`, a fault-free client), without telling it. */
export async function moveLease(clean: LeaseStore, videoId: string, fence: SlotFence): Promise<void> {
  const v = await clean.getVideo(videoId);
  if (!(await clean.forceReleaseVideo(videoId, v.token, Date.now(), 1))) throw new Error(`could not move ${videoId}`);
  if ((await clean.pinVideo(videoId, fence.slot, Date.now())) !== 'pinned') throw new Error(`could not re-pin ${videoId}`);
}
