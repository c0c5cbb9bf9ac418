/**
 * The fleet-wide slot-DLQ gauge (`SlotDlqMessages`): one number for every slot DLQ, so one
 * alarm covers them all; its way back is `affinity redrive`. The janitor publishes it at
 * each scheduled run; which DLQs a run reads is a pure rule ({@link slotDlqsToRead}), the
 * reading and summing is {@link slotDlqMessages}.
 */
import type { Tunables } from '../config.ts';
import type { SlotRecord } from '../leases/lease-logic.ts';
import type { SlotQueue } from '../ingest/port.ts';
import type { LogSink } from '../ports.ts';
import { QUEUE_SWEEP_SLOTS_PER_RUN, inQueueSweep } from './queue-sweep.ts';

/** What the gauge needs of the janitor's dependencies. */
export interface SlotDlqGaugeDeps {
  readonly tunables: Pick<Tunables, 'slotCount' | 'janitorIntervalSeconds' | 'slotLeaseTtlSeconds'>;
  readonly queues: Pick<SlotQueue, 'dlqDepth'>;
  readonly log: LogSink;
}

/**
 * The slots whose DLQ the run at `nowMs` reads: those owned within the last two janitor
 * periods plus a lease TTL (a slot DLQ gains messages only while a worker receives from
 * its slot, or parks a malformed message, so every arrival is seen at once), and those of
 * the slots in this run's queue sweep ({@link inQueueSweep}), so a message left in the DLQ
 * of a slot that went idle keeps being counted: at every run up to
 * {@link QUEUE_SWEEP_SLOTS_PER_RUN} slots (every DLQ is read each run, the gauge never
 * clears while a message is there), once every ceil(slotCount / 100) runs beyond (an
 * alarm on the gauge's Maximum over that many periods stays up). At most
 * {@link QUEUE_SWEEP_SLOTS_PER_RUN} slots besides the recently owned ones.
 */
export function slotDlqsToRead(
  slots: readonly SlotRecord[],
  nowMs: number,
  t: Pick<Tunables, 'slotCount' | 'janitorIntervalSeconds' | 'slotLeaseTtlSeconds'>,
): SlotRecord[] {
  const lookbackMs = (2 * t.janitorIntervalSeconds + t.slotLeaseTtlSeconds) * 1000;
  return slots.filter((s) => (s.heartbeatAtMs > 0 && nowMs - s.heartbeatAtMs <= lookbackMs) || inQueueSweep(s.slot, nowMs, t));
}

/**
 * Messages visible in the slot DLQs read this run ({@link slotDlqsToRead}), read at once.
 * A failed read counts as 0 for this run (logged with its slot).
 */
export async function slotDlqMessages(d: SlotDlqGaugeDeps, slots: readonly SlotRecord[], nowMs: number): Promise<number> {
  const depths = await Promise.all(
    slotDlqsToRead(slots, nowMs, d.tunables).map(async (s) => {
      try {
        return await d.queues.dlqDepth(s.slot);
      } catch (e) {
        d.log.warn('could not read a slot DLQ depth', { slot: s.slot, error: String(e) });
        return 0;
      }
    }),
  );
  return depths.reduce((sum, n) => sum + n, 0);
}
