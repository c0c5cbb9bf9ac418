/**
 * The frame-source seam (issue 43, decision 70). The worker runtime asks one interface,
 * {@link FrameSources}, what a stored object holds and for each frame's pixels, and never
 * asks what kind of object a key names: detection reads frames by reference, not knowing
 * whether they come from an image read whole or from an encoded segment decoded on read
 * (as Frigate's detectors read frames from its frame store by name).
 *
 * Two implementations of one {@link ObjectSource} port sit behind it:
 * - images (image/image-source.ts): one frame per object, read whole, fetched ahead at
 *   receive and by predicted key (ahead/frame-prefetch.ts, ahead/read-ahead.ts), its GET
 *   hedged (ahead/hedged-fetch.ts);
 * - encoded segments (segment/segment-source.ts): `[n, n + k)` per object, counted by a
 *   HEAD or the demuxer, decoded on read (segment/segment-reader.ts over
 *   gpu-worker/video/segment-decoder.ts), the next segments read ahead.
 * frame-sources.ts routes each key to its implementation (the one place a key's kind is
 * read) and holds what they share: the prefetch, and the repair of a truncated segment's
 * frame from the object that holds it instead (decision 59).
 */
import type { FrameInput, FrameOutcome } from '../../core/ports.ts';
import type { FrameMessage } from '../../core/ingest/messages.ts';
import type { FrameRef } from '../../core/ordering/sequencer.ts';
import type { DecoderPlacement } from '../video/segment-decoder.ts';

export type { DecoderPlacement } from '../video/segment-decoder.ts';

/** A frame's input for the processor, or the record it gets instead. */
export type FrameRead = { readonly input: FrameInput } | { readonly failed: FrameOutcome };

/** The frames a stored object holds, as the runtime sequences them. */
export interface HeldFrames {
  /** In frame order: an image's one frame; a segment's `[n, n + k)`. Each carries the object's key and size. */
  readonly refs: FrameRef[];
  /**
   * Nothing could count the object's frames (gone, unreadable, oversized, empty): it holds
   * its first frame, and, given where the next object starts, every frame up to there;
   * each fails with the object's reason (decision 59), never `gap`.
   */
  readonly countUnknown: boolean;
}

/** Runs one GET within the round's bound on concurrent GETs. */
export type BoundedGet = <T>(get: () => Promise<T>) => Promise<T>;

/** One kind of stored object: what it holds and its frames' pixels. */
export interface ObjectSource {
  /**
   * The frames the object `ref` names holds (`ref.frame` its first). `eTag` is the
   * message's (a re-upload is told apart by it); `spanEnd` (exclusive) is where the next
   * object starts, when a listing said: an object nothing could count holds up to there.
   * Throws only on a store error worth a retry.
   */
  framesOf(ref: FrameRef, o?: { readonly eTag?: string; readonly spanEnd?: number }): Promise<HeldFrames>;
  /**
   * The object `key` as the reference of its first frame, when it begins below `frame` and
   * holds it (a listing from `frame` cannot see an object begun below it); undefined otherwise.
   */
  covering(bucket: string, key: string, frame: number): Promise<FrameRef | undefined>;
  /** Learns what a receive's new objects hold, side by side (one round trip, not one per video). Never throws. */
  learn(objects: readonly { readonly bucket: string; readonly key: string }[]): Promise<void>;
  /** The record of a frame that needs no read to be known unusable (empty, over its size limit); undefined otherwise. */
  screen(ref: FrameRef): FrameOutcome | undefined;
  /** The frame's input when its bytes were fetched ahead of its round; undefined: {@link read} fetches it. */
  early(videoId: string, ref: FrameRef): Promise<FrameInput | undefined>;
  /**
   * The frame's input, or the record it gets instead (its object cannot yield it). Throws
   * on a read error: the caller retries a transient one and records any other.
   */
  read(videoId: string, ref: FrameRef, gets: BoundedGet): Promise<FrameRead>;
  /** Reads ahead what a video runs next (`upcoming`, in run order). */
  readAhead(videoId: string, upcoming: Iterable<FrameRef>): void;
  /** Forgets what is held for a video the worker let go. */
  closeVideo(videoId: string): Promise<void>;
  /** Lets go of everything held (the worker stops). */
  closeAll(): Promise<void>;
}

/** Frames fetched ahead of their round, and how many a round used. */
export interface FetchedAhead {
  readonly started: number;
  readonly used: number;
  readonly readAhead: { readonly started: number; readonly used: number; readonly missed: number };
  /** Segments read ahead (decision 51): GETs started, taken by a decoder, failed, dropped unused. */
  readonly segments: { readonly started: number; readonly used: number; readonly failed: number; readonly dropped: number };
}

/** What the worker runtime holds: every kind of object, behind one interface. */
export interface FrameSources extends ObjectSource {
  /**
   * Whether the object at `key` holds a span of frames decoded on read, whose frames are
   * large (a round runs them a few at a time, and its commit overlaps the next round's
   * decoding) and are decided together when its message comes; false: one frame, read whole.
   */
  spans(key: string): boolean;
  /** A receive's frame messages: frames read ahead are confirmed, and the next frames of full, consecutive receives read ahead (decision 39). `fullReceive`: a full receive's size. */
  received(frames: readonly FrameMessage[], fullReceive: number): void;
  /** Messages received ahead of their round that the worker will run: what can be fetched now is (decision 21). */
  prefetch(frames: readonly FrameMessage[]): void;
  /** Where the worker's segments decode now (the `Decoder` dimension); empty before any decoded. */
  readonly decodersInUse: DecoderPlacement[];
  readonly fetchedAhead: FetchedAhead;
}
