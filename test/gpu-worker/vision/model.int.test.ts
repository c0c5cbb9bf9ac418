import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startFauxqs } from 'fauxqs';
import type ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../gpu-worker/vision/model-pin.ts';
import { buildDemoModelBytes, DEMO_SIDECAR } from '../../../gpu-worker/vision/demo-model/build-model.ts';
import { createSessionWithProvider, loadModel, parseS3Uri, readUltralyticsMetadata, DEMO_MODEL_PRODUCER } from '../../../gpu-worker/vision/model.ts';

describe('createSessionWithProvider', () => {
  const fakeSession = {} as ort.InferenceSession;

  it('uses CUDA when the CUDA session really loads', async () => {
    const asked: string[][] = [];
    const r = await createSessionWithProvider(new Uint8Array(), true, async (_b, p) => (asked.push(p), fakeSession), true);
    expect([r.provider, asked]).toEqual(['cuda', [['cuda']]]);
  });

  it('falls back to CPU with the CUDA error as the reason', async () => {
    const asked: string[][] = [];
    const create = async (_b: Uint8Array, p: string[]) => {
      asked.push(p);
      if (p.includes('cuda')) throw new Error('Failed to load libcudart.so.12\nstack...');
      return fakeSession;
    };
    const r = await createSessionWithProvider(new Uint8Array(), true, create, true);
    expect(r.provider).toBe('cpu');
    expect(r.providerReason).toBe('CUDA execution provider unavailable (Failed to load libcudart.so.12); using CPU');
    expect(asked).toEqual([['cuda'], ['cpu']]);
  });

  it('does not try CUDA when its provider library is not installed, and says so', async () => {
    const asked: string[][] = [];
    const r = await createSessionWithProvider(new Uint8Array(), true, async (_b, p) => (asked.push(p), fakeSession), false);
    expect(r.provider).toBe('cpu');
    expect(r.providerReason).toContain('no CUDA provider library');
    expect(asked).toEqual([['cpu']]);
  });

  it('uses CPU when CUDA is not preferred', async () => {
    const r = await createSessionWithProvider(new Uint8Array(), false, async () => fakeSession, true);
    expect([r.provider, r.providerReason]).toEqual(['cpu', 'CUDA not requested (preferCuda=false)']);
  });
});

describe('parseS3Uri', () => {
  it('splits bucket and key', () => {
    expect(parseS3Uri('s3://bucket/models/x.onnx')).toEqual({ bucket: 'bucket', key: 'models/x.onnx' });
    expect(parseS3Uri('/tmp/x.onnx')).toBeUndefined();
  });
});

describe('readUltralyticsMetadata', () => {
  it('reads class names, input size and the producer (how the demo model is known) from Ultralytics-style metadata props', async () => {
    expect(await readUltralyticsMetadata(buildDemoModelBytes())).toEqual({ classNames: [...DEMO_SIDECAR.classNames], imgsz: [320, 320], producerName: DEMO_MODEL_PRODUCER });
  });
});

describe('loadModel from S3', () => {
  let server: Awaited<ReturnType<typeof startFauxqs>>;
  let s3: S3Client;

  beforeAll(async () => {
    server = await startFauxqs({ port: 0, logger: false });
    s3 = new S3Client({
      endpoint: server.address,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });
    await s3.send(new CreateBucketCommand({ Bucket: 'models-bucket' }));
    const bytes = buildDemoModelBytes();
    await s3.send(new PutObjectCommand({ Bucket: 'models-bucket', Key: 'models/x.onnx', Body: bytes }));
    await s3.send(
      new PutObjectCommand({ Bucket: 'models-bucket', Key: 'models/x.onnx.json', Body: JSON.stringify({ ...DEMO_SIDECAR, classNames: ['r', 'g', 'b', 'y', 'c', 'm'] }) }),
    );
    await s3.send(new PutObjectCommand({ Bucket: 'models-bucket', Key: 'models/nosidecar.onnx', Body: bytes }));
  });

  afterAll(async () => {
    s3?.destroy();
    await server?.stop();
  });

  it('loads the model and its sidecar from s3://', async () => {
    const model = await loadModel({ uri: 's3://models-bucket/models/x.onnx', s3Client: s3, preferCuda: false });
    expect(model.info).toMatchObject({ metadataSource: 'sidecar', classNames: ['r', 'g', 'b', 'y', 'c', 'm'], inputWidth: 320, dynamicBatch: true });
    expect(model.provider).toBe('cpu');
    await model.session.release();
  });

  it('falls back to the ONNX metadata when there is no sidecar', async () => {
    const model = await loadModel({ uri: 's3://models-bucket/models/nosidecar.onnx', s3Client: s3, preferCuda: false });
    expect(model.info).toMatchObject({ metadataSource: 'onnx-metadata', classNames: [...DEMO_SIDECAR.classNames], inputHeight: 320 });
    await model.session.release();
  });

  it('loads a model pinned by its sha256 and refuses one whose bytes differ (modelSha256)', async () => {
    // Prepare
    const pinned = sha256Hex(buildDemoModelBytes());

    // Act
    const model = await loadModel({ uri: 's3://models-bucket/models/x.onnx', s3Client: s3, preferCuda: false, sha256: pinned });
    await model.session.release();
    const wrong = loadModel({ uri: 's3://models-bucket/models/x.onnx', s3Client: s3, preferCuda: false, sha256: '0'.repeat(64) });

    // Assess
    expect(model.info.inputWidth).toBe(320);
    await expect(wrong).rejects.toThrow(`model s3://models-bucket/models/x.onnx: sha256 ${pinned} does not match modelSha256 ${'0'.repeat(64)}`);
  });

  it('fails clearly for a missing model', async () => {
    await expect(loadModel({ uri: 's3://models-bucket/models/missing.onnx', s3Client: s3, preferCuda: false })).rejects.toThrow();
  });
});
