/**
 * A worker task reported stopped (an ECS "Task State Change" event): what the report says
 * ({@link stoppedSlotOf}), whether the stopped task can have held its slot
 * ({@link WORKER_EXITS_WITHOUT_LEASE}), ending its lease at once so a replacement claims
 * without waiting for the TTL ({@link expireStoppedOwner}), and whether the slot is still
 * the stopped task's to replace ({@link stoppedTaskHeldSlot}). The janitor's task-stopped
 * run (core/fleet/janitor.ts) is these steps around its launch.
 */
import { EXIT_LEASE_LOST, WORKER_ENV } from '../config.ts';
import { isSlotLive, type SlotRecord } from '../leases/lease-logic.ts';
import type { LeaseTable } from '../leases/port.ts';
import type { LogSink } from '../ports.ts';

export interface StoppedTask {
  readonly slot: number;
  readonly stoppedAtMs: number;
  /** The stopped task's worker id (its `WORKER_ID`), when the report carries it. */
  readonly workerId?: string;
  /** The worker container's exit code, when known. */
  readonly exitCode?: number;
}

/**
 * Exit codes of a worker that was not holding its slot when it stopped: 0 (drained and
 * released the slot, or never claimed one) and 3 (lease lost; gpu-worker/main.ts's
 * EXIT_LEASE_LOST). Their stop says nothing about the slot's current owner.
 */
export const WORKER_EXITS_WITHOUT_LEASE: readonly number[] = [0, EXIT_LEASE_LOST];

/** What became of the stopped task's lease: ended now, not its to end, or not known (the write failed). */
export type StoppedLeaseExpiry = 'expired' | 'not-held' | 'failed';

/** What ending a stopped task's lease needs of the janitor's dependencies. */
export interface StoppedOwnerDeps {
  readonly leases: Pick<LeaseTable, 'expireStoppedOwner'>;
  readonly log: LogSink;
  readonly now: () => number;
}

/**
 * Expires the slot lease of a task reported stopped, if that task still held it: the
 * owner must have claimed before the stop (and be the stopped worker, when the report
 * names it). A task that exited without its lease (drained, or lease lost) is skipped.
 */
export async function expireStoppedOwner(d: StoppedOwnerDeps, stopped: StoppedTask): Promise<StoppedLeaseExpiry> {
  if (stopped.exitCode !== undefined && WORKER_EXITS_WITHOUT_LEASE.includes(stopped.exitCode)) return 'not-held';
  try {
    const expired = await d.leases.expireStoppedOwner(stopped.slot, stopped.stoppedAtMs, d.now(), stopped.workerId);
    if (expired) d.log.info('slot lease of stopped task expired', { slot: stopped.slot, stoppedAtMs: stopped.stoppedAtMs, workerId: stopped.workerId });
    return expired ? 'expired' : 'not-held';
  } catch (e) {
    // The TTL still ends the lease: failover is slower, not wrong.
    d.log.warn('could not expire the slot lease of a stopped task', { slot: stopped.slot, error: String(e) });
    return 'failed';
  }
}

/**
 * Whether the stopped task held slot `s` (read after the expiry), so its replacement is
 * launched even though the lease may look live: its lease is expired now (or, if that
 * write failed, its owner has not heartbeated since the stop). A slot still live after a
 * refused expiry has another owner: nothing to replace.
 */
export function stoppedTaskHeldSlot(s: SlotRecord, nowMs: number, expiry: StoppedLeaseExpiry, stoppedAtMs: number): boolean {
  return !isSlotLive(s, nowMs) || (expiry === 'failed' && !(s.heartbeatAtMs > stoppedAtMs));
}

interface EcsTaskStateChange {
  'detail-type'?: string;
  time?: string;
  detail?: {
    lastStatus?: string;
    startedBy?: string;
    stoppedAt?: string;
    executionStoppedAt?: string;
    containers?: { exitCode?: number }[];
    overrides?: { containerOverrides?: { environment?: { name?: string; value?: string }[] }[] };
  };
}

/**
 * Reads an ECS "Task State Change" event for a stopped worker task (startedBy = slot-N):
 * its slot; when it stopped (`executionStoppedAt`, when the container stopped, else
 * `stoppedAt`, else the event time); and, where present, the worker's exit code and its
 * `WORKER_ID` from the container overrides.
 */
export function stoppedSlotOf(event: unknown): StoppedTask | undefined {
  const e = event as EcsTaskStateChange;
  if (e?.['detail-type'] !== 'ECS Task State Change' || e.detail?.lastStatus !== 'STOPPED') return undefined;
  const m = /^slot-(\d+)$/.exec(e.detail.startedBy ?? '');
  if (!m) return undefined;
  const times = [e.detail.executionStoppedAt, e.detail.stoppedAt, e.time].map((x) => Date.parse(x ?? '')).filter(Number.isFinite);
  const exitCodes = (e.detail.containers ?? []).map((c) => c.exitCode).filter((c): c is number => typeof c === 'number');
  const workerIds = (e.detail.overrides?.containerOverrides ?? []).flatMap((c) => c.environment ?? []).filter((v) => v.name === WORKER_ENV.workerId && v.value);
  return {
    slot: Number(m[1]),
    stoppedAtMs: times[0] ?? Date.now(),
    ...(exitCodes.length === 1 ? { exitCode: exitCodes[0]! } : {}),
    ...(workerIds.length === 1 ? { workerId: workerIds[0]!.value! } : {}),
  };
}
