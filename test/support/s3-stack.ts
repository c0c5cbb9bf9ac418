/**
 * An S3-only "local stack" for CLI tests that need nothing but the bucket (`affinity
 * upload <file>`, `affinity stream`): fauxqs in-process, one bucket, and a stack.json in
 * a temporary state folder, so both in-process `main` and a spawned `cli/bin.ts` find it
 * with `--state-dir`, through a proxy the test can switch off (an S3 outage). DynamoDB and the queues are named but absent: a command that
 * touches them fails, which these tests want.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { DEFAULT_TUNABLES, type Wiring } from '../../core/config.ts';
import type { StackFile } from '../../core/stack-file.ts';
import { LOCAL_CREDENTIALS, startFauxqsEmulator, type FauxqsHandle } from '../../local/emulators.ts';

export interface S3Stack {
  readonly fauxqs: FauxqsHandle;
  readonly s3: S3Client;
  readonly bucket: string;
  readonly stateDir: string;
  /** Takes S3 away from the processes that use the stack.json (true) or gives it back. */
  s3Down(down: boolean): void;
  /** Keys, sizes and declared frame counts under `frames/{videoId}/`, in key order. */
  objects(videoId: string): Promise<{ key: string; size: number; frames: number | undefined }[]>;
  body(key: string): Promise<Uint8Array>;
  stop(): Promise<void>;
}

/**
 * A loopback proxy in front of fauxqs that the stack.json names, so a test can take S3
 * away from the CLI (every request answered 503 `ServiceUnavailable`, nothing
 * forwarded) while its own client keeps reading the bucket directly.
 */
async function switchableProxy(target: string): Promise<{ endpoint: string; down: (d: boolean) => void; close: () => Promise<void> }> {
  const to = new URL(target);
  let isDown = false;
  const server = createServer((req, res) => {
    if (isDown) {
      req.resume();
      res.writeHead(503, { 'content-type': 'application/xml' }).end('<Error><Code>ServiceUnavailable</Code><Message>test outage</Message></Error>');
      return;
    }
    const up = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    down: (d) => void (isDown = d),
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

export async function startS3Stack(bucket = 'frames-test'): Promise<S3Stack> {
  const region = 'us-east-1';
  const fauxqs = await startFauxqsEmulator({ region });
  const proxy = await switchableProxy(fauxqs.endpoint);
  const s3 = new S3Client({ endpoint: fauxqs.endpoint, region, forcePathStyle: true, credentials: { ...LOCAL_CREDENTIALS } });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const stateDir = mkdtempSync(path.join(tmpdir(), 's3-stack-'));
  const file: StackFile = {
    region,
    prefix: 'test',
    endpoints: { s3: proxy.endpoint, sqs: proxy.endpoint, dynamodb: 'http://127.0.0.1:9' },
    credentials: { ...LOCAL_CREDENTIALS },
    bucket,
    tables: { results: 'results', leases: 'leases', events: 'events' },
    queues: { eventBus: 'bus', ingest: 'ingest', ingestDlq: 'ingest-dlq', slots: ['slot-0.fifo'], slotDlqs: ['slot-0-dlq.fifo'] },
    wiring: { eventsTable: 'events', pinnedSlotIndex: 'pinned' } as unknown as Wiring,
    tunables: DEFAULT_TUNABLES,
    pids: { stack: process.pid, dynamodb: 0, workers: [] },
    startedAt: new Date().toISOString(),
  };
  writeFileSync(path.join(stateDir, 'stack.json'), JSON.stringify(file));
  return {
    fauxqs,
    s3,
    bucket,
    stateDir,
    s3Down: proxy.down,
    async objects(videoId) {
      const out: { key: string; size: number; frames: number | undefined }[] = [];
      let token: string | undefined;
      do {
        const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `frames/${videoId}/`, ContinuationToken: token }));
        for (const o of page.Contents ?? []) {
          const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: o.Key! }));
          const frames = head.Metadata?.frames;
          out.push({ key: o.Key!, size: o.Size ?? 0, frames: frames === undefined ? undefined : Number(frames) });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
      return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    },
    async body(key) {
      return (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToByteArray();
    },
    async stop() {
      s3.destroy();
      await proxy.close();
      await fauxqs.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
