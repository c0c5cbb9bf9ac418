/**
 * The analytics events' contract (issue 22), shared by the worker that writes them into
 * the outbox (`EVENTS_TABLE`, core/resources.ts) inside its fenced commit, the pipe that
 * delivers them from the table's stream to EventBridge (infra/), the local relay that does
 * the same on the laptop (local/), and the CLI that reads them (cli/).
 *
 * An event exists if and only if the commit that caused it landed: it is written in the
 * same transaction as the frame record (or the video's life-cycle write). Its id is
 * deterministic, so a consumer drops redeliveries by id, and a re-run of the same frames
 * (a successor after kill -9) writes the same ids.
 */

/** EventBridge `source` of every event this product publishes. */
export const EVENT_SOURCE = 'frame-affinity';

/** Rule events, raised on the in-order tracker stream (late frames raise none). */
export type RuleEventKind = 'line.crossed' | 'zone.entered' | 'zone.exited' | 'zone.dwell';
/** A video's life and its frames' ends. */
export type LifeEventKind = 'video.started' | 'video.taken-over' | 'video.completed' | 'frame.failed' | 'frame.parked' | 'rules.invalid' | 'source.stalled' | 'source.resumed';
export type EventKind = RuleEventKind | LifeEventKind;

/** EventBridge `detail-type` per kind (what users match in their rules). */
export const DETAIL_TYPE: Readonly<Record<EventKind, string>> = {
  'line.crossed': 'Line Crossed',
  'zone.entered': 'Zone Entered',
  'zone.exited': 'Zone Exited',
  'zone.dwell': 'Zone Dwell',
  'video.started': 'Video Started',
  'video.taken-over': 'Video Taken Over',
  'video.completed': 'Video Completed',
  'frame.failed': 'Frame Failed',
  'frame.parked': 'Frame Parked',
  'rules.invalid': 'Rules Invalid',
  'source.stalled': 'Source Stalled',
  'source.resumed': 'Source Resumed',
};

/** One item of the outbox table, which is also the event's `detail` on the bus. */
export interface EventItem {
  /** Partition key. */
  readonly videoId: string;
  /** Sort key: {@link eventId}, ordered by frame within a video. */
  readonly eventId: string;
  readonly kind: EventKind;
  /**
   * DETAIL_TYPE[kind], stored on the item because a pipe's target parameter can only copy a
   * value from the stream record, not map one: the bus event's `detail-type` is read from it.
   * Every writer sets it; an item without it is delivered with its kind as `detail-type`.
   */
  readonly detailType?: string;
  /** The frame that caused it (life events: the frame at which it happened, -1 if none). */
  readonly frame: number;
  /** Rule id for rule events. */
  readonly ruleId?: string;
  readonly trackId?: number;
  readonly label?: string;
  /** Kind-specific facts: direction of a crossing, dwell seconds, old/new owner and token, failure reason. */
  readonly detail?: Readonly<Record<string, string | number | boolean>>;
  /** Fencing token of the commit that wrote it. */
  readonly token: number;
  /** When the committing worker wrote it (epoch ms); not part of the id. */
  readonly atMs: number;
  /** TTL garbage collection (epoch seconds), like the results. */
  readonly ttlEpochSeconds?: number;
}

/** Frames are zero-padded in ids so that ids sort by frame. */
const FRAME_DIGITS = 10;

/** The id prefix of a frame: every event id of the frame starts with it, and ids sort by it. */
export function framePrefix(frame: number): string {
  return frame < 0 ? '-' + String(-frame).padStart(FRAME_DIGITS, '0') : String(frame).padStart(FRAME_DIGITS, '0');
}

/**
 * The deterministic event id: frame, kind, rule, track (and a discriminator for life
 * events that can happen more than once at one frame, e.g. the owner's token for a
 * take-over). Same inputs, same id, whoever commits it.
 */
export function eventId(e: { readonly frame: number; readonly kind: EventKind; readonly ruleId?: string; readonly trackId?: number; readonly discriminator?: string | number }): string {
  return [framePrefix(e.frame), e.kind, e.ruleId ?? '', e.trackId ?? '', e.discriminator ?? ''].join('#');
}

/** The start of the ids of a frame's events: a query from it reads that frame's events and those after ({@link framePrefix}). */
export const eventIdFramePrefix = framePrefix;

