/**
 * The router's ingest tunables (issue 20, decision 33): batch sizes up to Lambda's 10,000
 * with its rule that more than 10 needs a batching window, windows up to 300 s, and a
 * maximum concurrency derived from slotCount unless overridden, within Lambda's 2..1000.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_TUNABLES, routerMaxConcurrencyOf, validateTunables, type Tunables } from '../../../core/config.ts';

const valid = (change: Partial<Tunables>) => () => validateTunables({ ...DEFAULT_TUNABLES, ...change });

describe('router ingest tunables', () => {
  it.each([
    ['batch 10 without a window', { routerBatchSize: 10, routerBatchWindowSeconds: 0 }],
    ['batch 11 with a 1 s window', { routerBatchSize: 11, routerBatchWindowSeconds: 1 }],
    ['batch 10,000 with a 1 s window', { routerBatchSize: 10_000, routerBatchWindowSeconds: 1 }],
    ['a 150 s window at the default 180 s visibility', { routerBatchWindowSeconds: 150 }],
    ['a 300 s window with a 360 s visibility', { routerBatchWindowSeconds: 300, ingestVisibilitySeconds: 360 }],
    ['concurrency 2 (Lambda minimum)', { routerMaxConcurrency: 2 }],
    ['concurrency 1,000 (Lambda maximum)', { routerMaxConcurrency: 1000 }],
    ['concurrency 0 (derived)', { routerMaxConcurrency: 0 }],
    ['send concurrency 1 (sequential)', { routerSendConcurrency: 1 }],
  ] as const)('accepts %s', (_name, change) => {
    expect(valid(change)).not.toThrow();
  });

  it.each([
    ['batch 11 without a window', { routerBatchSize: 11, routerBatchWindowSeconds: 0 }, /routerBatchSize \(11\) above 10 must have routerBatchWindowSeconds of at least 1/],
    ['batch 10,000 without a window', { routerBatchSize: 10_000, routerBatchWindowSeconds: 0 }, /above 10 must have routerBatchWindowSeconds/],
    ['batch 10,001', { routerBatchSize: 10_001, routerBatchWindowSeconds: 1 }, /routerBatchSize must be an integer between 1 and 10000/],
    ['batch 0', { routerBatchSize: 0 }, /routerBatchSize must be an integer between 1 and 10000/],
    ['a 301 s window', { routerBatchWindowSeconds: 301, ingestVisibilitySeconds: 600 }, /routerBatchWindowSeconds must be an integer between 0 and 300/],
    ['a window that outlasts the visibility less the router timeout', { routerBatchWindowSeconds: 151 }, /would be delivered twice/],
    ['concurrency 1', { routerMaxConcurrency: 1 }, /routerMaxConcurrency must be 0 \(derived from `slotCount`.*\) or an integer between 2 and 1000/],
    ['concurrency 1,001', { routerMaxConcurrency: 1001 }, /routerMaxConcurrency must be 0/],
    ['send concurrency 0', { routerSendConcurrency: 0 }, /routerSendConcurrency must be an integer between 1 and 50/],
    ['send concurrency 51', { routerSendConcurrency: 51 }, /routerSendConcurrency must be an integer between 1 and 50/],
  ] as const)('refuses %s', (_name, change, message) => {
    expect(valid(change)).toThrow(ConfigError);
    expect(valid(change)).toThrow(message);
  });

  it.each([
    [1, 0, 10],
    [4, 0, 10],
    [20, 0, 10],
    [21, 0, 11],
    [250, 0, 125],
    [1000, 0, 500],
    [1000, 1000, 1000],
    [4, 2, 2],
    [1000, 64, 64],
  ])('at %i slots and routerMaxConcurrency %i the event source gets %i', (slotCount, routerMaxConcurrency, expected) => {
    expect(routerMaxConcurrencyOf({ slotCount, routerMaxConcurrency })).toBe(expected);
  });
});
