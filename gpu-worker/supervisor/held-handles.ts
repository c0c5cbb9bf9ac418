/**
 * The receipt handles a worker process holds, mirrored to its supervisor (decision 75), so
 * that the messages a dead worker held come back to the queue at once instead of after
 * their visibility timeout: in a FIFO queue a message in flight blocks its whole group, so
 * the dead owner's last received frame would otherwise hold its video back for up to
 * `slotQueueVisibilitySeconds`.
 *
 * The worker's slot queue is wrapped at the composition root ({@link mirroredQueue}): each
 * receive reports the handles it got before the worker sees them, each successful delete or
 * hand-back reports them gone. The supervisor keeps the set ({@link HeldHandles}) and, once
 * it has reaped the worker, sets their visibility to 0. Safe whatever the set holds: a
 * handle of a message already deleted is refused by SQS and changes nothing; a message
 * handed back that the dead worker had committed is a redelivery, which the successor
 * decides by its record (guarantee 4); and nothing is handed back before the worker is
 * certainly dead. A handle reported late (the worker died between SQS's answer and the
 * report) is simply missed: that message waits out its visibility, as before.
 */
import type { ReceivedMessage, SlotQueue } from '../../core/ingest/port.ts';

/** Where a worker reports its handles (the supervisor, over IPC or in process). */
export interface HandleSink {
  held(slot: number, receiptHandles: readonly string[]): void;
  released(slot: number, receiptHandles: readonly string[]): void;
}

/** `queue` as the worker uses it, every receipt handle it gets or lets go of reported to `sink`. */
export function mirroredQueue(queue: SlotQueue, sink: HandleSink): SlotQueue {
  return {
    send: (slot, messages) => queue.send(slot, messages),
    receive: async (slot, maxMessages, waitSeconds, abortSignal) => {
      const got: ReceivedMessage[] = await queue.receive(slot, maxMessages, waitSeconds, abortSignal);
      if (got.length > 0) sink.held(slot, got.map((m) => m.receiptHandle));
      return got;
    },
    delete: async (slot, receiptHandles) => {
      const failed = await queue.delete(slot, receiptHandles);
      // Which ones failed is not said: keep them all (handing back a deleted one is refused, harmless).
      if (failed === 0) sink.released(slot, receiptHandles);
      return failed;
    },
    extendVisibility: async (slot, receiptHandles, seconds) => {
      const refused = await queue.extendVisibility(slot, receiptHandles, seconds);
      if (seconds === 0) {
        const no = new Set(refused);
        sink.released(slot, receiptHandles.filter((h) => !no.has(h)));
      }
      return refused;
    },
    deadLetter: (slot, body, reason, groupId) => queue.deadLetter(slot, body, reason, groupId),
    dlqDepth: (slot) => queue.dlqDepth(slot),
    depth: (slot) => queue.depth(slot),
  };
}

/** The supervisor's copy of one worker's handles, by slot. */
export class HeldHandles implements HandleSink {
  private readonly bySlot = new Map<number, Set<string>>();

  held(slot: number, receiptHandles: readonly string[]): void {
    let set = this.bySlot.get(slot);
    if (!set) this.bySlot.set(slot, (set = new Set()));
    for (const h of receiptHandles) set.add(h);
  }

  released(slot: number, receiptHandles: readonly string[]): void {
    const set = this.bySlot.get(slot);
    if (!set) return;
    for (const h of receiptHandles) set.delete(h);
  }

  /** Every handle still held, by slot; empties the copy (they are handed back once). */
  take(): Map<number, string[]> {
    const out = new Map<number, string[]>();
    for (const [slot, set] of this.bySlot) if (set.size > 0) out.set(slot, [...set]);
    this.bySlot.clear();
    return out;
  }

  get size(): number {
    let n = 0;
    for (const set of this.bySlot.values()) n += set.size;
    return n;
  }
}
