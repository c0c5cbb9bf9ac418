/**
 * The rules store against fauxqs S3 through the production SDK client: a video's own
 * document wins over the default, re-checks are conditional GETs at most once per
 * refresh interval, a change takes effect after the interval, an invalid document keeps
 * the last good rules (reported once, with a metric), a removed document ends the rules.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { startLocalStack, type LocalStack } from '../../../../local/stack.ts';
import { sharedStackOptions } from '../../../../harness/shared-dynamodb.ts';
import { DEFAULT_RULES_KEY, RulesStore, rulesKey } from '../../../../core/analytics/s3/rules-store.ts';
import { METRIC_NAMES } from '../../../../core/metric-names.ts';
import type { LogSink, MetricSink } from '../../../../core/ports.ts';

let stack: LocalStack;

beforeAll(async () => {
  stack = await startLocalStack({ ...sharedStackOptions(), quiet: true, routerHandler: false, janitorHandler: false, stateDir: `.local/test-rules-store-${process.pid}` });
});

afterAll(async () => {
  await stack?.stop();
});

const line = (id: string) => ({ lines: [{ id, a: [0, 100], b: [200, 100] }] });

function harness() {
  const logged: string[] = [];
  const counted: string[] = [];
  const gets: string[] = [];
  const log: LogSink = { debug() {}, info() {}, warn: (m) => void logged.push(m), error: (m) => void logged.push(m) };
  const metrics: MetricSink = { count: (n) => void counted.push(n), milliseconds() {} };
  stack.clients.s3.middlewareStack.add(
    (next, ctx) => async (args) => {
      if (ctx.commandName === 'GetObjectCommand') gets.push(`${(args.input as { Key: string }).Key}${(args.input as { IfNoneMatch?: string }).IfNoneMatch ? ' if-none-match' : ''}`);
      return next(args);
    },
    { step: 'initialize', name: `count-gets-${Math.random()}` },
  );
  const store = new RulesStore({ s3: stack.clients.s3, bucket: stack.wiring.bucket, refreshMs: 1_000, log, metrics });
  return { store, logged, counted, gets };
}

const put = (key: string, body: unknown) => stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: key, Body: typeof body === 'string' ? body : JSON.stringify(body) }));

describe('RulesStore on S3', () => {
  it('own document over the default; conditional re-checks once per interval; changes, bad versions and removal', async () => {
    const h = harness();
    await put(DEFAULT_RULES_KEY, line('default-line'));
    await put(rulesKey('rs-own'), line('own-line'));
    // Own document wins; a video without one gets the default.
    const own = await h.store.view('rs-own', undefined, 0);
    expect(own.rules?.lines.map((l) => l.id)).toEqual(['own-line']);
    expect(own.etag).toMatch(/^video:/);
    const dflt = await h.store.view('rs-none', undefined, 0);
    expect(dflt.rules?.lines.map((l) => l.id)).toEqual(['default-line']);
    expect(dflt.etag).toMatch(/^default:/);
    // Within the interval: no call at all.
    h.gets.length = 0;
    expect(await h.store.view('rs-own', undefined, 999)).toBe(own);
    expect(h.gets).toEqual([]);
    // After it: one conditional GET, unchanged.
    const again = await h.store.view('rs-own', undefined, 1_000);
    expect(h.gets).toEqual([`${rulesKey('rs-own')} if-none-match`]);
    expect(again).toEqual(own);
    // A changed document takes effect at the next re-check.
    await put(rulesKey('rs-own'), line('moved-line'));
    const moved = await h.store.view('rs-own', undefined, 2_000);
    expect(moved.rules?.lines.map((l) => l.id)).toEqual(['moved-line']);
    expect(moved.etag).not.toBe(own.etag);
    // An invalid version: reported (log + metric) once, the last good rules stay in effect.
    await put(rulesKey('rs-own'), '{ "lines": [ { "id": "x" } ] }');
    const bad = await h.store.view('rs-own', undefined, 3_000);
    expect(bad.etag).toBe(moved.etag);
    expect(bad.rules).toEqual(moved.rules);
    expect(bad.invalid?.errors).toContain('lines[0].a: must be [x, y] in pixels (finite numbers, |c| <= 65536)');
    const badAgain = await h.store.view('rs-own', undefined, 4_000);
    expect(badAgain.invalid).toEqual(bad.invalid);
    expect(h.counted.filter((n) => n === METRIC_NAMES.worker.rulesInvalid)).toHaveLength(1);
    expect(h.logged.filter((m) => m.startsWith('rules document invalid'))).toHaveLength(1);
    // Removed: the video falls back to the default.
    await stack.clients.s3.send(new DeleteObjectCommand({ Bucket: stack.wiring.bucket, Key: rulesKey('rs-own') }));
    const fallback = await h.store.view('rs-own', undefined, 5_000);
    expect(fallback.rules?.lines.map((l) => l.id)).toEqual(['default-line']);
  });

  it('a successor starts from the checkpoint\'s rules and keeps them while the document is unchanged', async () => {
    const h = harness();
    await put(rulesKey('rs-succ'), line('door'));
    const first = await h.store.view('rs-succ', undefined, 0);
    const successor = harness().store;
    const committed = { etag: first.etag, rules: first.rules!, tracks: {}, totals: { lines: {}, zones: {} } };
    const view = await successor.view('rs-succ', committed, 0);
    expect(view.etag).toBe(first.etag);
    expect(view.rules).toEqual(first.rules);
  });
});
