/**
 * The SQS API the FIFO model answers (core/ingest/memory/sqs-fifo-model.ts): one handler per
 * command, each validating its request the way SQS does and acting on the queue state.
 */
import type { MessageAttributeValue } from '@aws-sdk/client-sqs';
import type { FaultInjector } from './faults.ts';
import { abortError, attributesBytes, checkBatch, checkEntry, checkReceive, md5, sqsError, SQS_LIMITS } from './limits.ts';
import { snapshot, type FifoQueueStore } from './store.ts';
import type { EntryProblem, Input, MutableMessage, Output, QueueState, ReceiveRecord } from './types.ts';

/** What the command handlers need besides the queue state and the faults. */
export interface CommandOptions {
  readonly now: () => number;
  readonly maxMessageBytes: number;
  readonly longPollCapMs: number | undefined;
  readonly pollIntervalMs: number;
  /** Where every receive that returned is recorded. */
  readonly receiveLog: ReceiveRecord[];
}

/** Answers SQS commands against one model's queues. */
export class FifoCommands {
  private readonly store: FifoQueueStore;
  private readonly faults: FaultInjector;
  private readonly options: CommandOptions;

  constructor(store: FifoQueueStore, faults: FaultInjector, options: CommandOptions) {
    this.store = store;
    this.faults = faults;
    this.options = options;
  }

  /** Runs one command by name (without `Command`); unknown commands fail as unsupported. */
  dispatch(name: string, input: Input, signal: AbortSignal | undefined): Promise<Output> | Output {
    switch (name) {
      case 'SendMessage':
        return this.sendMessage(input);
      case 'SendMessageBatch':
        return this.sendMessageBatch(input);
      case 'ReceiveMessage':
        return this.receiveMessage(input, signal);
      case 'DeleteMessage':
        return this.single(input, (q, e) => this.deleteOne(q, 'DeleteMessage', e));
      case 'DeleteMessageBatch':
        return this.perEntry(input, (q, e) => this.deleteOne(q, 'DeleteMessageBatch', e));
      case 'ChangeMessageVisibility':
        return this.single(input, (q, e) => this.changeOne(q, 'ChangeMessageVisibility', e));
      case 'ChangeMessageVisibilityBatch':
        return this.perEntry(input, (q, e) => this.changeOne(q, 'ChangeMessageVisibilityBatch', e));
      case 'GetQueueAttributes':
        return this.getQueueAttributes(input);
      case 'GetQueueUrl':
        return this.getQueueUrl(input);
      case 'PurgeQueue':
        return this.purgeQueue(input);
      default:
        throw sqsError('UnsupportedOperation', `the SQS FIFO model does not implement ${name || 'this command'}`);
    }
  }

  private sendMessage(input: Input): Output {
    const q = this.store.queue(input.QueueUrl);
    const problem = checkEntry(q, input, this.options.maxMessageBytes);
    if (problem) throw sqsError(problem.code, problem.message);
    this.faults.takeEntryFault('SendMessage', { command: 'SendMessage', queueUrl: q.url, entry: input, body: input.MessageBody });
    return this.store.enqueue(q, input);
  }

  private sendMessageBatch(input: Input): Output {
    const q = this.store.queue(input.QueueUrl);
    const entries = checkBatch(input.Entries);
    const maxMessageBytes = this.options.maxMessageBytes;
    const total = entries.reduce((n, e) => n + Buffer.byteLength(typeof e.MessageBody === 'string' ? e.MessageBody : '') + attributesBytes(e.MessageAttributes), 0);
    if (total > maxMessageBytes) {
      throw sqsError('BatchRequestTooLong', `Batch requests cannot be longer than ${maxMessageBytes} bytes. You have sent ${total} bytes.`);
    }
    const Successful: Output[] = [];
    const Failed: Output[] = [];
    for (const e of entries) {
      const problem = checkEntry(q, e, maxMessageBytes);
      if (problem) {
        Failed.push({ Id: e.Id, SenderFault: true, Code: problem.code, Message: problem.message });
        continue;
      }
      const fault = this.faults.matchEntryFault('SendMessage', { command: 'SendMessageBatch', queueUrl: q.url, entry: e, body: e.MessageBody });
      if (fault) {
        Failed.push({ Id: e.Id, SenderFault: fault.senderFault, Code: fault.code, Message: fault.message });
        continue;
      }
      Successful.push({ Id: e.Id, ...this.store.enqueue(q, e) });
    }
    return { Successful, Failed };
  }

  private async receiveMessage(input: Input, signal: AbortSignal | undefined): Promise<Output> {
    const q = this.store.queue(input.QueueUrl);
    const { max, wait, vt } = checkReceive(input, q.visibilityTimeoutSeconds);
    const waitMs = Math.min(wait * 1000, this.options.longPollCapMs ?? Infinity);
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (signal?.aborted) throw abortError(signal);
      const taken = this.store.take(q, max, vt);
      if (taken.length > 0 || Date.now() >= deadline) {
        this.options.receiveLog.push({
          queueUrl: q.url,
          atMs: this.options.now(),
          maxMessages: max,
          waitSeconds: wait,
          messages: taken.map((m) => ({ messageId: m.messageId, groupId: m.groupId, body: m.body, receiveCount: m.receiveCount, receiptHandle: m.receiptHandle! })),
        });
        return { Messages: taken.map((m) => this.render(m, input)) };
      }
      await this.store.waitForChange(Math.min(this.options.pollIntervalMs, deadline - Date.now()), signal);
    }
  }

  private render(m: MutableMessage, input: Input): Output {
    const wanted = new Set<string>([...(input.MessageSystemAttributeNames ?? []), ...(input.AttributeNames ?? [])]);
    const all = wanted.has('All');
    const system: Record<string, string> = {
      ApproximateReceiveCount: String(m.receiveCount),
      MessageGroupId: m.groupId,
      MessageDeduplicationId: m.dedupId,
      SequenceNumber: m.sequenceNumber,
      SentTimestamp: String(m.sentAtMs),
      ApproximateFirstReceiveTimestamp: String(m.firstReceiveAtMs ?? m.sentAtMs),
      SenderId: 'AIDAMODEL',
    };
    const Attributes: Record<string, string> = {};
    for (const [k, v] of Object.entries(system)) if (all || wanted.has(k)) Attributes[k] = v;
    const attrNames: string[] = input.MessageAttributeNames ?? [];
    const MessageAttributes: Record<string, MessageAttributeValue> = {};
    for (const [k, v] of Object.entries(m.messageAttributes)) {
      if (attrNames.some((n) => n === 'All' || n === '.*' || n === k || (n.endsWith('.*') && k.startsWith(n.slice(0, -1))))) MessageAttributes[k] = v;
    }
    return {
      MessageId: m.messageId,
      ReceiptHandle: m.receiptHandle,
      MD5OfBody: md5(m.body),
      Body: m.body,
      ...(Object.keys(Attributes).length > 0 ? { Attributes } : {}),
      ...(Object.keys(MessageAttributes).length > 0 ? { MessageAttributes } : {}),
    };
  }

  /**
   * The message an entry's receipt handle points to, or why the entry fails: a bad handle
   * (the sender's fault) or a fault injected for `kind` (`DeleteMessage`, `ChangeMessageVisibility`).
   */
  private target(q: QueueState, kind: string, command: string, entry: Input, forDelete: boolean): { message: MutableMessage } | EntryProblem {
    const r = this.store.resolveHandle(q, entry.ReceiptHandle, forDelete);
    if ('code' in r) return { ...r, senderFault: true };
    const fault = this.faults.matchEntryFault(kind, { command, queueUrl: q.url, entry, message: snapshot(r.message), receiptHandle: entry.ReceiptHandle, body: r.message.body });
    return fault ?? r;
  }

  private deleteOne(q: QueueState, command: string, entry: Input): EntryProblem | undefined {
    const r = this.target(q, 'DeleteMessage', command, entry, true);
    if ('code' in r) return r;
    r.message.state = 'deleted';
    this.store.wake();
    return undefined;
  }

  /** A single-message call's answer: the request is its one entry, and that entry's failure is thrown as SQS's error. */
  private single(input: Input, one: (q: QueueState, entry: Input) => EntryProblem | undefined): Output {
    const q = this.store.queue(input.QueueUrl);
    const problem = one(q, input);
    if (problem) throw sqsError(problem.code, problem.message, problem.senderFault ? 'client' : 'server');
    return {};
  }

  /** A batch call's answer: each entry succeeds or fails on its own, as in SQS. */
  private perEntry(input: Input, one: (q: QueueState, entry: Input) => EntryProblem | undefined): Output {
    const q = this.store.queue(input.QueueUrl);
    const entries = checkBatch(input.Entries);
    const Successful: Output[] = [];
    const Failed: Output[] = [];
    for (const e of entries) {
      const problem = one(q, e);
      if (problem) Failed.push({ Id: e.Id, SenderFault: problem.senderFault, Code: problem.code, Message: problem.message });
      else Successful.push({ Id: e.Id });
    }
    return { Successful, Failed };
  }

  private changeOne(q: QueueState, command: string, entry: Input): EntryProblem | undefined {
    const vt = entry.VisibilityTimeout;
    if (!Number.isInteger(vt) || vt < 0 || vt > SQS_LIMITS.maxVisibilityTimeoutSeconds) {
      return { code: 'InvalidParameterValue', message: `Value ${String(vt)} for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200.`, senderFault: true };
    }
    const r = this.target(q, 'ChangeMessageVisibility', command, entry, false);
    if ('code' in r) return r;
    const now = this.options.now();
    r.message.visibleAtMs = now + vt * 1000;
    if (vt === 0) {
      r.message.state = 'visible';
      this.store.wake();
    }
    return undefined;
  }

  private getQueueAttributes(input: Input): Output {
    const q = this.store.queue(input.QueueUrl);
    const names: string[] = input.AttributeNames ?? [];
    const live = q.messages.filter((m) => m.state === 'visible' || m.state === 'in-flight');
    const all: Record<string, string> = {
      ApproximateNumberOfMessages: String(live.filter((m) => m.state === 'visible').length),
      ApproximateNumberOfMessagesNotVisible: String(live.filter((m) => m.state === 'in-flight').length),
      ApproximateNumberOfMessagesDelayed: '0',
      VisibilityTimeout: String(q.visibilityTimeoutSeconds),
      QueueArn: q.arn,
      FifoQueue: 'true',
      ContentBasedDeduplication: String(q.contentBasedDeduplication),
      MaximumMessageSize: String(this.options.maxMessageBytes),
      ...(q.deadLetterUrl !== undefined && q.maxReceiveCount !== undefined
        ? { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: this.store.queue(q.deadLetterUrl).arn, maxReceiveCount: q.maxReceiveCount }) }
        : {}),
    };
    const Attributes: Record<string, string> = {};
    for (const [k, v] of Object.entries(all)) if (names.includes('All') || names.includes(k)) Attributes[k] = v;
    return { Attributes };
  }

  private getQueueUrl(input: Input): Output {
    const name = String(input.QueueName ?? '');
    const url = this.store.urls().find((u) => u.endsWith(`/${name}`) || u === name);
    if (!url) throw sqsError('QueueDoesNotExist', 'The specified queue does not exist.');
    return { QueueUrl: url };
  }

  private purgeQueue(input: Input): Output {
    const q = this.store.queue(input.QueueUrl);
    for (const m of q.messages) if (m.state === 'visible' || m.state === 'in-flight') m.state = 'deleted';
    return {};
  }
}
