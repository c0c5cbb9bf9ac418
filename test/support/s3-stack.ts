/**
 * An S3-only "local stack" for CLI tests that need nothing but the bucket (`affinity
 * upload <file>`, `affinity stream`): fauxqs in-process, one bucket, and a stack.json in
 * a temporary state folder, so both in-process `main` and a spawned `cli/bin.ts` find it
 * with `--state-dir`. DynamoDB and the queues are named but absent: a command that
 * touches them fails, which these tests want.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
  /** Keys, sizes and declared frame counts under `frames/{videoId}/`, in key order. */
  objects(videoId: string): Promise<{ key: string; size: number; frames: number | undefined }[]>;
  body(key: string): Promise<Uint8Array>;
  stop(): Promise<void>;
}

export async function startS3Stack(bucket = 'frames-test'): Promise<S3Stack> {
  const region = 'us-east-1';
  const fauxqs = await startFauxqsEmulator({ region });
  const s3 = new S3Client({ endpoint: fauxqs.endpoint, region, forcePathStyle: true, credentials: { ...LOCAL_CREDENTIALS } });
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const stateDir = mkdtempSync(path.join(tmpdir(), 's3-stack-'));
  const file: StackFile = {
    region,
    prefix: 'test',
    endpoints: { s3: fauxqs.endpoint, sqs: fauxqs.endpoint, dynamodb: 'http://127.0.0.1:9' },
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
      await fauxqs.stop();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
