/**
 * The pure rules of `affinity edge` (the I/O is cli/edge/edge-command.ts):
 *
 * - {@link planFleet}: what a changed config file does to the running cameras. A camera
 *   whose settings did not change is left alone (its connection, its open segment); a
 *   changed one is restarted; a removed one is stopped (its open segment closed and
 *   uploaded); a new one started.
 * - {@link edgeEvent}: `source.stalled` / `source.resumed` as JSON, in the shape of the
 *   analytics events (core/analytics/event-schema.ts: kind, detail-type, deterministic id),
 *   so one consumer reads both the worker's (from the bus) and the edge's (from the edge's
 *   `--json` output or its log).
 * - {@link statusLine}: one console line per camera.
 */
import { DETAIL_TYPE, eventId } from '../../core/analytics/event-schema.ts';
import { formatBytes } from '../format.ts';
import type { OutageEvent } from '../video/stream-outage.ts';
import type { CameraHealth } from './camera.ts';
import { sameCamera, type CameraConfig } from './edge-config.ts';

export interface FleetPlan {
  readonly start: readonly CameraConfig[];
  /** Video ids to stop for good. */
  readonly stop: readonly string[];
  /** Stopped, then started with the new settings. */
  readonly restart: readonly CameraConfig[];
  readonly unchanged: readonly string[];
}

export function planFleet(running: ReadonlyMap<string, CameraConfig>, wanted: readonly CameraConfig[]): FleetPlan {
  const start: CameraConfig[] = [];
  const restart: CameraConfig[] = [];
  const unchanged: string[] = [];
  const keep = new Set<string>();
  for (const c of wanted) {
    keep.add(c.video);
    const now = running.get(c.video);
    if (!now) start.push(c);
    else if (sameCamera(now, c)) unchanged.push(c.video);
    else restart.push(c);
  }
  const stop = [...running.keys()].filter((v) => !keep.has(v));
  return { start, stop, restart, unchanged };
}

/** An edge event: an {@link EventItem}-shaped record without the worker's fence (`source: 'edge'`). */
export interface EdgeEvent {
  readonly type: 'event';
  readonly source: 'edge';
  readonly videoId: string;
  readonly eventId: string;
  readonly kind: OutageEvent['kind'];
  readonly detailType: string;
  /** The video's next frame number when it happened (the first frame after a resumed outage). */
  readonly frame: number;
  readonly atMs: number;
  readonly detail: Readonly<Record<string, string | number | boolean>>;
}

export function edgeEvent(videoId: string, e: OutageEvent, frame: number): EdgeEvent {
  const detail: Record<string, string | number | boolean> =
    e.kind === 'source.stalled' ? { outage: e.outage, reason: e.reason, wasUp: e.wasUp } : { outage: e.outage, outageMs: e.outageMs, attempts: e.attempts };
  return {
    type: 'event',
    source: 'edge',
    videoId,
    // `edge-` keeps the edge's ids apart from the worker's own source events of the same video
    eventId: eventId({ frame, kind: e.kind, discriminator: `edge-${e.outage}` }),
    kind: e.kind,
    detailType: DETAIL_TYPE[e.kind],
    frame,
    atMs: e.atMs,
    detail,
  };
}

/** The console line of an edge event. */
export function eventLine(e: EdgeEvent): string {
  return e.kind === 'source.stalled'
    ? `source.stalled (outage ${e.detail.outage}${e.detail.wasUp ? '' : ', never connected'}): ${e.detail.reason}`
    : `source.resumed (outage ${e.detail.outage}) after ${(Number(e.detail.outageMs) / 1000).toFixed(1)} s and ${e.detail.attempts} reconnect attempt(s), at frame ${e.frame}`;
}

/** One console line for a camera: `door-1  streaming  h264  frames 1234  ...`. */
export function statusLine(h: CameraHealth, nowMs: number, width = 12): string {
  const codec = h.codec === null ? '-' : h.transcode ? `${h.codec}>h264` : h.codec;
  const parts = [h.video.padEnd(width), h.phase.padEnd(10), codec.padEnd(5), `frames ${h.framesCaptured}`];
  if (h.spool) {
    parts.push(`uploaded ${h.spool.uploadedSegments}`);
    parts.push(`spool ${h.spool.pendingSegments} (${formatBytes(h.spool.pendingBytes)} of ${formatBytes(h.spool.maxBytes)})`);
    parts.push(`dropped ${h.spool.droppedSegments} seg/${h.spool.droppedFrames} frames`);
  }
  parts.push(`outages ${h.outages}`);
  if (h.stalledSinceMs !== null) parts.push(`down ${((nowMs - h.stalledSinceMs) / 1000).toFixed(0)} s: ${h.stalledReason}`);
  if (h.spool?.failing) parts.push(`uploads failing ${((nowMs - h.spool.failing.sinceMs) / 1000).toFixed(0)} s (${h.spool.failing.kind}): ${h.spool.failing.message}`);
  if (h.error) parts.push(`error: ${h.error}`);
  return parts.join('  ');
}
