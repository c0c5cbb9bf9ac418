/**
 * Invokes Lambda handlers locally the way EventBridge does:
 *  - {@link ScheduledInvoker}: a schedule rule;
 *  - {@link AsyncInvoker}: a rule's Lambda target (an asynchronous invocation), retried on
 *    error as Lambda retries one.
 */
import { randomUUID } from 'node:crypto';
import type { ScheduledEvent } from 'aws-lambda';
import { lambdaContext, type ScheduledHandler } from './event-source.ts';

export interface ScheduledInvokerOptions {
  readonly handler: ScheduledHandler;
  readonly intervalMs: number;
  readonly region: string;
  readonly functionName?: string;
  readonly ruleName?: string;
  readonly timeoutMs?: number;
  readonly onError?: (err: unknown) => void;
}

/** Calls a handler on a fixed rate, never overlapping runs (a slow run delays the next). */
export class ScheduledInvoker {
  readonly #o: ScheduledInvokerOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;
  runs = 0;

  constructor(options: ScheduledInvokerOptions) {
    this.#o = options;
  }

  start(): this {
    this.#schedule();
    return this;
  }

  /** Runs the handler now (also what each tick does). */
  async runOnce(): Promise<void> {
    if (this.#running) return this.#running;
    const o = this.#o;
    const functionName = o.functionName ?? 'local-scheduled-function';
    const event: ScheduledEvent = {
      version: '0',
      id: randomUUID(),
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: '000000000000',
      time: new Date().toISOString(),
      region: o.region,
      resources: [`arn:aws:events:${o.region}:000000000000:rule/${o.ruleName ?? functionName}`],
      detail: {},
    };
    this.#running = (async () => {
      try {
        await o.handler(event, lambdaContext(functionName, o.region, o.timeoutMs ?? 60_000));
      } catch (err) {
        (o.onError ?? ((e) => console.error(`[${functionName}]`, e)))(err);
      } finally {
        this.runs++;
        this.#running = undefined;
      }
    })();
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#running;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      void this.runOnce().then(() => this.#schedule());
    }, this.#o.intervalMs);
  }
}

/**
 * Lambda's retries of an asynchronous invocation that failed: "two more times, with a
 * one-minute wait between the first two attempts, and two minutes between the second and
 * third" (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
 */
export const ASYNC_RETRY_DELAYS_MS: readonly number[] = [60_000, 120_000];

/**
 * Invokes a handler asynchronously, as an EventBridge rule's Lambda target does: the caller
 * does not wait, and a throw is retried after {@link ASYNC_RETRY_DELAYS_MS}. Without the
 * retries, one event that landed in an outage (a task that stopped while DynamoDB was
 * down) would be lost locally where AWS would run it again.
 */
export class AsyncInvoker {
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;
  private readonly invoke: (event: unknown) => Promise<unknown>;
  private readonly onError: (err: unknown, attempt: number, willRetry: boolean) => void;
  private readonly retryDelaysMs: readonly number[];

  constructor(
    invoke: (event: unknown) => Promise<unknown>,
    onError: (err: unknown, attempt: number, willRetry: boolean) => void,
    retryDelaysMs: readonly number[] = ASYNC_RETRY_DELAYS_MS,
  ) {
    this.invoke = invoke;
    this.onError = onError;
    this.retryDelaysMs = retryDelaysMs;
  }

  /** Invokes now; on a throw, again after each retry delay until one succeeds. */
  send(event: unknown): void {
    this.attempt(event, 0);
  }

  /** Cancels retries not yet due (the stack is stopping). */
  stop(): void {
    this.stopped = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  private attempt(event: unknown, n: number): void {
    if (this.stopped) return;
    void Promise.resolve()
      .then(() => this.invoke(event))
      .catch((err: unknown) => {
        const delay = this.retryDelaysMs[n];
        this.onError(err, n + 1, delay !== undefined && !this.stopped);
        if (delay === undefined || this.stopped) return;
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          this.attempt(event, n + 1);
        }, delay);
        timer.unref();
        this.timers.add(timer);
      });
  }
}
