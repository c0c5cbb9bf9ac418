/**
 * When each of a video's frames was uploaded, for the upload → record latency
 * (`UploadToRecordMs`), pure: no clock, no AWS client.
 *
 * S3 stamps every event with the time the object was created (`eventTime`, ISO 8601 to the
 * millisecond), and the router passes it on in the frame message. Once the frame's record
 * lands, the time since `eventTime` is the whole path a user waits for: S3's
 * notification, the router, the slot queue, the worker's round and the commit, failover
 * and redelivery included. It is the figure issue 20's live target is stated in, and the
 * one part of it no emulator can give: only a deployment shows S3's own delay.
 *
 * Held in memory only, per video session. A frame whose message this worker never saw
 * (one buffered in a predecessor's checkpoint) has no upload time here and gives no
 * sample; nor does an operator's replay (`affinity replay`), whose upload is long past.
 */
import type { FrameResultItem } from '../../core/commit/results.ts';

/** `eventTime` as epoch ms, or undefined when it is not a date. */
export function eventTimeMs(eventTime: string): number | undefined {
  const ms = Date.parse(eventTime);
  return Number.isFinite(ms) ? ms : undefined;
}

export class UploadTimes {
  private readonly byFrame = new Map<number, number>();

  /** Frames waiting for their record. */
  get size(): number {
    return this.byFrame.size;
  }

  /** A frame's message was accepted: remembers its upload time (the first one, if a duplicate came first). */
  note(frame: number, eventTime: string): void {
    if (this.byFrame.has(frame)) return;
    const ms = eventTimeMs(eventTime);
    if (ms !== undefined) this.byFrame.set(frame, ms);
  }

  /** A frame that will get no record from this worker (a commit found one already there): forgotten, no sample. */
  forget(frame: number): void {
    this.byFrame.delete(frame);
  }

  /**
   * Records that landed at `landedAtMs` (when the commit carrying them answered, or a read
   * settled it: the record's own `committedAtMs` is stamped when its round starts, before
   * the fetch, the model and the commit): forgets their frames, and returns the upload →
   * record latency of each `ok` or `late` one whose upload time is known, ms. A failed or
   * gap record ends the frame without a sample (its record is not the result a user waits
   * for). Never below 0: S3's clock and the worker's may differ by a few ms.
   */
  landed(results: readonly Pick<FrameResultItem, 'frame' | 'status'>[], landedAtMs: number): number[] {
    const latencies: number[] = [];
    for (const r of results) {
      const uploadedAtMs = this.byFrame.get(r.frame);
      if (uploadedAtMs === undefined) continue;
      this.byFrame.delete(r.frame);
      if (r.status === 'ok' || r.status === 'late') latencies.push(Math.max(0, landedAtMs - uploadedAtMs));
    }
    return latencies;
  }
}
