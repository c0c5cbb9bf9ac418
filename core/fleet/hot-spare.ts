/**
 * The hot spare's and the standby's decisions (decision 75), pure: what a supervisor does
 * when one of its worker processes exits or freezes, and which slot a standby takes.
 *
 * A worker task runs a supervisor (gpu-worker/supervisor/) and two worker processes under
 * it: the *primary*, which holds the slot, and a *spare*, started with its model loaded and
 * waiting to be promoted. The supervisor is the only one that knows for certain that a
 * worker process died (it reaps it), so it may end that worker's slot lease at once, fenced
 * by the worker's own claim (owner and epoch: DeadOwnerRelease), hand the dead worker's
 * messages back to the queue (it mirrors their receipt handles), and promote the spare.
 *
 * A *standby* (decision 75, part 2) is a worker task on another instance, model loaded, that
 * protects every slot of the fleet: it takes a slot whose lease lapsed with nobody to report
 * the death (an instance lost with its ECS agent).
 */
import { canClaimSlot, type SlotRecord } from '../leases/lease-logic.ts';
import { EXIT_DONE, EXIT_LEASE_LOST, EXIT_PROCESSOR_FAILED } from '../config/worker-env.ts';

/** A worker process as the supervisor sees it. */
export type ChildRole = 'primary' | 'spare';

/** How a worker process ended: its exit code, or the signal that killed it. */
export interface ChildExit {
  readonly role: ChildRole;
  /** Null when a signal ended it. */
  readonly code: number | null;
  readonly signal: string | null;
}

/**
 * What the supervisor does about an exit:
 * - `failover`: the primary died (a crash, a signal, a broken processor): end its lease
 *   (fenced), hand its messages back, promote the spare, start a new spare;
 * - `replace-spare`: the spare died before it was needed: start another;
 * - `exit`: the task ends with `code` (the primary drained, idled out or found no slot, or
 *   its lease was taken by another task: nothing for a spare to take);
 * - `give-up`: too many deaths in a row: the task ends with `code`, and the janitor's relaunch
 *   (with its own backoff) takes over. A spare that cannot start is not given up on for
 *   the primary's sake: `run-without-spare` keeps the primary running alone.
 */
export type ExitVerdict =
  | { readonly kind: 'failover' }
  | { readonly kind: 'replace-spare' }
  | { readonly kind: 'run-without-spare' }
  | { readonly kind: 'exit'; readonly code: number }
  | { readonly kind: 'give-up'; readonly code: number };

/**
 * Deaths of primaries within {@link DEATH_WINDOW_MS} from which the supervisor stops
 * promoting spares. At least 3 deaths must be allowed: a poison frame takes down the owner
 * (mixed round) and two successors running it alone before the crash-loop breaker parks it
 * (crash-breaker.ts PARK_AFTER_TRIES); one more for an unrelated crash. Past it, something
 * is wrong with the task itself (GPU, driver, image), which a new task may not share.
 */
export const MAX_PRIMARY_DEATHS = 4;
/** Spare deaths (before promotion) within the window from which no new spare is started. */
export const MAX_SPARE_DEATHS = 3;
export const DEATH_WINDOW_MS = 10 * 60_000;
/** The exit code of a supervisor that gave up: a crash to the janitor. */
export const EXIT_SUPERVISOR_GAVE_UP = 1;

/**
 * The verdict on one exit. `recentDeaths` counts the deaths of the same role within
 * {@link DEATH_WINDOW_MS}, this one included (see {@link deathsWithin}); `spareReady`
 * whether a spare is there to promote (started; it loads its model while waiting).
 */
export function exitVerdict(exit: ChildExit, recentDeaths: number, spareReady: boolean): ExitVerdict {
  if (exit.role === 'spare') return recentDeaths >= MAX_SPARE_DEATHS ? { kind: 'run-without-spare' } : { kind: 'replace-spare' };
  // Ended by itself, as it would without a supervisor: the task ends with its code.
  if (exit.signal === null && (exit.code === EXIT_DONE || exit.code === EXIT_LEASE_LOST)) return { kind: 'exit', code: exit.code };
  // A crash, a kill, or a processor that broke (it drained and released; the spare has its own).
  if (recentDeaths >= MAX_PRIMARY_DEATHS) return { kind: 'give-up', code: exit.code === EXIT_PROCESSOR_FAILED ? EXIT_PROCESSOR_FAILED : EXIT_SUPERVISOR_GAVE_UP };
  if (!spareReady) return { kind: 'give-up', code: exit.code ?? EXIT_SUPERVISOR_GAVE_UP };
  return { kind: 'failover' };
}

/** The deaths at `deathsAtMs` that count at `nowMs` (within {@link DEATH_WINDOW_MS}). */
export function deathsWithin(deathsAtMs: readonly number[], nowMs: number): number {
  return deathsAtMs.filter((t) => nowMs - t < DEATH_WINDOW_MS).length;
}

/**
 * Whether the supervisor kills its primary as frozen (SIGSTOP, a wedged native call): the
 * lease it last confirmed has run out by the host's clock, the one the worker wrote it
 * with, so no skew allowance is owed. A live worker that cannot confirm its heartbeat stops
 * itself before that (slot-keeper.ts); one that did not is not working for anyone. The kill
 * makes the death certain, and only a certain death lets the supervisor end the lease and
 * promote the spare at once. Undefined expiry: not claimed yet, nothing to watch.
 */
export function frozenPrimary(lastConfirmedExpiryMs: number | undefined, nowMs: number): boolean {
  return lastConfirmedExpiryMs !== undefined && nowMs >= lastConfirmedExpiryMs;
}

/**
 * The slot a standby takes, if any: one it may claim (lapsed past the skew tolerance, or
 * ended by a stop report), that an owner held (a slot released by a drain or idle exit has
 * no owner: the router or janitor launches for it when work comes, and a standby is kept for
 * deaths), and whose videos need a worker (`videoCount` > 0). The one that lapsed first.
 */
export function standbyTarget(slots: readonly SlotRecord[], nowMs: number, o: { readonly clockSkewToleranceMs: number }): number | undefined {
  const candidates = slots.filter((s) => s.owner !== undefined && s.videoCount > 0 && canClaimSlot(s, nowMs, o));
  candidates.sort((a, b) => a.expiresAtMs - b.expiresAtMs || a.slot - b.slot);
  return candidates[0]?.slot;
}
