/**
 * The SQS FIFO model's queue state (core/ingest/memory/sqs-fifo-model.ts): queues and their
 * messages, group blocking, visibility, receipt handles, deduplication and redrive, and
 * the wake-ups that end a waiting long poll. The commands in commands.ts act on it.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { abortError, md5, sqsError, SQS_LIMITS } from './limits.ts';
import type { HandleInfo, Input, ModelMessage, MutableMessage, QueueOptions, QueueState } from './types.ts';

/** A copy of a message for callers outside the model (changing it changes nothing). */
export function snapshot(m: MutableMessage): ModelMessage {
  return { ...m, messageAttributes: { ...m.messageAttributes } };
}

/** Every queue of one model and the messages in them. */
export class FifoQueueStore {
  private readonly now: () => number;
  private readonly autoCreate: boolean;
  private readonly defaultQueue: Omit<QueueOptions, 'deadLetterUrl'>;
  private readonly queues = new Map<string, QueueState>();
  private readonly handles = new Map<string, HandleInfo>();
  private readonly waiters = new Set<() => void>();
  private sequence = 0n;

  constructor(options: { now: () => number; autoCreate: boolean; defaultQueue: Omit<QueueOptions, 'deadLetterUrl'> }) {
    this.now = options.now;
    this.autoCreate = options.autoCreate;
    this.defaultQueue = options.defaultQueue;
  }

  /** See `SqsFifoModel.createQueue`. */
  createQueue(url: string, options: QueueOptions = {}): string {
    const vt = options.visibilityTimeoutSeconds ?? this.defaultQueue.visibilityTimeoutSeconds ?? SQS_LIMITS.defaultVisibilityTimeoutSeconds;
    if (!Number.isInteger(vt) || vt < 0 || vt > SQS_LIMITS.maxVisibilityTimeoutSeconds) throw new Error(`visibilityTimeoutSeconds out of range: ${vt}`);
    const existing = this.queues.get(url);
    const { maxReceiveCount, deadLetterUrl } = options;
    if ((maxReceiveCount === undefined) !== (deadLetterUrl === undefined)) {
      throw new Error('a redrive policy needs both maxReceiveCount and deadLetterUrl');
    }
    const q: QueueState = {
      url,
      arn: `arn:aws:sqs:us-east-1:000000000000:${url.slice(url.lastIndexOf('/') + 1)}`,
      visibilityTimeoutSeconds: vt,
      ...(maxReceiveCount !== undefined ? { maxReceiveCount } : {}),
      ...(deadLetterUrl !== undefined ? { deadLetterUrl } : {}),
      contentBasedDeduplication: options.contentBasedDeduplication ?? this.defaultQueue.contentBasedDeduplication ?? false,
      messages: existing?.messages ?? [],
      dedup: existing?.dedup ?? new Map(),
      sent: existing?.sent ?? 0,
      duplicates: existing?.duplicates ?? 0,
    };
    this.queues.set(url, q);
    if (deadLetterUrl !== undefined && !this.queues.has(deadLetterUrl)) this.createQueue(deadLetterUrl, { visibilityTimeoutSeconds: vt });
    return url;
  }

  /** A queue's state if it exists, with expired visibility applied; never creates one. */
  find(url: string): QueueState | undefined {
    const q = this.queues.get(url);
    if (q) this.expire(q);
    return q;
  }

  /** Every queue, in creation order (for counts across queues). */
  all(): QueueState[] {
    return [...this.queues.values()];
  }

  urls(): string[] {
    return [...this.queues.keys()];
  }

  /** The queue a command names (created lazily when the model allows), with expired visibility applied. */
  queue(url: unknown): QueueState {
    if (typeof url !== 'string' || url === '') throw sqsError('MissingParameter', 'The request must contain the parameter QueueUrl.');
    let q = this.queues.get(url);
    if (!q) {
      if (!this.autoCreate) throw sqsError('QueueDoesNotExist', 'The specified queue does not exist.');
      if (!url.endsWith('.fifo')) throw sqsError('UnsupportedOperation', `the model only has FIFO queues (${url})`);
      const { maxReceiveCount, ...rest } = this.defaultQueue;
      const redrive = maxReceiveCount !== undefined && !url.endsWith('-dlq.fifo') ? { maxReceiveCount, deadLetterUrl: url.replace(/\.fifo$/, '-dlq.fifo') } : {};
      this.createQueue(url, { ...rest, ...redrive });
      q = this.queues.get(url)!;
    }
    this.expire(q);
    return q;
  }

  /** Makes in-flight messages whose visibility ran out visible again. */
  private expire(q: QueueState): void {
    const now = this.now();
    for (const m of q.messages) if (m.state === 'in-flight' && m.visibleAtMs <= now) m.state = 'visible';
  }

  /** Enqueues a checked message (or recognises a duplicate); returns the ids SQS would. */
  enqueue(q: QueueState, e: Input): { MessageId: string; MD5OfMessageBody: string; SequenceNumber: string } {
    const now = this.now();
    const body = e.MessageBody as string;
    const dedupId: string = e.MessageDeduplicationId ?? createHash('sha256').update(body).digest('hex');
    const seen = q.dedup.get(dedupId);
    if (seen && now - seen.atMs < SQS_LIMITS.dedupWindowMs) {
      q.duplicates++;
      return { MessageId: seen.messageId, MD5OfMessageBody: md5(body), SequenceNumber: seen.sequenceNumber };
    }
    const messageId = randomUUID();
    this.sequence += 1n;
    const sequenceNumber = (this.sequence + 18_000_000_000_000_000_000n).toString();
    q.dedup.set(dedupId, { atMs: now, messageId, sequenceNumber });
    q.messages.push({
      queueUrl: q.url,
      messageId,
      sequenceNumber,
      body,
      groupId: e.MessageGroupId as string,
      dedupId,
      messageAttributes: { ...(e.MessageAttributes ?? {}) },
      sentAtMs: now,
      state: 'visible',
      receiveCount: 0,
      visibleAtMs: now,
    });
    q.sent++;
    this.wake();
    return { MessageId: messageId, MD5OfMessageBody: md5(body), SequenceNumber: sequenceNumber };
  }

  /**
   * Picks the messages one receive returns (synchronous, so concurrent receives never
   * share a message): groups in the order of their oldest message; a group with a
   * message in flight is skipped; from an open group, messages from its head in order,
   * as many as fit, before the next group. A message already received maxReceiveCount
   * times is moved to the DLQ instead.
   */
  take(q: QueueState, max: number, visibilitySeconds: number): MutableMessage[] {
    const now = this.now();
    const groups = new Map<string, MutableMessage[]>();
    const blocked = new Set<string>();
    for (const m of q.messages) {
      if (m.state === 'in-flight') blocked.add(m.groupId);
      if (m.state !== 'visible') continue;
      const list = groups.get(m.groupId);
      if (list) list.push(m);
      else groups.set(m.groupId, [m]);
    }
    const out: MutableMessage[] = [];
    for (const [groupId, list] of groups) {
      if (out.length >= max) break;
      if (blocked.has(groupId)) continue;
      for (const m of list) {
        if (out.length >= max) break;
        if (q.maxReceiveCount !== undefined && q.deadLetterUrl !== undefined && m.receiveCount >= q.maxReceiveCount) {
          this.redrive(q, m);
          continue;
        }
        m.state = 'in-flight';
        m.receiveCount++;
        m.firstReceiveAtMs ??= now;
        m.visibleAtMs = now + visibilitySeconds * 1000;
        const handle = `${randomBytes(12).toString('base64url')}.${m.messageId}.${m.receiveCount}`;
        m.receiptHandle = handle;
        this.handles.set(handle, { queueUrl: q.url, message: m });
        out.push(m);
      }
    }
    return out;
  }

  private redrive(q: QueueState, m: MutableMessage): void {
    const dlq = this.queue(q.deadLetterUrl);
    m.state = 'dead-lettered';
    m.deadLetteredTo = dlq.url;
    // Same message id, body, group and receive count; a new place in the DLQ's order.
    const { deadLetteredTo: _to, receiptHandle: _handle, ...rest } = m;
    dlq.messages.push({ ...rest, queueUrl: dlq.url, state: 'visible', visibleAtMs: this.now(), redrivenFrom: q.url });
    this.wake();
  }

  /**
   * Resolves a receipt handle for a delete or visibility change: the message, or the
   * error SQS FIFO gives (unknown or other queue's handle, stale handle, expired handle).
   */
  resolveHandle(q: QueueState, handle: unknown, forDelete: boolean): { message: MutableMessage } | { code: string; message: string } {
    if (typeof handle !== 'string' || handle === '') return { code: 'MissingParameter', message: 'The request must contain the parameter ReceiptHandle.' };
    const info = this.handles.get(handle);
    if (!info || info.queueUrl !== q.url) return { code: 'ReceiptHandleIsInvalid', message: `The input receipt handle "${handle}" is not a valid receipt handle.` };
    const m = info.message;
    if (m.receiptHandle !== handle) {
      return { code: 'ReceiptHandleIsInvalid', message: `The receipt handle "${handle}" is stale: the message was received again since.` };
    }
    if (m.state === 'deleted') {
      // Deleting again with the latest handle succeeds; changing visibility does not.
      return forDelete ? { message: m } : { code: 'ReceiptHandleIsInvalid', message: `The receipt handle "${handle}" is not valid: the message was deleted.` };
    }
    if (m.state === 'dead-lettered') return { code: 'ReceiptHandleIsInvalid', message: `The receipt handle "${handle}" is not valid for this queue.` };
    if (m.state === 'visible') {
      return forDelete
        ? { code: 'InvalidParameterValue', message: `Value ${handle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.` }
        : { code: 'MessageNotInflight', message: 'The message referred to is not in flight.' };
    }
    return { message: m };
  }

  /** Wakes waiting long polls now. */
  wake(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Waits until woken, `ms` pass, or the signal aborts (then throws AbortError). */
  waitForChange(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        reject(abortError(signal!));
      };
      const timer = setTimeout(done, Math.max(1, ms));
      this.waiters.add(done);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
