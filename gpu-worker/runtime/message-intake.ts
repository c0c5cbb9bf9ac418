/**
 * Takes received messages in: a malformed one is dead-lettered, redeliveries for a
 * released video are dropped, a video pinned elsewhere gets its frames forwarded, and
 * the rest are offered to their video's session (an end marker read, a frame below the
 * tracker decided by its record). Also asks S3 where a session needs a listing. Returns
 * the messages the store could not take now: the worker holds them and tries again.
 */
import type { SlotContext } from './slot-context.ts';
import { errorText } from '../../core/errors.ts';
import type { VideoCheckpoint } from '../../core/commit/checkpoint.ts';
import { ObjectMissingError, type FrameSource } from '../../core/ingest/port.ts';
import { parseEndMarkerBody } from '../../core/ingest/keys.ts';
import type { FrameMessage, SlotMessage } from '../../core/ingest/messages.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import type { LogSink, MetricSink } from '../../core/ports.ts';
import type { RecordReader } from '../../core/commit/port.ts';
import type { FrameRef } from '../../core/ordering/sequencer.ts';
import type { FrameSources } from '../sources/port.ts';
import { errorCode } from '../sources/read-errors.ts';
import type { InboxMessage, SlotInbox } from './slot-inbox.ts';
import type { VideoRegistry } from './video-registry.ts';
import type { VideoSession } from './video-session.ts';

/** Unpadded keys are listed whole, at most this many pages of 1,000. */
const MAX_UNPADDED_LISTING_PAGES = 100;

type ReadyMessage = InboxMessage & { readonly msg: SlotMessage };

export interface MessageIntakeDeps {
  readonly inbox: Pick<SlotInbox, 'deadLetter' | 'park' | 'delete' | 'forward'>;
  readonly registry: Pick<VideoRegistry, 'place' | 'all'>;
  readonly frames: Pick<FrameSource, 'getText' | 'listFrames'>;
  /** The frame bucket, listed to confirm gaps and find where a video starts. */
  readonly bucket: string;
  /** The videos' records, the source of truth for late versus duplicate. */
  readonly records: Pick<RecordReader, 'get' | 'range'>;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  /** The slot: a lost one takes no more messages. */
  readonly slot: Pick<SlotContext, 'lost'>;
  /**
   * Whether a video's last commit is in doubt (its answer was lost): its messages are not
   * decided until a read settles it, since a rollback may undo the state they would be
   * decided from (a frame taken as late for a gap that did not land).
   */
  readonly inDoubt: (videoId: string) => boolean;
  /**
   * Says which frames an object holds (gpu-worker/sources/: an image its own, a segment
   * `[n, n + k)`), and reads a video's next objects ahead once its new ones are taken (decision 51).
   */
  readonly sources: Pick<FrameSources, 'spans' | 'framesOf' | 'covering' | 'learn' | 'readAhead'>;
}

export class MessageIntake {
  private readonly d: MessageIntakeDeps;

  constructor(deps: MessageIntakeDeps) {
    this.d = deps;
  }

  /** Places each message: dead-letter, drop as old news, forward, or offer to its video's session. */
  async accept(messages: readonly InboxMessage[], now: number): Promise<InboxMessage[]> {
    const waiting: InboxMessage[] = [];
    const byVideo = new Map<string, ReadyMessage[]>();
    for (const m of messages) {
      if (!m.msg) {
        if (!(await this.d.inbox.deadLetter(m, 'malformed-message', 'malformed'))) waiting.push(m);
        continue;
      }
      const list = byVideo.get(m.msg.videoId);
      if (list) list.push(m as ReadyMessage);
      else byVideo.set(m.msg.videoId, [m as ReadyMessage]);
    }
    await this.learnObjects(byVideo);
    for (const [videoId, items] of byVideo) {
      if (this.d.slot.lost) break;
      waiting.push(...(await this.acceptVideo(videoId, items, now)));
    }
    return waiting;
  }

  /**
   * What a receive's new objects hold, learnt side by side (a segment's HEAD): the videos
   * are then placed one after another (their sessions change), and each finds its objects
   * described. One round trip per receive instead of one per video: at a live rate a
   * receive brings several cameras' segments. Only for videos this worker holds and whose
   * commit is not in doubt (others may not be ours to read). A failed read here is
   * forgotten: the video's own look tries again and reports it as before.
   */
  private async learnObjects(byVideo: ReadonlyMap<string, readonly ReadyMessage[]>): Promise<void> {
    const keys = new Map<string, string>();
    const held = new Set(this.d.registry.all().map((s) => s.videoId));
    for (const [videoId, items] of byVideo) {
      if (!held.has(videoId) || this.d.inDoubt(videoId)) continue;
      for (const { msg } of items) if (msg.kind !== 'end') keys.set(msg.key, msg.bucket);
    }
    await this.d.sources.learn([...keys].map(([key, bucket]) => ({ bucket, key })));
  }

  /** One video's messages of a receive; those the store cannot take now wait, held, for the next try. */
  private async acceptVideo(videoId: string, items: readonly ReadyMessage[], now: number): Promise<InboxMessage[]> {
    const inbox = this.d.inbox;
    if (this.d.inDoubt(videoId)) {
      // Held, invisible, and offered again once a read has settled the video's last commit.
      this.d.log.info('video commit in doubt: holding its messages until a read settles it', { videoId, messages: items.length });
      this.d.metrics.count(METRIC_NAMES.worker.messagesHeldInDoubt, items.length);
      return [...items];
    }
    let placed;
    try {
      placed = await this.d.registry.place(videoId, (released) => this.anyNews(videoId, released, items));
    } catch (e) {
      this.d.log.warn('could not settle the lease of a video; holding its messages', { videoId, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'ensure-owned' });
      return [...items];
    }
    if (placed === 'lost') return [];
    if (placed === 'nothing-new') {
      // Redeliveries for a released video that change nothing: no need to take it back.
      await inbox.delete(items.map((i) => i.handle));
      this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate, items.length);
      this.d.log.info('duplicates for a released video dropped', { videoId, messages: items.length });
      return [];
    }
    if (typeof placed === 'number') {
      const unsent: InboxMessage[] = [];
      for (const m of items) if (!(await inbox.forward(m, placed))) unsent.push(m);
      return unsent;
    }
    for (let i = 0; i < items.length; i++) {
      try {
        await this.offer(placed, items[i]!.msg, now);
      } catch (e) {
        // Its record or end marker could not be read: this message and the rest wait.
        this.d.log.warn('could not take a message; holding it for the next try', { videoId, error: errorText(e), code: errorCode(e) });
        this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'accept' });
        return items.slice(i);
      }
      placed.takeHandle(items[i]!.handle, now);
    }
    return [];
  }

  /** Offers one message to its video's session; throws only when a read it needs failed. */
  private async offer(s: VideoSession, msg: SlotMessage, now: number): Promise<void> {
    if (msg.kind === 'end') {
      let endFrame: number | undefined;
      let problem = 'end marker body is not a frame number';
      try {
        endFrame = parseEndMarkerBody(await this.d.frames.getText(msg.bucket, msg.key));
      } catch (e) {
        if (!(e instanceof ObjectMissingError)) throw e;
        problem = 'end marker object is missing';
      }
      if (endFrame === undefined) {
        this.d.log.warn('bad end-of-stream marker ignored', { videoId: s.videoId, key: msg.key, problem });
        this.d.metrics.count(METRIC_NAMES.worker.eventsRejected, 1, { Reason: 'bad-end-marker' });
        // Parked with its reason; the original is deleted with the video's next commit.
        if (!(await this.d.inbox.park(JSON.stringify(msg), `bad-end-marker: ${problem}`, s.videoId))) throw new Error('could not dead-letter a bad end marker');
        return;
      }
      const previous = s.sequencer.endFrame;
      if (previous !== null && previous !== endFrame) this.endMoved(s.videoId, previous, endFrame);
      s.setEnd(endFrame);
      this.d.log.info('end of stream announced', { videoId: s.videoId, endFrame });
      return;
    }
    if (this.d.sources.spans(msg.key)) return this.offerSpan(s, msg, now);
    const ref = { frame: msg.frame, bucket: msg.bucket, key: msg.key, sizeBytes: msg.sizeBytes };
    // A replay re-sends frames whose records it deleted: decided by their records again.
    if (msg.replayTag !== undefined) s.forgetRecorded([msg.frame]);
    const offered = s.offerFrame(ref, now);
    if (offered.kind === 'accepted') return noteUpload(s, msg);
    if (offered.kind === 'duplicate') {
      this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate);
      return;
    }
    // Below the tracker, or outside the video: the frame's record is the source of truth.
    const record = await this.d.records.get(s.videoId, msg.frame);
    const decided = s.resolveWithRecord(ref, offered, record?.status);
    if (decided === 'duplicate') this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate);
    else if (decided === 'late') {
      noteUpload(s, msg);
      this.d.log.info('late frame accepted', { videoId: s.videoId, frame: msg.frame, replacesGap: record?.status === 'gap' });
    }
  }

  /**
   * Offers every frame an object that spans frames holds, `[n, n + k)` (an encoded segment,
   * core/ingest/segment-keys.ts): each is decided as a frame of its own would be (new,
   * duplicate, late, outside the video). The frames the sequencer cannot decide are looked
   * up in one query of their records.
   */
  private async offerSpan(s: VideoSession, msg: FrameMessage, now: number): Promise<void> {
    const refs = await this.heldFrames(s, { frame: msg.frame, bucket: msg.bucket, key: msg.key, sizeBytes: msg.sizeBytes }, msg.eTag);
    if (msg.replayTag !== undefined) s.forgetRecorded(refs.map((r) => r.frame));
    const undecided: { ref: FrameRef; offered: Extract<ReturnType<VideoSession['offerFrame']>, { kind: 'needs-record' }> }[] = [];
    let accepted = 0;
    let duplicates = 0;
    for (const ref of refs) {
      const offered = s.offerFrame(ref, now);
      if (offered.kind === 'accepted') {
        accepted++;
        if (msg.replayTag === undefined) s.uploads.note(ref.frame, msg.eventTime);
      } else if (offered.kind === 'duplicate') duplicates++;
      else undecided.push({ ref, offered });
    }
    let late = 0;
    if (undecided.length > 0) {
      const records = await this.recordStatuses(s.videoId, undecided[0]!.ref.frame, undecided.at(-1)!.ref.frame);
      for (const { ref, offered } of undecided) {
        const decided = s.resolveWithRecord(ref, offered, records.get(ref.frame));
        if (decided === 'duplicate') duplicates++;
        else if (decided === 'late') {
          late++;
          if (msg.replayTag === undefined) s.uploads.note(ref.frame, msg.eventTime);
        }
      }
    }
    // New frames from the source (a replay's re-send is not the source producing).
    if (accepted + late > 0 && msg.replayTag === undefined) s.noteSegment(refs[0]!.frame, now);
    if (duplicates > 0) this.d.metrics.count(METRIC_NAMES.worker.framesDuplicate, duplicates);
    // Its GET starts now, beside the HEADs of the receive's other segments, when it is within the video's read-ahead window.
    if (accepted + late > 0) this.d.sources.readAhead(s.videoId, s.upcoming());
    this.d.log.info('segment taken', { videoId: s.videoId, key: msg.key, firstFrame: refs[0]?.frame, frames: refs.length, accepted, duplicates, late });
  }

  /**
   * The frames an object spanning frames holds, as references (its key and size on each;
   * gpu-worker/sources/ `framesOf`). One nothing could count holds its first frame until a
   * listing says where the next object starts (`spanEnd`): said once here, with why.
   */
  private async heldFrames(s: VideoSession, ref: FrameRef, eTag?: string, spanEnd?: number): Promise<FrameRef[]> {
    const held = await this.d.sources.framesOf(ref, { ...(eTag !== undefined ? { eTag } : {}), ...(spanEnd !== undefined ? { spanEnd } : {}) });
    if (held.countUnknown && spanEnd === undefined) {
      this.d.log.warn('segment frame count unknown: its frames up to the next object are recorded failed with its reason', { videoId: s.videoId, key: ref.key });
    }
    return held.refs;
  }

  /**
   * A listing names a segment by its first frame only. Each listed segment within the
   * video's reach (up to the highest frame known, or the end marker; the lowest one while
   * the start is undecided) is expanded to the frames it covers, and those not yet passed
   * are offered as its message would offer them: the whole segment at once, so the video
   * never waits inside a segment for frames a later listing could not see (a listing seeks
   * by first frame). A segment beyond the reach is left to its own notification, and the
   * listing vouches for nothing from its first frame on.
   */
  private async expandSegments(s: VideoSession, listed: readonly FrameRef[], coveredThrough: number, now: number): Promise<{ frames: FrameRef[]; coveredThrough: number }> {
    if (!listed.some((r) => this.d.sources.spans(r.key))) return { frames: [...listed], coveredThrough };
    const q = s.sequencer;
    const sorted = [...listed].sort((a, b) => a.frame - b.frame);
    const reach = q.firstFrame === null ? sorted[0]!.frame : Math.max(q.nextFrame, q.lastBufferedFrame ?? -1, q.endFrame ?? -1);
    const frames: FrameRef[] = [];
    let covered = coveredThrough;
    for (let i = 0; i < sorted.length; i++) {
      const ref = sorted[i]!;
      if (!this.d.sources.spans(ref.key)) {
        frames.push(ref);
        continue;
      }
      if (ref.frame > reach) {
        covered = Math.min(covered, ref.frame - 1);
        break;
      }
      // The span of an object nothing could count: up to the next listed object; else up to
      // the next frame known otherwise (buffered, or past the end marker), as far as the
      // listing covered. With nothing known after it, nothing bounds it yet: its frames wait.
      const known = Math.min([...q.buffered].find((b) => b.frame > ref.frame && b.key !== ref.key)?.frame ?? Infinity, q.endFrame !== null ? q.endFrame + 1 : Infinity);
      const next = sorted.slice(i + 1).find((r) => r.frame > ref.frame)?.frame ?? (Number.isFinite(known) ? Math.min(known, covered + 1) : undefined);
      for (const r of await this.heldFrames(s, ref, undefined, next)) {
        frames.push(r);
        if (q.firstFrame === null || r.frame >= q.nextFrame) s.offerFrame(r, now);
      }
    }
    return { frames, coveredThrough: covered };
  }

  /**
   * The segment that starts below `frame` and covers it, when the object that held the
   * frame before it does (issue 40): a listing names a segment by its first frame, so one
   * from `frame` cannot see a segment begun below it, and would prove its frames absent.
   * That happens when a segment's tail was recorded past an end marker that then moved
   * later, or when a gap lies inside a segment whose count is known only now. The record
   * of `frame - 1` names its object (one read, made only when the listing did not find
   * `frame` itself); the object's description says whether it reaches `frame`.
   */
  private async segmentCovering(s: VideoSession, frame: number): Promise<FrameRef | undefined> {
    if (frame <= 0) return undefined;
    const key = (await this.d.records.get(s.videoId, frame - 1))?.key;
    if (key === undefined) return undefined;
    return this.d.sources.covering(this.d.bucket, key, frame);
  }

  /** The statuses of a video's records from `from` to `to`, one query. */
  private async recordStatuses(videoId: string, from: number, to: number): Promise<Map<number, string>> {
    const out = new Map<number, string>();
    for (const r of await this.d.records.range(videoId, from, to)) out.set(r.frame, r.status);
    return out;
  }

  /**
   * Whether messages for a released video carry anything new: a frame without a final
   * record (new, or late for a gap), or an end marker a finished video has not seen.
   */
  private async anyNews(videoId: string, released: VideoCheckpoint, items: readonly ReadyMessage[]): Promise<boolean> {
    for (const { msg } of items) {
      if (msg.kind === 'end') {
        if (!released.complete || (await this.endChanged(released, msg.bucket, msg.key))) return true;
        continue;
      }
      // An operator's replay re-runs recorded frames to rebuild the tracker (decision 46).
      if (released.replay && msg.frame >= released.sequencer.nextFrame) return true;
      if (this.d.sources.spans(msg.key)) {
        // News when any frame the object holds lacks a final record.
        const frameCount = (await this.d.sources.framesOf({ frame: msg.frame, bucket: msg.bucket, key: msg.key, sizeBytes: msg.sizeBytes }, msg.eTag !== undefined ? { eTag: msg.eTag } : {})).refs.length;
        const records = await this.recordStatuses(videoId, msg.frame, msg.frame + frameCount - 1);
        for (let f = msg.frame; f < msg.frame + frameCount; f++) {
          const status = records.get(f);
          if (status === undefined || status === 'gap') return true;
        }
        continue;
      }
      const record = await this.d.records.get(videoId, msg.frame);
      if (!record || record.status === 'gap') return true;
    }
    return false;
  }

  /**
   * Whether an end marker for a video released complete says another last frame (a marker
   * corrected after the video completed and was released): then the video is taken back,
   * and its session takes the new end and warns ({@link endMoved}). Only read in this rare
   * case. A marker gone from S3 is no news; any other failed read throws, so the message is
   * held and retried (acceptVideo), as an outage must pause, never drop.
   */
  private async endChanged(released: VideoCheckpoint, bucket: string, key: string): Promise<boolean> {
    let body: string;
    try {
      body = await this.d.frames.getText(bucket, key);
    } catch (e) {
      if (e instanceof ObjectMissingError) return false;
      throw e;
    }
    const marker = parseEndMarkerBody(body);
    return marker !== undefined && marker !== released.sequencer.endFrame;
  }

  /**
   * A corrected end marker, taken by the video: frames a process already recorded
   * `after-end-of-stream` (past the old end) keep that record, so the warning names the
   * replay that processes them (which keeps the new end).
   */
  private endMoved(videoId: string, endFrame: number, markerEndFrame: number): void {
    this.d.metrics.count(METRIC_NAMES.worker.endMarkersChanged, 1);
    if (markerEndFrame < endFrame) {
      // Moved earlier: frames past the new end that were already processed keep their records.
      this.d.log.warn('end marker moved earlier; frames already recorded past the new end keep their records', { videoId, endFrame, markerEndFrame });
      return;
    }
    const command = `affinity replay ${videoId} --from ${endFrame + 1}`;
    this.d.log.warn('end marker changed; frames already recorded after-end-of-stream keep that record', { videoId, endFrame, markerEndFrame, command });
  }

  /** Lists the videos whose sequencer needs S3's word before deciding (start, a frame overdue, a gap re-check). */
  async listWhereNeeded(now: number, busy: (videoId: string) => boolean): Promise<void> {
    for (const s of this.d.registry.all()) {
      if (s.backingOff(now) || busy(s.videoId)) continue;
      const want = s.sequencer.listingNeeded(now);
      if (!want) continue;
      try {
        await this.list(s, want.fromFrame, want.throughFrame, want.why, now);
      } catch (e) {
        this.d.log.warn('listing failed; will retry', { videoId: s.videoId, error: errorText(e) });
        this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'list' });
        // A failed start listing gives up deciding at first sight: the wait decides instead.
        s.sequencer.listingFailed(now);
        s.retryAtMs = now + 1000;
      }
    }
  }

  /**
   * Re-checks a video's gaps against S3 before it is released idle: an object that came
   * after its gap (its notification lost) is run as `late`. True when the video may be
   * released now; false when the re-check found work or could not be made (try later).
   */
  async recheckBeforeRelease(s: VideoSession, now: number): Promise<boolean> {
    const r = s.sequencer.gapsToRecheck();
    if (!r) return true;
    try {
      const done = await this.list(s, r.fromFrame, r.toFrame, 'recheck', now);
      return done && !s.sequencer.hasPending() && !s.dirty;
    } catch (e) {
      this.d.log.warn('gap re-check failed; the video stays until it succeeds', { videoId: s.videoId, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'list' });
      return false;
    }
  }

  /** One listing of a video, learnt by its session; maybe-gaps are decided by their records. Whether a re-check finished. */
  private async list(s: VideoSession, fromFrame: number, throughFrame: number | undefined, why: string, now: number): Promise<boolean> {
    const pages = s.padWidth !== undefined ? 1 : MAX_UNPADDED_LISTING_PAGES;
    const listing = await this.d.frames.listFrames(this.d.bucket, s.videoId, fromFrame, s.padWidth, pages, throughFrame);
    const below = listing.frames.some((r) => r.frame === fromFrame) ? undefined : await this.segmentCovering(s, fromFrame);
    const { frames, coveredThrough } = await this.expandSegments(s, below ? [below, ...listing.frames] : listing.frames, listing.coveredThrough, now);
    const lesson = s.learnListing(fromFrame, frames, coveredThrough, now);
    for (const ref of lesson.verify) s.resolveListedGap(ref, (await this.d.records.get(s.videoId, ref.frame))?.status);
    this.d.metrics.count(METRIC_NAMES.worker.framesListed, listing.requests, { Why: why });
    this.d.log.debug('listed frames', { videoId: s.videoId, fromFrame, why, found: listing.frames.length, coveredThrough: listing.coveredThrough, late: lesson.lateFrames, ...(below ? { coveringSegment: below.key } : {}) });
    return lesson.recheckDone;
  }
}

/** A frame taken for its record: remembers its upload time for `UploadToRecordMs` (upload-times.ts). */
function noteUpload(s: VideoSession, msg: FrameMessage): void {
  // An operator's replay is not an upload: its latency would be the time since the original.
  if (msg.replayTag === undefined) s.uploads.note(msg.frame, msg.eventTime);
}
