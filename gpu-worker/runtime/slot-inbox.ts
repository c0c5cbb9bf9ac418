/**
 * The worker's side of its slot queue: every receipt handle the process holds lives here,
 * from receive to delete, hand-back, dead-letter or forward.
 *
 * - Each message is parsed once, when it arrives.
 * - One visibility keeper covers every held handle: a handle is extended only when its
 *   visibility is about to run out, so a message that waits in this process (a video
 *   backing off, the store unreachable) stays invisible for as long as it is held, and
 *   the normal path (received, committed, deleted within one timeout) pays no call.
 *   A handle SQS refuses to extend (deleted, expired) is dropped and counted.
 * - Fan-out (decision 30): a receive that comes back full is joined by more receives at
 *   once, one per idle video (receive-fanout.ts), so a round holds several videos' frames
 *   although a FIFO receive brings about one group's.
 * - Receive ahead: while a round runs behind a backlog, the next messages are received
 *   and the frame sources fetch what they can of them (gpu-worker/sources/: an image's
 *   bytes, decoded ahead through the prefetch's callback), but only frames the worker says
 *   it will run.
 * - Read ahead (decision 39): each receive is shown to the frame sources, which confirm
 *   what they read ahead and, for 10 consecutive images of a video, read its next frames
 *   by predicted key, before their messages can be received.
 */
import type { SlotContext } from './slot-context.ts';
import { errorText } from '../../core/errors.ts';
import type { Tunables } from '../../core/config.ts';
import { parseSlotMessage, type FrameMessage, type SlotMessage } from '../../core/ingest/messages.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import type { LogSink, MetricSink } from '../../core/ports.ts';
import type { ReceivedMessage, SlotQueue } from '../../core/ingest/port.ts';
import type { FrameSources } from '../sources/port.ts';
import { sleep } from '../../core/async.ts';
import { extraReceives } from './receive-fanout.ts';

/** Most messages one receive brings (SQS's limit). */
const RECEIVE_MAX_MESSAGES = 10;

/** A received message, parsed once. */
export interface InboxMessage {
  readonly handle: string;
  readonly body: string;
  /** Undefined when the body is not a slot message (dead-lettered as malformed). */
  readonly msg: SlotMessage | undefined;
}

export interface SlotInboxDeps {
  /** The slot whose queue this is (its number, read from the fence), and the worker's clock. */
  readonly slot: Pick<SlotContext, 'fence' | 'now'>;
  readonly queues: Pick<SlotQueue, 'receive' | 'delete' | 'extendVisibility' | 'deadLetter' | 'send'>;
  readonly tunables: Pick<Tunables, 'slotQueueVisibilitySeconds'> & Partial<Pick<Tunables, 'receiveConcurrency'>>;
  /** Shown each receive's frames, and those received ahead the worker will run (gpu-worker/sources/). */
  readonly sources: Pick<FrameSources, 'received' | 'prefetch'>;
  /**
   * Owned videos that are not committing and not among `received` (their groups may hold
   * messages); undefined when none is owned yet. Absent: no fan-out.
   */
  readonly idleVideos?: (received: ReadonlySet<string>) => number | undefined;
  readonly ownedVideos?: () => number;
  readonly metrics: MetricSink;
  readonly log: LogSink;
}

/** How often the keeper looks for handles about to become visible, ms. */
const KEEPER_TICK_MS = 500;
/** Longest visibility SQS accepts, seconds. */
const MAX_VISIBILITY_SECONDS = 43_200;

/** What the last receive brought: the facts the gather wait is decided on (round-policy.ts, `gatherWaitMs`). */
export interface LastReceive {
  /** When it returned, epoch ms. */
  readonly atMs: number;
  /** Messages it brought. */
  readonly count: number;
  /** How long the oldest of them had waited in the queue, ms (undefined: none, or no send time). */
  readonly oldestAgeMs: number | undefined;
}

export class SlotInbox {
  private readonly d: SlotInboxDeps;
  private last: LastReceive | undefined;
  /** Held handle -> when SQS makes it visible again unless extended, epoch ms. */
  private readonly held = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  /** The extension in flight, if any. */
  private extending: Promise<void> | undefined;
  private ahead: Promise<InboxMessage[]> | undefined;

  constructor(deps: SlotInboxDeps) {
    this.d = deps;
  }

  /** The last receive (a failed one counts as empty); undefined before the first. */
  get lastReceive(): LastReceive | undefined {
    return this.last;
  }

  /** Handles this process holds now. */
  get heldCount(): number {
    return this.held.size;
  }

  /** Whether `handle` is still held (not deleted, handed back or refused by SQS). */
  holds(handle: string): boolean {
    return this.held.has(handle);
  }

  startKeeper(): void {
    this.timer ??= setInterval(() => void this.keep(), KEEPER_TICK_MS);
  }

  /**
   * Stops extending, and waits for an extension in flight: a hand-back that follows must
   * not be overtaken by an extension (the successor would wait a timeout for nothing).
   */
  async stopKeeper(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.extending;
  }

  /**
   * One receive, joined by more at once when it came back full (the fan-out above); the
   * messages of all, in arrival order. Failures are logged and counted and read as nothing received.
   */
  async receive(waitSeconds: number, ending: () => boolean): Promise<InboxMessage[]> {
    const first = await this.receiveOnce(waitSeconds, ending);
    return this.fanOut(first, ending);
  }

  /**
   * Behind a backlog (the only time a receive ahead is made): the fan-out's receives all at
   * once, without waiting for the first to come back full, which it would: a round's
   * frames arrive one receive latency sooner, and that latency is on the path from one
   * cohort's commit to the next round's GETs (decision 38).
   */
  private async receiveBacklog(ending: () => boolean): Promise<InboxMessage[]> {
    const idle = this.d.idleVideos;
    if (!idle) return this.receive(0, ending);
    const idleVideos = idle(new Set());
    const extra = extraReceives({
      received: RECEIVE_MAX_MESSAGES,
      maxMessages: RECEIVE_MAX_MESSAGES,
      receiveConcurrency: this.d.tunables.receiveConcurrency ?? 1,
      idleVideos,
      ownedVideos: this.d.ownedVideos?.() ?? 0,
    });
    // One receive per idle video (each fills from a group not already in flight), at least one.
    const count = Math.max(1, Math.min(1 + extra, idleVideos ?? Infinity));
    const all = await Promise.all(Array.from({ length: count }, () => this.receiveOnce(0, ending)));
    return all.flat();
  }

  private async fanOut(first: InboxMessage[], ending: () => boolean): Promise<InboxMessage[]> {
    const idle = this.d.idleVideos;
    if (!idle || first.length === 0 || ending()) return first;
    const extra = extraReceives({
      received: first.length,
      maxMessages: RECEIVE_MAX_MESSAGES,
      receiveConcurrency: this.d.tunables.receiveConcurrency ?? 1,
      idleVideos: idle(new Set(first.flatMap((m) => (m.msg ? [m.msg.videoId] : [])))),
      ownedVideos: this.d.ownedVideos?.() ?? 0,
    });
    if (extra === 0) return first;
    // The queue has messages: no waiting. Groups already in flight come back empty.
    const more = await Promise.all(Array.from({ length: extra }, () => this.receiveOnce(0, ending)));
    return [...first, ...more.flat()];
  }

  private async receiveOnce(waitSeconds: number, ending: () => boolean): Promise<InboxMessage[]> {
    let received: ReceivedMessage[];
    try {
      received = await this.d.queues.receive(this.d.slot.fence.slot, RECEIVE_MAX_MESSAGES, waitSeconds);
    } catch (e) {
      this.last = { atMs: this.d.slot.now(), count: 0, oldestAgeMs: undefined };
      if (ending()) return [];
      this.d.log.warn('receive failed', { error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'receive' });
      await sleep(1000);
      return [];
    }
    const now = this.d.slot.now();
    // How long frames waited in the slot queue: one fleet-wide series for the age alarm.
    const sentAt = received.flatMap((m) => (m.sentAtMs !== undefined ? [m.sentAtMs] : []));
    const oldestAgeMs = sentAt.length > 0 ? Math.max(0, now - Math.min(...sentAt)) : undefined;
    if (oldestAgeMs !== undefined) this.d.metrics.milliseconds(METRIC_NAMES.worker.slotMessageAgeMs, oldestAgeMs);
    this.last = { atMs: now, count: received.length, oldestAgeMs };
    const visibleAtMs = now + this.d.tunables.slotQueueVisibilitySeconds * 1000;
    for (const m of received) this.held.set(m.receiptHandle, visibleAtMs);
    const messages = received.map((m) => ({ handle: m.receiptHandle, body: m.body, msg: parseSlotMessage(m.body) }));
    // Frames read ahead are confirmed by their messages; a full receive's videos read their next frames ahead.
    this.d.sources.received(framesOf(messages), RECEIVE_MAX_MESSAGES);
    return messages;
  }

  /**
   * Receives the next messages once `after` settles (the commit in flight: until it has
   * deleted its messages, its videos' groups are blocked), without waiting, and starts
   * fetching the frames `willRun` accepts. Nothing happens if `cancelled()` says so by then.
   */
  receiveAhead(after: Promise<unknown>, cancelled: () => boolean, willRun: (msg: FrameMessage) => boolean): void {
    if (this.ahead) return;
    this.ahead = after
      .then(() => (cancelled() ? [] : this.receiveBacklog(cancelled)))
      .then((messages) => {
        this.d.sources.prefetch(framesOf(messages).filter(willRun));
        return messages;
      })
      .catch(() => []);
  }

  /** The messages received ahead, if a receive ahead was started; it is used up. */
  takeAhead(): Promise<InboxMessage[]> | undefined {
    const ahead = this.ahead;
    this.ahead = undefined;
    return ahead;
  }

  get aheadInFlight(): boolean {
    return this.ahead !== undefined;
  }

  /** Deletes messages whose outcome is durable; a failed delete only means a redelivery, recognised as a duplicate. */
  async delete(handles: readonly string[]): Promise<void> {
    if (handles.length === 0) return;
    for (const h of handles) this.held.delete(h);
    try {
      const failed = await this.d.queues.delete(this.d.slot.fence.slot, handles);
      if (failed > 0) this.d.log.warn('some deletes failed; redeliveries will be recognised as duplicates', { failed });
    } catch (e) {
      this.d.log.warn('delete failed; redeliveries will be recognised as duplicates', { error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'delete' });
    }
  }

  /** Makes messages visible again at once (for a successor, or the video's new owner). */
  async giveBack(handles: readonly string[]): Promise<void> {
    const mine = handles.filter((h) => this.held.delete(h));
    if (mine.length === 0) return;
    try {
      await this.d.queues.extendVisibility(this.d.slot.fence.slot, mine, 0);
    } catch (e) {
      this.d.log.warn('could not hand messages back; they return after the visibility timeout', { error: errorText(e) });
    }
  }

  /** Gives back every handle still held (the loop is ending). */
  async giveBackAll(): Promise<void> {
    await this.giveBack([...this.held.keys()]);
  }

  /** Parks an unusable message in the slot DLQ with its reason, then deletes it; false (still held) when that failed. */
  async deadLetter(m: Pick<InboxMessage, 'handle' | 'body'>, reason: string, groupId: string): Promise<boolean> {
    if (!(await this.park(m.body, reason, groupId))) return false;
    await this.delete([m.handle]);
    return true;
  }

  /**
   * Sends a copy of an unusable message's body to the slot DLQ with its reason; the
   * caller deletes the original with its video's next commit. False when that failed.
   */
  async park(body: string, reason: string, groupId: string): Promise<boolean> {
    try {
      await this.d.queues.deadLetter(this.d.slot.fence.slot, body, reason, groupId);
    } catch (e) {
      this.d.log.warn('dead-lettering failed; will retry', { reason, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'dead-letter' });
      return false;
    }
    this.d.log.warn('slot message dead-lettered', { reason });
    this.d.metrics.count(METRIC_NAMES.worker.messagesDeadLettered, 1, { Reason: reason.split(':')[0]! });
    return true;
  }

  /** Sends a frame of a video pinned elsewhere to its slot (same body: same dedup id and replay tag), then deletes it here. */
  async forward(m: InboxMessage & { msg: SlotMessage }, slot: number): Promise<boolean> {
    try {
      const [outcome] = await this.d.queues.send(slot, [{ message: m.msg }]);
      if (!outcome?.ok) throw new Error(outcome?.ok === false ? outcome.error : 'no outcome');
    } catch (e) {
      this.d.log.warn('forward failed; will retry', { videoId: m.msg.videoId, toSlot: slot, error: errorText(e) });
      this.d.metrics.count(METRIC_NAMES.worker.workerErrors, 1, { Where: 'forward' });
      return false;
    }
    this.d.metrics.count(METRIC_NAMES.worker.framesForwarded);
    this.d.log.info('forwarded frame of a video pinned elsewhere', { videoId: m.msg.videoId, toSlot: slot });
    await this.delete([m.handle]);
    return true;
  }

  /** Extends the held handles whose visibility runs out within half a timeout. */
  private async keep(): Promise<void> {
    if (this.extending || this.held.size === 0) return;
    const seconds = this.d.tunables.slotQueueVisibilitySeconds;
    const now = this.d.slot.now();
    const due = [...this.held].filter(([, visibleAtMs]) => visibleAtMs - now <= (seconds * 1000) / 2).map(([h]) => h);
    if (due.length === 0) return;
    this.extending = this.extend(due, seconds, now).finally(() => {
      this.extending = undefined;
    });
    await this.extending;
  }

  private async extend(due: readonly string[], seconds: number, now: number): Promise<void> {
    try {
      const refused = await this.d.queues.extendVisibility(this.d.slot.fence.slot, due, Math.min(MAX_VISIBILITY_SECONDS, seconds));
      const visibleAtMs = now + seconds * 1000;
      for (const h of due) if (this.held.has(h)) this.held.set(h, visibleAtMs);
      for (const h of refused ?? []) this.held.delete(h);
      if (refused && refused.length > 0) {
        // A handle SQS refuses is no longer ours to keep (deleted, or visible again and
        // perhaps received anew); whoever holds it next treats it as a redelivery.
        this.d.log.warn('visibility extension refused for some messages', { refused: refused.length });
        this.d.metrics.count(METRIC_NAMES.worker.workerErrors, refused.length, { Where: 'extend-visibility' });
      }
    } catch (e) {
      this.d.log.debug('visibility extension failed; will retry', { error: errorText(e) });
    }
  }
}

/** The frame messages among received ones (not end markers, not malformed). */
function framesOf(messages: readonly InboxMessage[]): FrameMessage[] {
  return messages.flatMap((m) => (m.msg?.kind === 'frame' ? [m.msg] : []));
}
