/**
 * An outage switch for the local stack: a loopback HTTP proxy in front of each emulator,
 * which every process of the stack (router poller and handler, janitor, worker children,
 * the test's own clients) reaches through the stack's endpoints. While a service is
 * "down" the proxy answers its requests the way AWS does in an outage: HTTP 503 with the
 * service's `ServiceUnavailable` error, so the production SDK clients retry, give up and
 * surface the error exactly as they would against the real service.
 *
 * fauxqs serves S3 and SQS on one port: a request is SQS when it carries the JSON
 * protocol's `X-Amz-Target: AmazonSQS.*` header (or is a query-protocol form post), and
 * S3 otherwise. An S3 outage fails reads only (GET, HEAD: object reads and listings):
 * uploads must still reach the bucket, since the uploaders are not part of the system
 * under test.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LocalEndpoints } from '../../local/local-task-launcher.ts';

export type OutageService = 'dynamodb' | 'sqs' | 's3';

/** Which services are down now, and how many requests each outage refused. */
export class OutageSwitch {
  private readonly downSet = new Set<OutageService>();
  /** Requests answered 503, per service, since the stack started. */
  readonly refused: Record<OutageService, number> = { dynamodb: 0, sqs: 0, s3: 0 };

  down(service: OutageService): void {
    this.downSet.add(service);
  }

  up(service: OutageService): void {
    this.downSet.delete(service);
  }

  isDown(service: OutageService): boolean {
    return this.downSet.has(service);
  }

  /**
   * Highest ApproximateReceiveCount any receive answered with, per queue name, when the
   * receiver asked for it (the workers and the router's event source do): how close any
   * message came to its queue's redrive. Clear it to measure one period.
   */
  readonly maxReceiveCount = new Map<string, number>();

  /** Notes the receive counts of one ReceiveMessage answer. */
  noteReceive(queueUrl: string, answer: string): void {
    const queue = queueUrl.slice(queueUrl.lastIndexOf('/') + 1);
    let messages: { Attributes?: Record<string, string> }[] = [];
    try {
      messages = (JSON.parse(answer) as { Messages?: typeof messages }).Messages ?? [];
    } catch {
      return;
    }
    for (const m of messages) {
      const n = Number(m.Attributes?.ApproximateReceiveCount);
      if (Number.isFinite(n)) this.maxReceiveCount.set(queue, Math.max(n, this.maxReceiveCount.get(queue) ?? 0));
    }
  }
}

function fauxqsService(req: IncomingMessage): 'sqs' | 's3' {
  const target = req.headers['x-amz-target'];
  if (typeof target === 'string' && target.startsWith('AmazonSQS')) return 'sqs';
  const type = req.headers['content-type'] ?? '';
  if (req.method === 'POST' && (req.url === '/' || req.url?.startsWith('/0')) && type.startsWith('application/x-www-form-urlencoded')) return 'sqs';
  return 's3';
}

/** Whether the request fails while its service is down (S3: reads and listings only). */
function refuses(service: OutageService, method: string | undefined): boolean {
  return service !== 's3' || method === 'GET' || method === 'HEAD';
}

/** The error body and headers AWS answers with in an outage, per service's protocol. */
function unavailable(service: OutageService, req: IncomingMessage, res: ServerResponse): void {
  const message = 'Service unavailable (test outage)';
  if (service === 's3') {
    res.writeHead(503, { 'content-type': 'application/xml' });
    res.end(req.method === 'HEAD' ? undefined : `<?xml version="1.0" encoding="UTF-8"?><Error><Code>ServiceUnavailable</Code><Message>${message}</Message></Error>`);
  } else if (service === 'sqs') {
    res.writeHead(503, { 'content-type': 'application/x-amz-json-1.0', 'x-amzn-query-error': 'ServiceUnavailable;Receiver' });
    res.end(JSON.stringify({ __type: 'com.amazonaws.sqs#ServiceUnavailable', message }));
  } else {
    res.writeHead(503, { 'content-type': 'application/x-amz-json-1.0' });
    res.end(JSON.stringify({ __type: 'com.amazonaws.dynamodb.v20120810#ServiceUnavailableException', message }));
  }
}

async function proxy(target: string, classify: (req: IncomingMessage) => OutageService, sw: OutageSwitch): Promise<{ endpoint: string; server: Server }> {
  const to = new URL(target);
  const self = { origin: '' };
  const server = createServer((req, res) => {
    const service = classify(req);
    if (sw.isDown(service) && refuses(service, req.method)) {
      sw.refused[service]++;
      req.resume();
      req.on('end', () => unavailable(service, req, res));
      return;
    }
    const upstream = request(
      { hostname: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (up) => {
        if (service !== 'sqs') {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
          return;
        }
        // Queue URLs in SQS answers name the proxy, not fauxqs: SDK v3 sends a request to
        // its QueueUrl's host when the client has no explicit endpoint (the Lambdas' and
        // workers' clients), which would bypass the outage.
        const chunks: Buffer[] = [];
        up.on('data', (c: Buffer) => chunks.push(c));
        up.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (req.headers['x-amz-target'] === 'AmazonSQS.ReceiveMessage') {
            try {
              sw.noteReceive(String((JSON.parse(Buffer.concat(sent).toString('utf8')) as { QueueUrl?: string }).QueueUrl ?? ''), text);
            } catch {
              // Not JSON: nothing to note.
            }
          }
          const body = Buffer.from(text.replaceAll(to.origin, self.origin));
          const headers = { ...up.headers, 'content-length': String(body.length) };
          delete headers['transfer-encoding'];
          res.writeHead(up.statusCode ?? 502, headers);
          res.end(body);
        });
      },
    );
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    // The request body too, for SQS: a receive's answer is noted per queue.
    const sent: Buffer[] = [];
    if (service === 'sqs') req.on('data', (c: Buffer) => sent.push(c));
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  self.origin = `http://127.0.0.1:${port}`;
  return { endpoint: self.origin, server };
}

/** The proxies of one stack: their endpoints, the switch, and a stop. */
export interface OutageProxies {
  readonly switch: OutageSwitch;
  /** For `LocalStackOptions.wrapEndpoints`: starts a proxy per emulator and returns their endpoints. */
  wrap(direct: LocalEndpoints): Promise<LocalEndpoints>;
  stop(): Promise<void>;
}

/** Proxies to be started by the local stack (see `wrapEndpoints`) once the emulators listen. */
export function outageProxies(): OutageProxies {
  const sw = new OutageSwitch();
  const servers: Server[] = [];
  return {
    switch: sw,
    async wrap(direct) {
      const fauxqs = await proxy(direct.sqs, fauxqsService, sw);
      const dynamo = await proxy(direct.dynamodb, () => 'dynamodb', sw);
      servers.push(fauxqs.server, dynamo.server);
      return { s3: fauxqs.endpoint, sqs: fauxqs.endpoint, dynamodb: dynamo.endpoint };
    },
    async stop() {
      for (const s of servers) {
        s.closeAllConnections();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
  };
}
