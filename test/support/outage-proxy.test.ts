/**
 * The outage proxy in front of a stand-in emulator: what passes, what is refused with the
 * service's 503, queue URLs rewritten to the proxy, receive counts noted.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outageProxies, type OutageProxies, type OutageService } from './outage-proxy.ts';

let upstream: Server;
let origin: string;
let proxies: OutageProxies;
let endpoints: { s3: string; sqs: string; dynamodb: string };
const seen: string[] = [];

beforeAll(async () => {
  // Answers every request with its own origin in a queue URL, as fauxqs does.
  upstream = createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
      res.end(JSON.stringify({ QueueUrl: `${origin}/000000000000/q-slot-0.fifo`, Messages: [{ Attributes: { ApproximateReceiveCount: '3' } }] }));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  proxies = outageProxies();
  endpoints = await proxies.wrap({ s3: origin, sqs: origin, dynamodb: origin });
});

afterAll(async () => {
  await proxies.stop();
  await new Promise<void>((r) => upstream.close(() => r()));
});

type Req = { service: OutageService; method: string; path: string; headers: Record<string, string>; body?: string };
const sqsReceive: Req = { service: 'sqs', method: 'POST', path: '/', headers: { 'x-amz-target': 'AmazonSQS.ReceiveMessage', 'content-type': 'application/x-amz-json-1.0' }, body: '{"QueueUrl":"http://x/000000000000/q-slot-0.fifo"}' };
const s3Get: Req = { service: 's3', method: 'GET', path: '/bucket/frames/v/000001.jpg', headers: {} };
const s3List: Req = { service: 's3', method: 'GET', path: '/bucket?list-type=2&prefix=frames/v/', headers: {} };
const s3Head: Req = { service: 's3', method: 'HEAD', path: '/bucket/frames/v/000001.jpg', headers: {} };
const s3Put: Req = { service: 's3', method: 'PUT', path: '/bucket/frames/v/000001.jpg', headers: {}, body: 'jpeg' };
const ddb: Req = { service: 'dynamodb', method: 'POST', path: '/', headers: { 'x-amz-target': 'DynamoDB_20120810.GetItem', 'content-type': 'application/x-amz-json-1.0' }, body: '{}' };

async function send(r: Req): Promise<{ status: number; text: string }> {
  const base = r.service === 'dynamodb' ? endpoints.dynamodb : endpoints.sqs;
  const res = await fetch(`${base}${r.path}`, { method: r.method, headers: r.headers, body: r.body });
  return { status: res.status, text: await res.text() };
}

describe('outage proxy', () => {
  it('S3 and SQS share the fauxqs proxy; DynamoDB has its own', () => {
    expect(endpoints.s3).toBe(endpoints.sqs);
    expect(endpoints.dynamodb).not.toBe(endpoints.sqs);
  });

  // Which requests each outage refuses: every one of its service, S3 reads and listings only.
  const table: [OutageService, Req, number][] = [
    ['dynamodb', ddb, 503],
    ['dynamodb', sqsReceive, 200],
    ['dynamodb', s3Get, 200],
    ['sqs', sqsReceive, 503],
    ['sqs', s3Put, 200],
    ['sqs', s3Get, 200],
    ['sqs', ddb, 200],
    ['s3', s3Get, 503],
    ['s3', s3List, 503],
    ['s3', s3Head, 503],
    ['s3', s3Put, 200],
    ['s3', sqsReceive, 200],
  ];
  it.each(table)('%s down: %o answers %i', async (down, req, status) => {
    proxies.switch.down(down);
    try {
      const before = proxies.switch.refused[req.service];
      const r = await send(req);
      expect(r.status).toBe(status);
      expect(proxies.switch.refused[req.service] - before).toBe(status === 503 ? 1 : 0);
      if (status === 503 && req.method !== 'HEAD') expect(r.text).toContain('ServiceUnavailable');
    } finally {
      proxies.switch.up(down);
    }
  });

  it('everything passes again once the service is up', async () => {
    for (const r of [ddb, sqsReceive, s3Get, s3Put]) expect((await send(r)).status).toBe(200);
  });

  it('SQS answers name the proxy in queue URLs, and a receive notes its receive counts', async () => {
    proxies.switch.maxReceiveCount.clear();
    const r = await send(sqsReceive);
    expect(r.text).toContain(`${endpoints.sqs}/000000000000/q-slot-0.fifo`);
    expect(r.text).not.toContain(origin);
    expect(proxies.switch.maxReceiveCount.get('q-slot-0.fifo')).toBe(3);
  });
});
