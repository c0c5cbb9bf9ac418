/**
 * The worker loop's decisions, as pure functions of what it knows: whether a receive
 * found a backlog, whether to receive ahead, whether this round's commit overlaps the
 * next round or is awaited, how long to poll, how long to gather before the next receive
 * at a live rate, whether to pause receiving, and whether the worker may exit for idleness. The loop (worker.ts) carries them out.
 */

/** Most messages one receive asks for (SQS's limit); a receive that fills it finds a backlog. */
export const RECEIVE_MAX_MESSAGES = 10;
/** Longest long poll; it also bounds how long a drain or a lost lease waits for the receive in progress. */
export const MAX_POLL_WAIT_SECONDS = 5;
/**
 * Rounds that do not receive ahead after one whose receive ahead found nothing: each empty
 * one is an extra SQS call (a lone busy video, whose group its own round blocks, never has
 * messages ahead), so a queue without other videos' messages pays for one in four rounds.
 */
export const AHEAD_SKIP_ROUNDS_AFTER_EMPTY = 3;

/** What the loop knows when it decides how to run a round. */
export interface RoundFacts {
  /** Messages the round's receive brought. */
  readonly received: number;
  /** A receive ahead is already in flight. */
  readonly aheadInFlight: boolean;
  /** Rounds still to skip receiving ahead after an empty one. */
  readonly aheadSkips: number;
  /** Drain requested, or the slot lease lost. */
  readonly ending: boolean;
  /** Messages are held back from acceptance because the store could not be reached. */
  readonly storeDown: boolean;
  /**
   * The receive brought encoded segments (decision 51): each is many frames, so a round of
   * a few segments keeps the GPU busy for hundreds of ms, and the next round should not
   * wait for this one's commit and delete (the segments that came in meanwhile are
   * already late by a round). Their commit overlaps the next round, as behind a backlog.
   * No receive ahead for them: at a live rate its short polls mostly come back empty
   * (measured: 10 times the receives for a worse p99).
   */
  readonly segments?: boolean;
}

export interface RoundDecision {
  /**
   * A full receive means a backlog: only then do rounds overlap and receive ahead. At a
   * live rate a receive after the round finds more messages than one during it, and the
   * receive made while a commit still blocks its videos' groups would bring only the
   * other videos: rounds (and commits, deletes, receives) would halve in size for nothing.
   */
  readonly backlog: boolean;
  /** Start receiving the next round's messages (and fetching their frames) now. */
  readonly receiveAhead: boolean;
  /** Rounds to skip receiving ahead from now on. */
  readonly aheadSkips: number;
  /** Whether this round's commit runs while the next round is processed, or is awaited. */
  readonly commit: 'overlap' | 'await';
}

export function decideRound(f: RoundFacts): RoundDecision {
  const backlog = f.received >= RECEIVE_MAX_MESSAGES;
  const mayAhead = backlog && !f.aheadInFlight && !f.ending && !f.storeDown;
  const skip = mayAhead && f.aheadSkips > 0;
  return {
    backlog,
    receiveAhead: mayAhead && !skip,
    aheadSkips: skip ? f.aheadSkips - 1 : f.aheadSkips,
    commit: (backlog || f.segments === true) && !f.storeDown ? 'overlap' : 'await',
  };
}

/** Rounds to skip receiving ahead after a receive ahead that brought `received` messages. */
export function aheadSkipsAfter(received: number): number {
  return received === 0 ? AHEAD_SKIP_ROUNDS_AFTER_EMPTY : 0;
}

/**
 * Long-poll unless a video has work due sooner; never spin when the last round did
 * nothing. `wakeTimesMs` are the owned videos' next wake-ups (undefined: none).
 */
export function pollWaitSeconds(wakeTimesMs: readonly (number | undefined)[], nowMs: number, idle: boolean): number {
  let soonestMs = Infinity;
  for (const t of wakeTimesMs) if (t !== undefined) soonestMs = Math.min(soonestMs, t);
  if (soonestMs === Infinity) return MAX_POLL_WAIT_SECONDS;
  const wait = Math.min(MAX_POLL_WAIT_SECONDS, Math.max(0, Math.ceil((soonestMs - nowMs) / 1000)));
  return idle ? Math.max(1, wait) : wait;
}

/** What the loop knows when it decides whether to gather before its next receive. */
export interface GatherFacts {
  /** `receiveGatherMs`: the shortest spacing of receives at a live rate; 0 = off. */
  readonly receiveGatherMs: number;
  /** The last receive (slot-inbox.ts): when it returned, what it brought, how long its oldest message had waited; undefined before the first. */
  readonly last: { readonly atMs: number; readonly count: number; readonly oldestAgeMs: number | undefined } | undefined;
  /** The owned videos' next wake-ups (reorder deadlines; undefined: none). */
  readonly wakeTimesMs: readonly (number | undefined)[];
  readonly nowMs: number;
  /** Drain requested, or the slot lease lost. */
  readonly ending: boolean;
  /** Messages wait for the store, or a commit answer is in doubt. */
  readonly storeDown: boolean;
}

/**
 * How long to wait before the next receive, so that at a live rate one receive, one
 * delete batch and one commit carry the frames of several videos instead of one each
 * (decision 31). The wait runs after the round's commit and delete, so no message is held
 * and no FIFO group blocked by it: the frames simply wait in the queue. It ends
 * `receiveGatherMs` after the last receive returned (the round's own time counts) and
 * is 0, so nothing is delayed, when:
 * - it is off, the loop is ending (drain, lost lease), the store is down, or nothing was received yet;
 * - the last receive brought nothing (idle: the long poll takes the next frame at once) or
 *   a full batch (a backlog: rounds already carry all they can);
 * - the last receive's oldest message had already waited `receiveGatherMs` in the queue
 *   (the worker is behind the upload rate: gathering would only add latency);
 * and it never lasts past a video's due wake-up.
 */
export function gatherWaitMs(f: GatherFacts): number {
  const last = f.last;
  if (f.receiveGatherMs <= 0 || f.ending || f.storeDown || !last) return 0;
  if (last.count === 0 || last.count >= RECEIVE_MAX_MESSAGES) return 0;
  if (last.oldestAgeMs !== undefined && last.oldestAgeMs >= f.receiveGatherMs) return 0;
  let waitMs = Math.max(0, last.atMs + f.receiveGatherMs - f.nowMs);
  for (const t of f.wakeTimesMs) if (t !== undefined) waitMs = Math.min(waitMs, Math.max(0, t - f.nowMs));
  return waitMs;
}

/** Backoff before the store is tried again while it cannot be reached: doubles per attempt, capped. */
export const STORE_RETRY_BASE_MS = 500;
export const STORE_RETRY_MAX_MS = 10_000;

/**
 * What to do while messages wait for the store (DynamoDB) to answer: receive nothing new
 * (a worker that keeps receiving during an outage only collects messages it cannot
 * place), and retry after a backoff. Receives are what SQS's redrive counts, so a
 * paused worker walks nothing towards a DLQ however long the outage lasts.
 */
export function storeOutageWait(attempts: number): { receive: false; retryInMs: number } {
  return { receive: false, retryInMs: Math.min(STORE_RETRY_MAX_MS, STORE_RETRY_BASE_MS * 2 ** Math.max(0, attempts - 1)) };
}

/** What decides an idle exit before the pinned index is asked. */
export interface IdleFacts {
  readonly idleExitSeconds: number;
  readonly ownedVideos: number;
  readonly heldMessages: number;
  readonly lastMessageAtMs: number;
  readonly nowMs: number;
}

/**
 * Whether the worker may look at exiting for idleness: the feature is on, it owns no
 * video and holds no message, and nothing arrived for `workerIdleExitSeconds`. The caller
 * then adopts any video still pinned to the slot, and exits only if none is left.
 */
export function idleExitCandidate(f: IdleFacts): boolean {
  if (f.idleExitSeconds === 0 || f.ownedVideos > 0 || f.heldMessages > 0) return false;
  return f.nowMs - f.lastMessageAtMs >= f.idleExitSeconds * 1000;
}
