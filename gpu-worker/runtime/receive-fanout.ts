/**
 * How many receives to add to one that just came back (decision 30), pure.
 *
 * An SQS FIFO receive fills itself from one message group first, in order, and a group
 * is blocked while any of its messages is in flight. Behind a backlog one receive of 10
 * therefore brings about one video's frames, and a worker with one receive per round
 * feeds its GPU one video at a time. A full first receive is the sign of a backlog: then
 * the worker sends more receives at once (without waiting: the queue has messages), one
 * per video it owns that this receive did not bring and that is not committing (those
 * groups are blocked and would come back empty), at most `receiveConcurrency` in all.
 * Before any video is owned (a fresh worker behind a backlog) it sends them all. A first
 * receive that was not full drained what was visible: no more are sent, so a live rate
 * pays no empty receives.
 *
 * At most half the owned videos go into one round's receives (decision 38): a video's next
 * frames cannot be received until the commit of its last ones has deleted them, so a round
 * that took every video would leave the next one nothing to receive until its commit
 * landed, and the GPU would wait out every commit, delete and receive. With two cohorts,
 * one is received, fetched and inferred while the other commits.
 */

/** What the decision needs. */
export interface FanoutInput {
  /** Messages the first receive brought. */
  readonly received: number;
  /** Most messages one receive may bring (SQS: 10). */
  readonly maxMessages: number;
  /** `receiveConcurrency`: most receives in flight at once, the first included. */
  readonly receiveConcurrency: number;
  /** Videos owned, not committing, whose frames the first receive did not bring; undefined when none is owned yet. */
  readonly idleVideos: number | undefined;
  /** Videos owned now (0 or undefined: none yet, no cohort cap). */
  readonly ownedVideos?: number;
}

/** Extra receives to send now (0 = none). */
export function extraReceives(i: FanoutInput): number {
  const room = Math.max(0, i.receiveConcurrency - 1);
  if (room === 0 || i.received < i.maxMessages) return 0;
  if (i.idleVideos === undefined) return room;
  // Two cohorts (decision 38): the first receive and its extras bring at most half the owned videos.
  const cohort = i.ownedVideos ? Math.max(0, Math.ceil(i.ownedVideos / 2) - 1) : Infinity;
  return Math.min(room, cohort, Math.max(0, i.idleVideos));
}
