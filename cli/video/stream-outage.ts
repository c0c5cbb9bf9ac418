/**
 * Outages of a live source, as the edge sees them (`affinity stream`, `affinity edge`):
 * one outage is one `source.stalled` and, when frames flow again, one `source.resumed`,
 * however many reconnect attempts it took. (Before this, `affinity stream` counted
 * attempts and reported one 20-s outage as "6 reconnect(s)": issue 41.)
 *
 * The camera is up from the first frame of a connection (an RTSP server that answers
 * DESCRIBE and then sends nothing is not back yet) until a read fails, ends or stays
 * silent; a camera that never answered is stalled from its first failed attempt. Pure:
 * the caller feeds what capture reports and forwards the events it returns.
 */

export type OutagePhase = 'connecting' | 'up' | 'stalled';

export interface OutageState {
  readonly phase: OutagePhase;
  /** Outages begun so far (each one's events carry its number). */
  readonly outages: number;
  /** Reconnect attempts in all, and in the current outage. */
  readonly attempts: number;
  readonly attemptsThisOutage: number;
  /** When the current outage began (epoch ms), when stalled. */
  readonly sinceMs: number | null;
  /** Why the current outage began (FFmpeg's words), when stalled. */
  readonly reason: string | null;
}

export interface StalledEvent {
  readonly kind: 'source.stalled';
  /** 1 for the source's first outage, then 2, ... */
  readonly outage: number;
  readonly reason: string;
  readonly atMs: number;
  /** Whether frames had ever come on this run (false: the camera never answered). */
  readonly wasUp: boolean;
}

export interface ResumedEvent {
  readonly kind: 'source.resumed';
  readonly outage: number;
  readonly atMs: number;
  /** Wall time from the stall to the first frame after it. */
  readonly outageMs: number;
  /** Reconnect attempts the outage took. */
  readonly attempts: number;
}

export type OutageEvent = StalledEvent | ResumedEvent;

export function initialOutageState(): OutageState {
  return { phase: 'connecting', outages: 0, attempts: 0, attemptsThisOutage: 0, sinceMs: null, reason: null };
}

/** A read failed, ended or a connection could not be opened (capture's reconnect). */
export function noteDrop(s: OutageState, reason: string, nowMs: number): { readonly state: OutageState; readonly event: StalledEvent | null } {
  const attempts = s.attempts + 1;
  if (s.phase === 'stalled') return { state: { ...s, attempts, attemptsThisOutage: s.attemptsThisOutage + 1 }, event: null };
  const outage = s.outages + 1;
  return {
    state: { phase: 'stalled', outages: outage, attempts, attemptsThisOutage: 1, sinceMs: nowMs, reason },
    event: { kind: 'source.stalled', outage, reason, atMs: nowMs, wasUp: s.phase === 'up' },
  };
}

/** The first frame of a connection was written. */
export function noteFrames(s: OutageState, nowMs: number): { readonly state: OutageState; readonly event: ResumedEvent | null } {
  if (s.phase === 'up') return { state: s, event: null };
  const up: OutageState = { ...s, phase: 'up', attemptsThisOutage: 0, sinceMs: null, reason: null };
  if (s.phase === 'connecting') return { state: up, event: null };
  return { state: up, event: { kind: 'source.resumed', outage: s.outages, atMs: nowMs, outageMs: Math.max(0, nowMs - (s.sinceMs ?? nowMs)), attempts: s.attemptsThisOutage } };
}

/** "1 outage (6 reconnect attempts)" for a summary line; empty when nothing dropped. */
export function outageSummary(s: OutageState): string {
  if (s.outages === 0) return '';
  return `${s.outages} outage(s) (${s.attempts} reconnect attempt(s))`;
}
