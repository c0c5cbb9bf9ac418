/**
 * S3 event notifications for fauxqs, which has none: after every successful object
 * creation (PutObject, CopyObject, CompleteMultipartUpload) made by ANY client through
 * the endpoint, an event in the exact AWS shape is sent to the configured queue.
 *
 * Like S3, delivery is asynchronous (after the response) and carries the object's real
 * size and ETag, read back from the store with an in-process HEAD.
 *
 * For tests, a per-key fault hook (`notificationFault`) drops, duplicates or delays an
 * object's notification, since real S3 delivers at least once and sometimes very late.
 */
import { randomUUID } from 'node:crypto';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { FauxqsApp } from './emulators.ts';

export { buildObjectCreatedEvent, buildTestEvent, encodeS3EventKey, objectCreatedEventName } from '../core/ingest/s3-event-shapes.ts';
export type { ObjectCreatedEventName, ObjectCreatedFields, QueueNotificationConfig } from '../core/ingest/s3-event-shapes.ts';
import { buildObjectCreatedEvent, buildTestEvent, objectCreatedEventName, type ObjectCreatedEventName, type QueueNotificationConfig } from '../core/ingest/s3-event-shapes.ts';

/** Increases across restarts (time-based) and within one process (counter), like S3's per-key sequencer. */
class Sequencer {
  #last = BigInt(Date.now()) * 1_000_000n;
  next(): string {
    const now = BigInt(Date.now()) * 1_000_000n;
    this.#last = now > this.#last ? now : this.#last + 1n;
    return this.#last.toString(16).toUpperCase().padStart(18, '0');
  }
}

/**
 * What happens to the notification of one object creation. S3 delivers notifications at
 * least once, usually within seconds but sometimes much later; tests model that with:
 *  - `deliver`: as usual;
 *  - `drop`: never sent (the object exists, its event never comes: a lost or very late one);
 *  - `duplicate`: sent twice, the same event (same sequencer and request id), the second
 *    copy `afterMs` after the first (default 0);
 *  - `delay`: sent `ms` after the object was created.
 */
export type NotificationFault =
  | { readonly kind: 'deliver' }
  | { readonly kind: 'drop' }
  | { readonly kind: 'duplicate'; readonly afterMs?: number }
  | { readonly kind: 'delay'; readonly ms: number };

/**
 * Decides the fault for one object creation, by key (as stored, not encoded). Asked once
 * per object creation that matches a configuration; `undefined` means deliver.
 */
export type NotificationFaultFn = (
  key: string,
  info: { readonly bucket: string; readonly eventName: ObjectCreatedEventName },
) => NotificationFault | undefined;

/** What the notifier did so far (TestEvents excluded). */
export interface NotificationCounts {
  /** Object creations that matched a configuration. */
  readonly events: number;
  /** Messages sent to a queue, second copies of duplicates included. */
  readonly sent: number;
  /** Events dropped by the fault hook. */
  readonly dropped: number;
  /** Events sent twice by the fault hook. */
  readonly duplicated: number;
  /** Events delayed by the fault hook. */
  readonly delayed: number;
  /** Delayed sends cancelled because the emulator closed before they were due. */
  readonly cancelled: number;
  /** Sends that failed (reported through `onError`). */
  readonly failed: number;
}

export interface S3NotifierOptions {
  readonly region: string;
  /** Client used to deliver to the destination queue. */
  readonly sqs: SQSClient;
  /** Called when a delivery fails (S3 itself would retry; locally we log). */
  readonly onError?: (err: unknown, detail: string) => void;
  /** Per-key fault injection (drop, duplicate, delay); see {@link NotificationFault}. @default every event delivered once */
  readonly notificationFault?: NotificationFaultFn;
}

/**
 * Adds S3 bucket notifications (ObjectCreated:* to SQS) to a fauxqs app.
 * Call {@link attach} before the app listens; add configurations at any time.
 */
export class S3Notifier {
  readonly #options: S3NotifierOptions;
  readonly #configs: QueueNotificationConfig[] = [];
  readonly #sequencer = new Sequencer();
  readonly #pending = new Set<Promise<void>>();
  /** Delayed sends not yet due: their timer and how to settle them without sending. */
  readonly #scheduled = new Map<NodeJS.Timeout, () => void>();
  /** Delayed sends, settled when sent or cancelled. */
  readonly #waiting = new Set<Promise<void>>();
  #app: FauxqsApp | undefined;
  #fault: NotificationFaultFn | undefined;
  #closed = false;
  #counts = { events: 0, sent: 0, dropped: 0, duplicated: 0, delayed: 0, cancelled: 0, failed: 0 };

  constructor(options: S3NotifierOptions) {
    this.#options = options;
    this.#fault = options.notificationFault;
  }

  /** Events delivered so far (TestEvents excluded; a duplicate counts once per copy). */
  get deliveredCount(): number {
    return this.#counts.sent;
  }

  /** Counters of events, sends and injected faults (a copy). */
  get counts(): NotificationCounts {
    return { ...this.#counts };
  }

  /** Replaces the fault hook (undefined: deliver everything); applies to objects created from now on. */
  setNotificationFault(fault: NotificationFaultFn | undefined): void {
    this.#fault = fault;
  }

  /** Installs the hook; must run before the Fastify app is ready. */
  attach(app: FauxqsApp): void {
    this.#app = app;
    // Delayed sends still waiting when the emulator closes would find no queue: cancel them.
    app.addHook('onClose', async () => {
      this.#closed = true;
      this.#cancelScheduled();
    });
    // The status the response went out with, taken when it is sent: by onResponse, a
    // fauxqs route (an async handler that calls `reply.send()` and returns undefined) may
    // have been sent twice when async onSend hooks delay the first send, and the failed
    // second send leaves a 500 on the reply although the client got the 200. Synchronous
    // (callback) hook, so it adds no delay of its own.
    const sentStatus = new WeakMap<object, number>();
    app.addHook('onSend', (request, reply, payload, done) => {
      if (!sentStatus.has(request)) sentStatus.set(request, reply.statusCode);
      done(null, payload);
    });
    app.addHook('onResponse', async (request, reply) => {
      if ((sentStatus.get(request) ?? reply.statusCode) !== 200 || this.#configs.length === 0) return;
      const params = (request.params ?? {}) as Record<string, string | undefined>;
      const key = params['*'] ?? '';
      const bucket = params.bucket ?? '';
      const eventName = objectCreatedEventName({
        method: request.method,
        routeUrl: request.routeOptions.url,
        query: (request.query ?? {}) as Record<string, unknown>,
        headers: request.headers,
        key,
      });
      if (!eventName) return;
      const configs = this.#configs.filter(
        (c) => c.bucket === bucket && key.startsWith(c.prefix ?? '') && key.endsWith(c.suffix ?? ''),
      );
      if (configs.length === 0) return;
      const eventTime = new Date();
      const sequencer = this.#sequencer.next();
      this.#counts.events++;
      const event = { bucket, key, eventName, eventTime, sequencer, sourceIp: request.ip };
      let fault: NotificationFault | undefined;
      try {
        fault = this.#fault?.(key, { bucket, eventName });
      } catch (err) {
        this.#options.onError?.(err, `notification fault hook for s3://${bucket}/${key}`);
      }
      switch (fault?.kind) {
        case 'drop':
          this.#counts.dropped++;
          return;
        case 'delay':
          this.#counts.delayed++;
          this.#schedule(Math.max(0, fault.ms), () => this.#deliver(configs, event, 1));
          return;
        case 'duplicate': {
          this.#counts.duplicated++;
          const afterMs = Math.max(0, fault.afterMs ?? 0);
          // The same event twice, as S3's at-least-once delivery repeats it.
          this.#track(afterMs === 0 ? this.#deliver(configs, event, 2) : this.#deliver(configs, event, 1, afterMs));
          return;
        }
        default:
          this.#track(this.#deliver(configs, event, 1));
      }
    });
  }

  #track(delivery: Promise<void>): void {
    this.#pending.add(delivery);
    void delivery.finally(() => this.#pending.delete(delivery));
  }

  /**
   * Runs `send` after `ms`. Until then {@link flush} does not wait for it (it has not
   * started) but {@link flush}`({ delayed: true })` does; closing the emulator cancels it.
   */
  #schedule(ms: number, send: () => Promise<void>): void {
    if (this.#closed) {
      this.#counts.cancelled++;
      return;
    }
    let settle!: () => void;
    const due = new Promise<void>((resolve) => {
      settle = resolve;
    });
    const timer = setTimeout(() => {
      this.#scheduled.delete(timer);
      const delivery = send();
      this.#track(delivery);
      void delivery.finally(settle);
    }, ms);
    this.#scheduled.set(timer, () => {
      this.#counts.cancelled++;
      settle();
    });
    this.#waiting.add(due);
    void due.finally(() => this.#waiting.delete(due));
  }

  #cancelScheduled(): void {
    for (const [timer, cancel] of this.#scheduled) {
      clearTimeout(timer);
      cancel();
    }
    this.#scheduled.clear();
  }

  /**
   * Adds a queue configuration and, as S3 does when a notification configuration is
   * put, sends an `s3:TestEvent` to the queue.
   */
  async addQueueConfiguration(config: QueueNotificationConfig): Promise<void> {
    this.#configs.push(config);
    await this.#options.sqs.send(
      new SendMessageCommand({ QueueUrl: config.queueUrl, MessageBody: JSON.stringify(buildTestEvent(config.bucket)) }),
    );
  }

  /**
   * Waits for deliveries already under way (used on shutdown and in tests). Delayed
   * notifications not yet due are not waited for unless `delayed` is set (a long delay
   * must not hold up a shutdown).
   */
  async flush(options: { readonly delayed?: boolean } = {}): Promise<void> {
    if (options.delayed) await Promise.allSettled([...this.#waiting]);
    await Promise.allSettled([...this.#pending]);
  }

  /** Cancels delayed notifications not yet due (counted as `cancelled`). */
  cancelDelayed(): void {
    this.#cancelScheduled();
  }

  async #deliver(
    configs: QueueNotificationConfig[],
    e: {
      bucket: string;
      key: string;
      eventName: ObjectCreatedEventName;
      eventTime: Date;
      sequencer: string;
      sourceIp: string;
    },
    copies: number,
    /** Send the same messages once more this long after the first send (a late duplicate). */
    againAfterMs?: number,
  ): Promise<void> {
    const detail = `${e.eventName} s3://${e.bucket}/${e.key}`;
    const messages: { queueUrl: string; body: string }[] = [];
    try {
      const head = await this.#app!.inject({
        method: 'HEAD',
        url: `/${encodeURIComponent(e.bucket)}/${e.key.split('/').map(encodeURIComponent).join('/')}`,
      });
      // Overwritten or deleted in between: S3 would still have notified, but with no
      // object to describe there is nothing useful to send.
      if (head.statusCode !== 200) throw new Error(`HEAD after ${detail} answered ${head.statusCode}`);
      const sizeBytes = Number(head.headers['content-length']);
      const eTag = String(head.headers.etag ?? '').replace(/"/g, '');
      for (const c of configs) {
        const body = buildObjectCreatedEvent({
          region: this.#options.region,
          bucket: e.bucket,
          key: e.key,
          sizeBytes,
          eTag,
          eventName: e.eventName,
          eventTime: e.eventTime,
          sequencer: e.sequencer,
          configurationId: c.configurationId,
          sourceIp: e.sourceIp,
        });
        messages.push({ queueUrl: c.queueUrl, body: JSON.stringify(body) });
      }
    } catch (err) {
      this.#counts.failed++;
      this.#options.onError?.(err, detail);
      return;
    }
    for (let i = 0; i < copies; i++) await this.#send(messages, detail);
    if (againAfterMs !== undefined) this.#schedule(againAfterMs, () => this.#send(messages, detail));
  }

  async #send(messages: readonly { queueUrl: string; body: string }[], detail: string): Promise<void> {
    try {
      for (const m of messages) {
        await this.#options.sqs.send(new SendMessageCommand({ QueueUrl: m.queueUrl, MessageBody: m.body }));
        this.#counts.sent++;
      }
    } catch (err) {
      this.#counts.failed++;
      this.#options.onError?.(err, detail);
    }
  }
}

/** A configuration id like the ones the S3 console generates. */
export function newConfigurationId(): string {
  return randomUUID();
}
