/** The AWS latency model of the benches (lab/aws/latency-model.ts): parsing, lookup, and the draws' quantiles. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_LATENCY_TABLE, LatencyModel, parseLatencyModel } from '../../../lab/aws/latency-model.ts';

describe('parseLatencyModel', () => {
  it('fills the defaults', () => {
    const c = parseLatencyModel('{}');
    expect(c).toMatchObject({ seed: 1, scale: 1 });
    expect(c.services.s3!.GetObject).toEqual(DEFAULT_LATENCY_TABLE.s3!.GetObject);
  });

  it('merges an override over the defaults of its service', () => {
    const c = parseLatencyModel(JSON.stringify({ services: { sqs: { ReceiveMessage: { p50Ms: 5, p99Ms: 9 } } } }));
    expect(c.services.sqs!.ReceiveMessage).toEqual({ p50Ms: 5, p99Ms: 9 });
    expect(c.services.sqs!.default).toEqual(DEFAULT_LATENCY_TABLE.sqs!.default);
  });

  it.each([
    ['not JSON', 'nope', /not JSON/],
    ['an array', '[1]', /JSON object/],
    ['a fractional seed', '{"seed":1.5}', /seed/],
    ['a negative scale', '{"scale":-1}', /scale/],
    ['p99 below p50', '{"services":{"s3":{"GetObject":{"p50Ms":30,"p99Ms":10}}}}', /p50Ms <= p99Ms/],
    ['a spec without numbers', '{"services":{"s3":{"GetObject":{}}}}', /GetObject/],
  ])('refuses %s', (_name, text, error) => {
    expect(() => parseLatencyModel(text)).toThrow(error);
  });
});

describe('LatencyModel', () => {
  it.each([
    ['s3', 'GetObjectCommand', DEFAULT_LATENCY_TABLE.s3!.GetObject],
    ['dynamodb', 'TransactWriteItems', DEFAULT_LATENCY_TABLE.dynamodb!.TransactWriteItems],
    ['dynamodb', 'UpdateItem', DEFAULT_LATENCY_TABLE.dynamodb!.default],
    ['sqs', 'DeleteMessageBatch', DEFAULT_LATENCY_TABLE.sqs!.default],
    ['ecs', 'RunTask', { p50Ms: 10, p99Ms: 40 }],
  ])('%s %s uses its spec', (service, op, spec) => {
    expect(new LatencyModel(parseLatencyModel('{}')).specFor(service, op)).toEqual(spec);
  });

  it('draws a log-normal with the stated median and 99th percentile, the same for the same seed', () => {
    const draws = (seed: number) => {
      const m = new LatencyModel(parseLatencyModel(JSON.stringify({ seed })));
      return Array.from({ length: 20_000 }, () => m.delayMs('s3', 'GetObject'));
    };
    const a = draws(7);
    expect(draws(7)).toEqual(a);
    const sorted = [...a].sort((x, y) => x - y);
    expect(sorted[10_000]!).toBeGreaterThan(27);
    expect(sorted[10_000]!).toBeLessThan(33);
    expect(sorted[19_800]!).toBeGreaterThan(200);
    expect(sorted[19_800]!).toBeLessThan(310);
  });

  it('scale 0 turns every delay off', () => {
    const m = new LatencyModel(parseLatencyModel('{"scale":0}'));
    expect(m.delayMs('dynamodb', 'TransactWriteItems')).toBe(0);
  });
});
