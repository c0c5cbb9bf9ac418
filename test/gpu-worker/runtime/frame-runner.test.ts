/**
 * Fault isolation in the worker's frame runner, on paths the emulators cannot produce:
 * an archived object (InvalidObjectState), throttling that persists, a processor that
 * throws. One bad frame costs one record; one bad video costs that video's round only.
 */
import { DynamoDbRecords } from '../../../core/commit/dynamodb/results-reader.ts';
import { beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { GetObjectCommand, InvalidObjectState, S3Client, S3ServiceException } from '@aws-sdk/client-s3';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { FrameStore } from '../../../core/ingest/s3/frame-store.ts';
import { FrameRunner, type VideoPlan } from '../../../gpu-worker/runtime/frame-runner.ts';
import { isTransient } from '../../../gpu-worker/sources/read-errors.ts';
import { createFrameSources } from '../../../gpu-worker/sources/frame-sources.ts';
import type { FrameInput, FrameOutcome, FrameProcessor, LateFrameInput, LogSink } from '../../../core/ports.ts';
import { nullMetrics } from '../../../core/ports.ts';
import type { SequencedStep } from '../../../core/ordering/sequencer.ts';

const s3 = new S3Client({ region: 'us-east-1' });
const s3Mock = mockClient(S3Client);
const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

/** A processor that records what it was given and can be told to throw for a video. */
class RecordingProcessor implements FrameProcessor {
  readonly description = 'recording';
  readonly seen: string[] = [];
  failFor = new Set<string>();
  async start() {}
  openVideo() {}
  async process(frames: readonly FrameInput[]): Promise<FrameOutcome[]> {
    await new Promise((r) => setTimeout(r, 5));
    if (frames.some((f) => this.failFor.has(f.videoId))) throw new Error('model exploded');
    for (const f of frames) this.seen.push(`${f.videoId}:${f.frame}`);
    return frames.map(() => ({ status: 'ok', detections: [] }));
  }
  async processLate(frames: readonly LateFrameInput[]): Promise<FrameOutcome[]> {
    return this.process(frames);
  }
  snapshot() {
    return '';
  }
  closeVideo() {}
  async stop() {}
}

function runner(processor: FrameProcessor) {
  return new FrameRunner({
    sources: createFrameSources({ frames: new FrameStore(s3), tunables: { maxFrameBytes: 1000 }, metrics: nullMetrics, log: quiet }),
    processor,
    records: new DynamoDbRecords({ ddb: DynamoDBDocumentClient.from(new DynamoDBClient({ region: 'us-east-1' })), resultsTable: 'results' }),
    tunables: {},
    metrics: nullMetrics,
    log: quiet,
    now: Date.now,
  });
}

const key = (videoId: string, frame: number) => `frames/${videoId}/${frame}.jpg`;
const plan = (videoId: string, frames: number[], parked = new Map<number, string>()): VideoPlan => ({
  videoId,
  steps: frames.map((frame): SequencedStep => ({ type: 'frame', ref: { frame, bucket: 'b', key: key(videoId, frame), sizeBytes: 10 } })),
  parked,
});
/** The one method of a response body FrameStore uses. */
const body = () => ({ transformToByteArray: async () => new Uint8Array(Buffer.from('jpeg bytes')) }) as never;
const s3Error = (name: string, status: number, fault: 'client' | 'server') =>
  new S3ServiceException({ name, message: `${name}!`, $fault: fault, $metadata: { httpStatusCode: status } });

beforeEach(() => {
  s3Mock.reset();
  s3Mock.on(GetObjectCommand).callsFake(async () => ({ Body: body() }));
});

describe('FrameRunner fault isolation', () => {
  it('gives a frame in GLACIER a failed outcome with the S3 error code, and processes the rest', async () => {
    // Prepare
    s3Mock.on(GetObjectCommand, { Key: key('poisoned', 1) }).rejects(new InvalidObjectState({ message: 'The operation is not valid for the object storage class', $metadata: { httpStatusCode: 403 } }));
    const p = new RecordingProcessor();
    // Act
    const runs = await runner(p).run([plan('poisoned', [0, 1, 2]), plan('unrelated', [0, 1, 2, 3])]);
    // Assess
    const poisoned = runs.get('poisoned')!;
    const unrelated = runs.get('unrelated')!;
    expect(poisoned.ok && poisoned.outcomes.get(1)).toMatchObject({ status: 'failed', reason: 'InvalidObjectState' });
    expect(poisoned.ok && [...poisoned.outcomes.entries()].filter(([, o]) => o.status === 'ok').map(([f]) => f).sort()).toEqual([0, 2]);
    expect(unrelated.ok && [...unrelated.outcomes.values()].every((o) => o.status === 'ok')).toBe(true);
    expect(p.seen.filter((s) => s.startsWith('unrelated'))).toEqual(['unrelated:0', 'unrelated:1', 'unrelated:2', 'unrelated:3']);
  });

  it('retries a transient error, and if it persists fails only that video, blaming the frame', async () => {
    // Prepare: throttled twice, then fine for frame 0 of "flaky"; frame 1 is always throttled
    let calls = 0;
    s3Mock.on(GetObjectCommand, { Key: key('flaky', 0) }).callsFake(async () => {
      calls++;
      if (calls <= 2) throw s3Error('SlowDown', 503, 'server');
      return { Body: body() };
    });
    s3Mock.on(GetObjectCommand, { Key: key('flaky', 1) }).rejects(s3Error('SlowDown', 503, 'server'));
    const p = new RecordingProcessor();
    // Act
    const runs = await runner(p).run([plan('flaky', [0, 1]), plan('steady', [0])]);
    // Assess
    expect(calls).toBe(3);
    expect(runs.get('flaky')).toMatchObject({ ok: false, reason: 'SlowDown', blamed: [1] });
    expect(runs.get('steady')).toMatchObject({ ok: true });
    // The failed video's frames never reached the processor: nothing to undo.
    expect(p.seen).toEqual(['steady:0']);
  });

  it('fails only the video whose processing throws, after every video\'s work has finished', async () => {
    const p = new RecordingProcessor();
    p.failFor.add('broken');
    const runs = await runner(p).run([plan('broken', [0, 1]), plan('fine', [0, 1])]);
    expect(runs.get('broken')).toMatchObject({ ok: false, reason: 'processing-error', blamed: [0, 1] });
    expect(runs.get('fine')).toMatchObject({ ok: true });
    // Nothing is still running once run() returns (no stale work can land later).
    const seen = p.seen.length;
    await new Promise((r) => setTimeout(r, 30));
    expect(p.seen.length).toBe(seen);
  });

  it('records a parked frame as failed with its reason without fetching it', async () => {
    const runs = await runner(new RecordingProcessor()).run([plan('parked', [4, 5], new Map([[4, 'SlowDown']]))]);
    const r = runs.get('parked')!;
    expect(r.ok && r.outcomes.get(4)).toMatchObject({ status: 'failed', reason: 'SlowDown' });
    expect(r.ok && r.outcomes.get(5)).toMatchObject({ status: 'ok' });
    expect(s3Mock.commandCalls(GetObjectCommand).map((c) => c.args[0].input.Key)).toEqual([key('parked', 5)]);
  });

  it('screens empty and oversized objects without fetching them', async () => {
    const steps: SequencedStep[] = [
      { type: 'frame', ref: { frame: 0, bucket: 'b', key: key('sizes', 0), sizeBytes: 0 } },
      { type: 'frame', ref: { frame: 1, bucket: 'b', key: key('sizes', 1), sizeBytes: 5000 } },
    ];
    const r = (await runner(new RecordingProcessor()).run([{ videoId: 'sizes', steps, parked: new Map() }])).get('sizes')!;
    expect(r.ok && [r.outcomes.get(0), r.outcomes.get(1)]).toMatchObject([{ reason: 'empty-object' }, { reason: 'oversized' }]);
    expect(s3Mock.commandCalls(GetObjectCommand)).toHaveLength(0);
  });
});

/** A records port whose neighbour reads are throttled for the first `throttled` calls (or always). */
function throttledRecords(throttled: number) {
  const r = {
    calls: 0,
    async nearestProcessed(videoId: string, frame: number, direction: 'before' | 'after') {
      r.calls++;
      if (r.calls <= throttled) throw Object.assign(new Error('Rate of requests exceeds the allowed throughput.'), { name: 'ThrottlingException', $fault: 'client', $metadata: { httpStatusCode: 400 } });
      return direction === 'before' ? { videoId, frame: frame - 1, kind: 'frame' as const, status: 'ok' as const, detections: [] } : undefined;
    },
  };
  return r;
}

function lateRunner(processor: FrameProcessor, records: ReturnType<typeof throttledRecords>) {
  return new FrameRunner({ sources: createFrameSources({ frames: new FrameStore(s3), tunables: { maxFrameBytes: 1000 }, metrics: nullMetrics, log: quiet }), processor, records: records as never, tunables: {}, metrics: nullMetrics, log: quiet, now: Date.now });
}

const latePlan = (videoId: string, frames: number[]): VideoPlan => ({
  videoId,
  steps: frames.map((frame): SequencedStep => ({ type: 'late', ref: { frame, bucket: 'b', key: key(videoId, frame), sizeBytes: 10, replacesGap: false } })),
  parked: new Map(),
});

describe('FrameRunner late frames', () => {
  it("retries a late frame's throttled neighbour read inside the round instead of failing the round", async () => {
    // Prepare: the first two neighbour reads are throttled (a replay's re-sent frames reach a
    // worker already past them: many late frames, two reads each, at a few per cent of throttles)
    const records = throttledRecords(2);
    const p = new RecordingProcessor();
    // Act
    const runs = await lateRunner(p, records).run([latePlan('replayed', [9])]);
    // Assess: the round goes through (before the fix it failed on the first throttle, and
    // retried as a whole with every late frame's reads, it almost never went through)
    expect(runs.get('replayed')).toMatchObject({ ok: true });
    expect(p.seen).toEqual(['replayed:9']);
    expect(records.calls).toBeGreaterThan(2);
  });

  it('fails the round as transient, blaming the frame, when the neighbour reads stay throttled', async () => {
    const records = throttledRecords(Infinity);
    const p = new RecordingProcessor();
    const runs = await lateRunner(p, records).run([latePlan('outage', [9])]);
    expect(runs.get('outage')).toMatchObject({ ok: false, reason: 'ThrottlingException', blamed: [9], transient: true });
    expect(p.seen).toEqual([]);
  });
});

describe('isTransient', () => {
  it('retries throttling, 5xx and timeouts, not client errors', () => {
    expect(isTransient(s3Error('SlowDown', 503, 'server'))).toBe(true);
    expect(isTransient(s3Error('InternalError', 500, 'server'))).toBe(true);
    expect(isTransient(Object.assign(new Error('socket hang up'), { name: 'TimeoutError', $metadata: {} }))).toBe(true);
    expect(isTransient(s3Error('AccessDenied', 403, 'client'))).toBe(false);
    expect(isTransient(new InvalidObjectState({ message: 'archived', $metadata: { httpStatusCode: 403 } }))).toBe(false);
  });
});
