/**
 * A standby's wait (decision 75): a worker task on an instance that runs no worker (ECS
 * placement), its model loaded, that protects every slot of the fleet against the loss of
 * an instance, which nobody reports (its ECS agent goes with it).
 *
 * It holds a *seat*, a lease item numbered past the slots (`slotCount + i`, i <
 * `standbyWorkers`), by heartbeat as a worker holds a slot, so the janitor sees a lost
 * standby (its seat lapses, or its task-stopped event comes) and launches another for the
 * seat. Meanwhile it reads the slot leases every `standbyPollMs` (one BatchGetItem per 100
 * slots) and, when one lapsed with an owner and videos (hot-spare.ts `standbyTarget`),
 * gives its seat up and names that slot: the worker then claims it, conditionally, like
 * any successor (the skew tolerance included: nobody saw this death), and adopts its
 * videos from their checkpoints. Two standbys racing for a slot: one claim wins; the other
 * worker's claim waits and exits, and the janitor replaces both seats.
 */
import type { Tunables } from '../../core/config.ts';
import type { LogSink, MetricSink } from '../../core/ports.ts';
import type { SlotLeases } from '../../core/leases/port.ts';
import { standbyTarget } from '../../core/fleet/hot-spare.ts';
import { sleep } from '../../core/async.ts';
import { errorText } from '../../core/errors.ts';
import { SlotKeeper } from '../runtime/slot-keeper.ts';

export interface StandbyWatchDeps {
  /** The seat's owner id, `<task's worker id>/seat` (not the worker's: the seat and the slot are two claims; the janitor's task-stopped report, naming the task's id, ends it). */
  readonly workerId: string;
  /** The seat: `slotCount + i`. */
  readonly seat: number;
  readonly tunables: Tunables;
  readonly leases: SlotLeases;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  readonly now: () => number;
}

/** Whether `slot` (as the launcher passes it) is a standby's seat rather than a worker slot. */
export function isStandbySeat(slot: number | undefined, t: Pick<Tunables, 'slotCount'>): boolean {
  return slot !== undefined && slot >= t.slotCount;
}

export class StandbyWatch {
  private readonly d: StandbyWatchDeps;

  constructor(deps: StandbyWatchDeps) {
    this.d = deps;
  }

  /** Holds the seat until a slot needs this standby (its number), or `shouldStop` (then `'stop'`). */
  async wait(shouldStop: () => boolean): Promise<{ readonly slot: number } | 'stop'> {
    const { tunables: t, leases, log } = this.d;
    const keeper = new SlotKeeper({ workerId: this.d.workerId, slot: this.d.seat, tunables: t, leases, metrics: this.d.metrics, log, now: this.d.now, onLost: () => undefined });
    if (!(await keeper.claim(shouldStop))) return 'stop';
    log.info('standby: seat held; watching the slot leases', { seat: this.d.seat, slots: t.slotCount, pollMs: t.standbyPollMs });
    keeper.startHeartbeat();
    try {
      while (!shouldStop()) {
        if (keeper.lost) {
          log.warn('standby: seat lost; exiting', { seat: this.d.seat, reason: keeper.lost });
          return 'stop';
        }
        await sleep(t.standbyPollMs);
        let target: number | undefined;
        try {
          target = standbyTarget(await leases.getSlots(t.slotCount), this.d.now(), t);
        } catch (e) {
          log.warn('standby: reading the slot leases failed; retrying', { error: errorText(e) });
          continue;
        }
        if (target !== undefined) {
          log.warn('standby: slot lease lapsed with nobody to report it; taking it', { seat: this.d.seat, slot: target });
          return { slot: target };
        }
      }
      return 'stop';
    } finally {
      keeper.stopHeartbeat();
      // The seat is free for the janitor's replacement at once.
      await keeper.release();
    }
  }
}
