/**
 * One launch of one slot, the same for the router and the janitor: take the grant, call
 * the launcher, and check the outcome. A launch that did not happen never holds the
 * slot: its grant is withdrawn (a conditional write on the granted launchSeq) with a
 * jittered backoff, and `TaskLaunchFailures` is counted with the dimension `Reason`
 * (see {@link LaunchFailureReason}) for every failed outcome, not only for exceptions.
 * A launch that happened records its task id on the slot, so the janitor can ask the
 * launcher about it instead of waiting out `taskStartGraceSeconds`.
 */
import type { Tunables } from '../config.ts';
import { launchRetryDelayMs, type SlotRecord } from '../leases/lease-logic.ts';
import type { LaunchGrants } from '../leases/port.ts';
import type { LaunchFailureReason, LogSink, MetricSink, TaskLauncher } from '../ports.ts';

/**
 * Whether a slot's last launch grant was never followed by a heartbeat. Asked of the slot
 * as read before a new grant succeeded (which needs the previous grant's
 * `taskStartGraceSeconds` to have run out, or a heartbeat since): true means the task
 * launched then did not come up within the grace, the signal of the task-start alarm.
 * A slot whose task ran and then stopped (a crash, an idle exit) heartbeated after its
 * grant, so replacing it is not a start timeout; a withdrawn grant reads 0.
 */
export function startTimedOut(s: Pick<SlotRecord, 'launchRequestedAtMs' | 'heartbeatAtMs'>): boolean {
  return s.launchRequestedAtMs > 0 && s.launchRequestedAtMs > s.heartbeatAtMs;
}

export interface SlotLaunchDeps {
  readonly leases: LaunchGrants;
  readonly launcher: TaskLauncher;
  readonly tunables: Tunables;
  readonly metrics: MetricSink;
  readonly log: LogSink;
  readonly now: () => number;
  /** For the backoff's jitter; Math.random by default. */
  readonly random?: () => number;
  /** The calling service's metric names (router.* or janitor.*). */
  readonly names: { readonly taskLaunchFailures: string; readonly taskStartTimeouts: string };
}

export type SlotLaunchOutcome =
  /** Someone else holds a grant in grace, the slot came alive, or a backoff runs: nothing was called. */
  | { readonly kind: 'not-granted' }
  | { readonly kind: 'launched'; readonly launchSeq: number; readonly taskId?: string }
  /**
   * The launcher refused for the cluster's PROVISIONING quota: nothing failed, the grant is
   * withdrawn (retryable from `retryAtMs`, one janitor period on) and the launch queued for
   * the janitor, which starts it within `maxProvisioningTasks`.
   */
  | { readonly kind: 'deferred'; readonly launchSeq: number; readonly withdrawn: boolean; readonly retryAtMs: number }
  | {
      readonly kind: 'failed';
      readonly launchSeq: number;
      readonly reason: LaunchFailureReason;
      /** False when the withdrawal was refused (a newer grant) or failed (the janitor then voids the grant). */
      readonly withdrawn: boolean;
      readonly retryAtMs: number;
    };

/**
 * Grants, launches and checks one launch of slot `s` (as read by the caller). Throws
 * only when the grant itself cannot be written (a DynamoDB error): nothing was launched.
 */
export async function launchSlot(d: SlotLaunchDeps, s: SlotRecord, mode: 'if-dead' | 'force', why: string): Promise<SlotLaunchOutcome> {
  const launchSeq = await d.leases.requestLaunch(s.slot, d.now(), d.tunables, mode);
  if (launchSeq === undefined) return { kind: 'not-granted' };
  if (startTimedOut(s)) {
    d.metrics.count(d.names.taskStartTimeouts);
    d.log.warn('previous task for the slot never heartbeated within the start grace', { slot: s.slot, launchSeq, graceSeconds: d.tunables.taskStartGraceSeconds });
  }
  let reason: LaunchFailureReason;
  let detail: string | undefined;
  try {
    const r = await d.launcher.launch({ slot: s.slot, launchSeq, reason: why });
    if (r.launched) {
      d.log.info('task launched', { slot: s.slot, launchSeq, reason: why, taskId: r.taskId });
      if (r.taskId !== undefined) await recordTask(d, s.slot, launchSeq, r.taskId);
      return { kind: 'launched', launchSeq, ...(r.taskId !== undefined ? { taskId: r.taskId } : {}) };
    }
    reason = r.reason ?? 'error';
    detail = r.detail;
    if (reason === 'provisioning-quota') return deferLaunch(d, s, launchSeq, detail);
  } catch (e) {
    // The port forbids throwing; count it like any failed outcome all the same.
    reason = 'exception';
    detail = String(e);
  }
  return failedLaunch(d, s, launchSeq, reason, detail);
}

/**
 * Counts and logs a launch that did not happen, and withdraws its grant with a jittered
 * backoff sized by the slot's failures in a row (or at `retryAtMs`). Also used by the
 * janitor for a granted task that stopped before its first heartbeat.
 */
export async function failedLaunch(
  d: Omit<SlotLaunchDeps, 'launcher'>,
  s: SlotRecord,
  launchSeq: number,
  reason: LaunchFailureReason,
  detail: string | undefined,
  retryAtMs: number = d.now() + launchRetryDelayMs(s.launchFailures + 1, d.tunables, d.random),
): Promise<SlotLaunchOutcome & { kind: 'failed' }> {
  const now = d.now();
  countLaunchFailure(d.metrics, d.names.taskLaunchFailures, reason);
  let withdrawn = false;
  try {
    withdrawn = await d.leases.withdrawLaunch(s.slot, launchSeq, retryAtMs);
  } catch (e) {
    d.log.error('could not withdraw the grant of a failed launch; the janitor voids it within one period', { slot: s.slot, launchSeq, error: String(e) });
  }
  d.log.warn('task launch failed; grant withdrawn for a retry', { slot: s.slot, launchSeq, reason, detail, withdrawn, retryInMs: retryAtMs - now });
  return { kind: 'failed', launchSeq, reason, withdrawn, retryAtMs };
}

/**
 * A launch the cluster's PROVISIONING quota refused: queued, not failed. The grant is
 * withdrawn so that the slot does not count as launching, retryable one janitor period on
 * (the janitor's next run launches it within its budget; a router batch before then
 * leaves it alone). The caller counts it as `LaunchesDeferred`, never as a failure.
 */
async function deferLaunch(d: SlotLaunchDeps, s: SlotRecord, launchSeq: number, detail: string | undefined): Promise<SlotLaunchOutcome & { kind: 'deferred' }> {
  const retryAtMs = d.now() + d.tunables.janitorIntervalSeconds * 1000;
  let withdrawn = false;
  try {
    withdrawn = await d.leases.withdrawLaunch(s.slot, launchSeq, retryAtMs);
  } catch (e) {
    d.log.error('could not withdraw the grant of a deferred launch; the janitor voids it within one period', { slot: s.slot, launchSeq, error: String(e) });
  }
  d.log.info('task launch deferred: the cluster is at its PROVISIONING quota; the janitor starts it later', { slot: s.slot, launchSeq, detail, withdrawn });
  return { kind: 'deferred', launchSeq, withdrawn, retryAtMs };
}

/**
 * Counts one launch that did not happen twice: without dimensions (the series the
 * TaskLaunchFailures alarm reads, per service) and with `Reason` (to see why on the
 * dashboard or in Logs Insights).
 */
export function countLaunchFailure(metrics: MetricSink, name: string, reason: LaunchFailureReason): void {
  metrics.count(name);
  metrics.count(name, 1, { Reason: reason });
}

async function recordTask(d: SlotLaunchDeps, slot: number, launchSeq: number, taskId: string): Promise<void> {
  try {
    await d.leases.recordLaunchedTask(slot, launchSeq, taskId);
  } catch (e) {
    // The task runs; without its id the janitor voids the grant after one period and
    // launches again (two tasks, which fencing keeps apart: the loser exits).
    d.log.warn('could not record the launched task on its slot', { slot, launchSeq, taskId, error: String(e) });
  }
}

/** Runs `work` over `items` with at most `limit` in flight; results in input order. */
export async function mapBounded<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]!);
    }
  });
  await Promise.all(lanes);
  return out;
}
