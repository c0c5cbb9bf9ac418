/**
 * The ingest retry decision (core/ingest/ingest-retry.ts) as tables, and its application
 * (core/ingest/ingest-failures.ts) through recording ports: outages back off by receive count,
 * other errors retry a few times and are then dead-lettered with a reason, and the
 * defaults ride out days of outage within the ingest queue's retention.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TUNABLES, validateTunables } from '../../../core/config.ts';
import { injectedError } from '../../../lab/aws/fault-injection.ts';
import { settleIngestFailures, type IngestDelivery } from '../../../core/ingest/ingest-failures.ts';
import {
  INGEST_ERROR_RECEIVES,
  INGEST_RETENTION_SECONDS,
  classifyIngestFailure,
  decideIngestRetry,
  ingestOutageRideOutSeconds,
  outageBackoffSeconds,
} from '../../../core/ingest/ingest-retry.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import type { LogSink, MetricSink } from '../../../core/ports.ts';
import { ingestQueueShape } from '../../../core/resources.ts';
import type { RejectedEvent } from '../../../core/fleet/router.ts';
import type { VisibilityChange } from '../../../core/ingest/sqs/slot-queues.ts';

const sdkError = (name: string, status: number, fault: 'client' | 'server', extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(name), { name, $fault: fault, $metadata: { httpStatusCode: status }, ...extra });

describe('classifyIngestFailure', () => {
  const cases: [string, unknown, 'outage' | 'error'][] = [
    ['DynamoDB throttling (injected)', injectedError('dynamodb', 'throttle'), 'outage'],
    ['DynamoDB 500 (injected)', injectedError('dynamodb', '5xx'), 'outage'],
    ['SQS throttling (injected, a 403)', injectedError('sqs', 'throttle'), 'outage'],
    ['SQS 503 (injected)', injectedError('sqs', '5xx'), 'outage'],
    ['ProvisionedThroughputExceeded', sdkError('ProvisionedThroughputExceededException', 400, 'client'), 'outage'],
    ['any server fault', sdkError('SomethingNew', 502, 'server'), 'outage'],
    ['429 without a known name', sdkError('Whatever', 429, 'client'), 'outage'],
    ['SDK request timeout', Object.assign(new Error('timed out'), { name: 'TimeoutError' }), 'outage'],
    ['connection refused', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), 'outage'],
    ['connection reset', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }), 'outage'],
    ['retryable flag', sdkError('X', 400, 'client', { $retryable: { throttling: false } }), 'outage'],
    ['router wrap of a send error (cause)', new Error('Service unavailable', { cause: injectedError('sqs', '5xx') }), 'outage'],
    ['batch entry failed, not the sender\'s fault', new Error('InternalError: x', { cause: { name: 'InternalError', senderFault: false } }), 'outage'],
    ['batch entry failed by the sender', new Error('InvalidParameterValue: x', { cause: { name: 'InvalidParameterValue', senderFault: true } }), 'error'],
    ['admission contention', Object.assign(new Error('slots kept filling up'), { name: 'AdmissionContention' }), 'outage'],
    ['validation error', sdkError('ValidationException', 400, 'client'), 'error'],
    ['access denied', sdkError('AccessDeniedException', 400, 'client'), 'error'],
    ['a bug', new TypeError('x is undefined'), 'error'],
    ['a string', 'boom', 'error'],
    ['undefined', undefined, 'error'],
  ];
  it.each(cases)('%s -> %s', (_name, error, expected) => {
    expect(classifyIngestFailure(error)).toBe(expected);
  });
});

describe('outageBackoffSeconds', () => {
  const t = DEFAULT_TUNABLES;
  const cases: [number, number][] = [
    [0, 15],
    [1, 15],
    [2, 30],
    [3, 60],
    [4, 120],
    [5, 240],
    [6, 480],
    [7, 900],
    [8, 900],
    [575, 900],
    [10_000, 900],
  ];
  it.each(cases)('receive %i -> %i s at the defaults', (n, seconds) => {
    expect(outageBackoffSeconds(n, t)).toBe(seconds);
  });
  it('never exceeds SQS maximum visibility of 12 hours', () => {
    expect(outageBackoffSeconds(40, { ingestOutageBackoffBaseSeconds: 60, ingestOutageBackoffMaxSeconds: 100_000 })).toBe(43_200);
  });
});

describe('decideIngestRetry', () => {
  const t = DEFAULT_TUNABLES;
  const outage = injectedError('dynamodb', '5xx');
  const bug = new TypeError('bug');
  const cases: [string, unknown, number, ReturnType<typeof decideIngestRetry>][] = [
    ['outage, first receive', outage, 1, { action: 'backoff', kind: 'outage', visibilitySeconds: 15 }],
    ['outage, 5th receive (the old budget)', outage, 5, { action: 'backoff', kind: 'outage', visibilitySeconds: 240 }],
    ['outage, 6th receive (past the old budget)', outage, 6, { action: 'backoff', kind: 'outage', visibilitySeconds: 480 }],
    ['outage, 575th receive', outage, 575, { action: 'backoff', kind: 'outage', visibilitySeconds: 900 }],
    ['outage, last receive before redrive', outage, 576, { action: 'dead-letter', kind: 'outage', reason: 'outage-outlasted-retries' }],
    ['outage, receive count missing', outage, Number.NaN, { action: 'backoff', kind: 'outage', visibilitySeconds: 15 }],
    ['error, first receive', bug, 1, { action: 'retry', kind: 'error' }],
    ['error, 4th receive', bug, INGEST_ERROR_RECEIVES - 1, { action: 'retry', kind: 'error' }],
    ['error, 5th receive', bug, INGEST_ERROR_RECEIVES, { action: 'dead-letter', kind: 'error', reason: 'route-error' }],
  ];
  it.each(cases)('%s', (_name, error, receiveCount, expected) => {
    expect(decideIngestRetry(error, receiveCount, t)).toEqual(expected);
  });
  it('an error on a queue with a smaller budget is dead-lettered on its last receive', () => {
    expect(decideIngestRetry(bug, 3, { ...t, ingestMaxReceiveCount: 3 })).toEqual({ action: 'dead-letter', kind: 'error', reason: 'route-error' });
  });
});

describe('the receive arithmetic at the defaults', () => {
  it('rides out about 5.9 days of outage, under the 7-day retention, where the old budget held 15 minutes', () => {
    const old = 5 * 180;
    const rideOut = ingestOutageRideOutSeconds(DEFAULT_TUNABLES);
    expect(rideOut).toBe(945 + 569 * 900);
    expect(rideOut).toBeGreaterThan(5.9 * 86_400);
    expect(rideOut).toBeLessThan(INGEST_RETENTION_SECONDS - 86_400);
    expect(rideOut / old).toBeGreaterThan(500);
    expect(ingestQueueShape(DEFAULT_TUNABLES)).toMatchObject({ retentionSeconds: INGEST_RETENTION_SECONDS, maxReceiveCount: 576 });
  });
  it('refuses a budget that would let messages expire before they reach the DLQ', () => {
    expect(() => validateTunables({ ...DEFAULT_TUNABLES, ingestMaxReceiveCount: 1000 })).toThrow(/retention/);
    expect(() => validateTunables({ ...DEFAULT_TUNABLES, ingestOutageBackoffBaseSeconds: 1000 })).toThrow(/at most ingestOutageBackoffMaxSeconds/);
  });
});

describe('settleIngestFailures', () => {
  function ports(opts: { deadLetterOk?: boolean } = {}) {
    const rec = { changes: [] as VisibilityChange[], parked: [] as RejectedEvent[], counted: [] as [string, number, Record<string, string> | undefined][], warnings: [] as string[] };
    const metrics: MetricSink = { count: (name, value = 1, dims) => void rec.counted.push([name, value, dims]), milliseconds() {} };
    const log: LogSink = { debug() {}, info() {}, warn: (m) => void rec.warnings.push(m), error() {} };
    return {
      rec,
      ports: {
        tunables: DEFAULT_TUNABLES,
        changeVisibility: async (changes: readonly VisibilityChange[]) => {
          rec.changes.push(...changes);
          return { failed: 0 };
        },
        deadLetter: async (events: readonly RejectedEvent[]) => {
          rec.parked.push(...events);
          return events.map(() => opts.deadLetterOk ?? true);
        },
        metrics,
        log,
      },
    };
  }
  const delivery = (id: string, receiveCount: number): IngestDelivery => ({ id, body: `{"id":"${id}"}`, receiptHandle: `rh-${id}`, receiveCount });

  it('backs outages off, retries errors, parks exhausted records and leaves successes alone', async () => {
    const { rec, ports: p } = ports();
    const outcomes = new Map<string, Error | undefined>([
      ['ok', undefined],
      ['out1', new Error('send failed', { cause: injectedError('sqs', '5xx') })],
      ['out7', injectedError('dynamodb', 'throttle')],
      ['bug1', new TypeError('bug')],
      ['bug5', new TypeError('bug')],
      ['outLast', injectedError('dynamodb', '5xx')],
    ]);
    const { failedIds, settled } = await settleIngestFailures(
      [delivery('ok', 1), delivery('out1', 1), delivery('out7', 7), delivery('bug1', 1), delivery('bug5', 5), delivery('outLast', 576)],
      outcomes,
      p,
    );
    expect([...failedIds].sort()).toEqual(['bug1', 'out1', 'out7']);
    expect(rec.changes).toEqual([
      { receiptHandle: 'rh-out1', visibilitySeconds: 15 },
      { receiptHandle: 'rh-out7', visibilitySeconds: 900 },
    ]);
    expect(rec.parked.map((e) => [e.body, e.reason])).toEqual([
      ['{"id":"bug5"}', 'route-error'],
      ['{"id":"outLast"}', 'outage-outlasted-retries'],
    ]);
    expect(rec.parked[1]!.detail).toMatch(/after 576 receives/);
    expect(rec.counted).toContainEqual([METRIC_NAMES.router.outageBackoffs, 2, undefined]);
    expect(rec.counted).toContainEqual([METRIC_NAMES.router.eventsRejected, 1, { Reason: 'route-error' }]);
    expect(rec.warnings).toContain('outage: ingest records backed off instead of retried');
    expect(settled.map((s) => s.id).sort()).toEqual(['bug1', 'bug5', 'out1', 'out7', 'outLast']);
  });

  it('a record whose dead-letter send failed stays in the queue (reported failed)', async () => {
    const { rec, ports: p } = ports({ deadLetterOk: false });
    const { failedIds } = await settleIngestFailures([delivery('bug5', 5)], new Map([['bug5', new TypeError('bug')]]), p);
    expect([...failedIds]).toEqual(['bug5']);
    expect(rec.counted.filter(([n]) => n === METRIC_NAMES.router.eventsRejected)).toEqual([]);
  });
});
