/**
 * `affinity upload`'s sending half against fauxqs S3 (started in-process, no DynamoDB):
 * every segment lands under its first frame's key with its frame count in
 * `x-amz-meta-frames`, a rerun sends only what is missing, a conflicting key stops the
 * upload before anything is sent, and `--end` writes the last frame.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CreateBucketCommand, DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { LOCAL_CREDENTIALS, startFauxqsEmulator, type FauxqsHandle } from '../../../local/emulators.ts';
import { declaredFrameCount } from '../../../core/ingest/segment-keys.ts';
import { listVideoObjects, UploadConflictError, uploadVideoFile } from '../../../cli/video/segment-upload.ts';
import { decodeSegment } from '../../../gpu-worker/video/segment-decoder.ts';

const SOURCE = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../gpu-worker/video/fixtures/bframes-45.mp4');
const BUCKET = 'segment-upload-test';
let fauxqs: FauxqsHandle;
let s3: S3Client;
let dir: string;

beforeAll(async () => {
  fauxqs = await startFauxqsEmulator({ region: 'us-east-1' });
  s3 = new S3Client({ endpoint: fauxqs.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { ...LOCAL_CREDENTIALS } });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  dir = mkdtempSync(path.join(tmpdir(), 'segment-upload-'));
});

afterAll(async () => {
  s3?.destroy();
  await fauxqs?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const options = (videoId: string, extra: Partial<Parameters<typeof uploadVideoFile>[1]> = {}) => ({
  s3,
  bucket: BUCKET,
  videoId,
  outDir: path.join(dir, videoId, String(Math.random())),
  segmentSeconds: 0.5,
  ...extra,
});

describe('uploadVideoFile', () => {
  it('lands the lowest segment alone before any other is sent, then sends the rest in parallel (issue 41: no first segment processed late)', async () => {
    // Prepare: an S3 client whose first segment's PUT is slow, recording when each PUT starts and ends
    const events: string[] = [];
    let inFlight = 0;
    let maxInFlight = 0;
    const slow = {
      send: async (command: { input: { Key?: string } }) => {
        const key = command.input.Key ?? '';
        const isPut = command instanceof PutObjectCommand;
        if (isPut) {
          events.push(`start ${path.basename(key)}`);
          maxInFlight = Math.max(maxInFlight, ++inFlight);
          // the first segment is the slowest: with 4 lanes from the start it would land last
          await new Promise((r) => setTimeout(r, key.endsWith('000000.ts') ? 400 : 50));
        }
        try {
          return await s3.send(command as never);
        } finally {
          if (isPut) {
            inFlight--;
            events.push(`end ${path.basename(key)}`);
          }
        }
      },
    } as unknown as S3Client;

    // Act
    const r = await uploadVideoFile(SOURCE, options('order-1', { s3: slow, concurrency: 4, segmentSeconds: 0.2 }));

    // Assert: nothing else starts before the first segment has landed; the rest overlap
    expect(r.plan.upload.length).toBeGreaterThanOrEqual(3);
    expect(events.slice(0, 2)).toEqual(['start 000000.ts', 'end 000000.ts']);
    expect(maxInFlight).toBeGreaterThan(1);
    expect(events.filter((e) => e.startsWith('end '))).toHaveLength(r.plan.upload.length);
  });

  it('uploads each segment under its first frame with its frame count; what lands decodes to the whole file', async () => {
    const progress: string[] = [];
    const r = await uploadVideoFile(SOURCE, options('up-1', { end: true, onProgress: (p) => progress.push(`${p.done}/${p.total}`) }));
    expect(r.plan.upload.map((s) => s.key)).toEqual(['frames/up-1/000000.ts', 'frames/up-1/000015.ts', 'frames/up-1/000030.ts']);
    expect([r.frames, r.lastFrame, r.endWritten]).toEqual([45, 44, true]);
    expect(progress).toEqual(['0/3', '1/3', '2/3', '3/3']);
    let frames = 0;
    for (const s of r.plan.upload) {
      const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: s.key }));
      expect(declaredFrameCount(head.Metadata)).toBe(15);
      expect(head.ContentType).toBe('video/mp2t');
      const body = await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: s.key }))).Body!.transformToByteArray();
      for await (const item of decodeSegment(body, { firstFrame: s.firstFrame, declaredFrames: declaredFrameCount(head.Metadata) })) {
        if (item.kind === 'frame') expect(item.frame).toBe(frames++);
        else expect(item.kind === 'end' ? item.failure : item).toBeUndefined();
      }
    }
    expect(frames).toBe(45);
    const end = await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'frames/up-1/_end' }))).Body!.transformToString();
    expect(end).toBe('44');
  });

  it('resumes: a rerun sends only the segments S3 does not hold', async () => {
    await uploadVideoFile(SOURCE, options('up-2'));
    const again = await uploadVideoFile(SOURCE, options('up-2'));
    expect([again.plan.upload.length, again.plan.skip.length]).toEqual([0, 3]);
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: 'frames/up-2/000015.ts' }));
    const resumed = await uploadVideoFile(SOURCE, options('up-2'));
    expect(resumed.plan.upload.map((s) => s.key)).toEqual(['frames/up-2/000015.ts']);
    expect((await listVideoObjects(s3, BUCKET, 'up-2')).map((o) => o.key)).toEqual(['frames/up-2/000000.ts', 'frames/up-2/000015.ts', 'frames/up-2/000030.ts']);
  });

  it('stops before sending anything when a key holds other bytes', async () => {
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'frames/up-3/000030.ts', Body: 'other bytes' }));
    await expect(uploadVideoFile(SOURCE, options('up-3'))).rejects.toThrow(UploadConflictError);
    expect((await listVideoObjects(s3, BUCKET, 'up-3')).map((o) => o.key)).toEqual(['frames/up-3/000030.ts']);
  });
});
