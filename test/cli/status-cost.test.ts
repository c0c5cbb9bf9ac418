/**
 * `affinity status`'s cost line (issue 44): this month's estimated cost per camera from
 * what the tables hold (core/cost/estimate.ts), gathered on the twins: a camera's rate
 * from its checkpoint, frames per object and result bytes from its last stored item, the
 * object's size from S3, its lease item's size; a camera that cannot be measured yet is
 * named with the reason.
 */
import { describe, expect, it } from 'vitest';
import { newCommitId, summaryOf, type VideoCheckpoint } from '../../core/commit/checkpoint.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { cameraMonthEstimate, monthStartMs, FRAME_EXPIRY_EXTRA_DAYS, type CameraActivity } from '../../core/cost/estimate.ts';
import { PRICES, SECONDS_PER_MONTH } from '../../core/cost/prices.ts';
import { MemoryS3 } from '../../core/ingest/memory/memory-s3.ts';
import { segmentKey } from '../../core/ingest/segment-keys.ts';
import { MemoryLeaseTable } from '../../core/leases/memory/memory-lease-table.ts';
import type { CommitUnit, SlotFence } from '../../core/leases/port.ts';
import type { Detection } from '../../core/ports.ts';
import { collectStatus, printStatus } from '../../cli/commands/status.ts';
import type { Target } from '../../cli/target.ts';
import { memoryIo } from '../../cli/io.ts';

const BUCKET = 'frames-bucket';
const SEGMENT_BYTES = 1_000_000;
const GB = 1024 ** 3;

/** Five moving boxes on frame f. */
const detections = (f: number): Detection[] => Array.from({ length: 5 }, (_, i) => ({ trackId: 10 + i, label: i % 2 ? 'car' : 'person', score: 0.8, box: [100 * i + f * 1.5, 50 + i * 90, 100 * i + f * 1.5 + 60, 50 + i * 90 + 170] }));

async function setUp(t0: number) {
  const twin = new MemoryLeaseTable({ now: () => t0 });
  const s3 = new MemoryS3().createBucket(BUCKET);
  const store = twin.leases({ firstFrameNumber: 1 });
  const claim = await store.claimSlot(0, 'w1', t0, 3_600_000_000);
  const fence: SlotFence = { slot: 0, workerId: 'w1', epoch: claim!.epoch };
  const target: Target = {
    description: 'twins',
    kind: 'local',
    region: 'us-east-1',
    bucket: BUCKET,
    leasesTable: twin.wiring.leasesTable,
    resultsTable: twin.wiring.resultsTable,
    eventsTable: twin.wiring.eventsTable,
    pinnedSlotIndex: twin.wiring.pinnedSlotIndex,
    ingestQueueUrl: 'ingest',
    ingestDlqUrl: 'ingest-dlq',
    slotCount: 1,
    slotQueueUrls: ['slot-0'],
    slotDlqUrls: ['slot-0-dlq'],
    releasedVideoRetentionDays: 30,
    firstFrameNumber: 1,
    slotLeaseTtlSeconds: 15,
    clients: { s3: s3.asClient(), sqs: { send: async () => ({ Attributes: {} }) } as unknown as Target['clients']['sqs'], ddb: twin.ddb },
    close: () => {},
  };
  /** A camera adopted at `t0` that committed `segments` segments of 60 frames each (one object in S3 each). */
  async function camera(videoId: string, segments: number): Promise<void> {
    await store.pinVideo(videoId, 0, t0);
    const v = await store.adoptVideo(videoId, fence, t0);
    if (typeof v === 'string') throw new Error(v);
    let prev: VideoCheckpoint = v.checkpoint;
    for (let s = 0; s < segments; s++) {
      const first = 1 + 60 * s;
      const key = segmentKey(videoId, first);
      s3.putObject(BUCKET, key, new Uint8Array(SEGMENT_BYTES));
      const results: FrameResultItem[] = Array.from({ length: 60 }, (_, i) => ({ videoId, frame: first + i, status: 'ok', detections: detections(first + i), token: v.token, worker: 'w1', committedAtMs: t0, key, ptsMs: ((first + i - 1) * 1000) / 3 }));
      const checkpoint: VideoCheckpoint = { ...prev, seq: prev.seq + 1, commitId: newCommitId(), sequencer: { ...prev.sequencer, nextFrame: first + 60 }, framesOk: prev.framesOk + 60, firstFrame: 1, lastFrame: first + 59 };
      const unit: CommitUnit = { videoId, token: v.token, expectedSeq: prev.seq, expectedCommitId: prev.commitId, checkpoint, results, summary: summaryOf(videoId, checkpoint, { token: v.token, worker: 'w1', slot: 0 }, t0) };
      const outcome = await store.commit(fence, [unit], t0);
      if (outcome.outcomes.get(videoId) !== 'landed') throw new Error(`segment ${s} of ${videoId} not landed`);
      prev = checkpoint;
    }
  }
  return { target, camera };
}

describe('affinity status: the cost estimate', () => {
  it('measures a camera from its tables: its rate, frames per object, object size, and prices a month of it', async () => {
    // Prepare: 3 segments of 60 frames over 60 s since the camera's first owner (3 fps, 20-s segments)
    const t0 = Date.UTC(2026, 11, 10, 12);
    const { target, camera } = await setUp(t0);
    await camera('cam-a', 3);
    const nowMs = t0 + 60_000;

    // Act
    const report = await collectStatus(target, nowMs, { frameRetentionDays: 7, resultsRetentionDays: 30 });

    // Assess
    const [cam] = report.cost.cameras;
    expect(report.cost.skipped).toEqual([]);
    expect(cam).toMatchObject({ videoId: 'cam-a', framesPerObject: 60 });
    expect(cam!.fps).toBeCloseTo(3, 6);
    // Frames stored: a month's objects (3 fps / 60 frames each) of 1 MB, kept 7 days plus half a day of lifecycle rounding.
    const objects = (3 * SECONDS_PER_MONTH) / 60;
    expect(cam!.lines.frameStorage).toBeCloseTo(((objects * SEGMENT_BYTES) / GB) * PRICES.s3StoragePerGbMonth * ((7 + FRAME_EXPIRY_EXTRA_DAYS) / (730 / 24)), 6);
    // The uploader's PUTs alone are in the requests line.
    expect(cam!.lines.requests).toBeGreaterThan((objects * PRICES.s3PutPerMillion) / 1e6);
    expect(report.cost.perCameraMonth).toBeCloseTo(cam!.month, 9);
    // A minute of a 730-hour month has passed for this camera.
    expect(report.cost.thisMonth).toBeCloseTo((cam!.month * 60) / SECONDS_PER_MONTH, 9);
  });

  it('names a camera it cannot measure yet, and prints the cost section', async () => {
    // Prepare: one camera measured, one adopted 5 s ago with nothing recorded
    const t0 = Date.UTC(2026, 11, 10, 12);
    const { target, camera } = await setUp(t0);
    await camera('cam-a', 2);
    await camera('cam-new', 0);
    const io = memoryIo();

    // Act
    const report = await collectStatus(target, t0 + 40_000);
    printStatus(report, io);

    // Assess
    expect(report.cost.cameras.map((c) => c.videoId)).toEqual(['cam-a']);
    expect(report.cost.skipped).toEqual([{ videoId: 'cam-new', why: 'nothing recorded yet' }]);
    expect(report.cost.settings).toMatchObject({ frameRetentionDays: 30, resultsRetentionDays: 0 });
    const out = io.lines.join('\n');
    expect(out).toMatch(/COST \(estimate: list prices, non-GPU, fixed costs apart; frames kept 30 d, results for ever\)/);
    expect(out).toMatch(/\$[\d.]+ per camera-month at the current rates \(1 camera\); this month so far \$[\d.]+/);
    expect(out).toMatch(/cam-a\s+3\.0\s+60\s+\$/);
    expect(out).toContain('cam-new: not measured (nothing recorded yet)');
  });
});

describe('cameraMonthEstimate', () => {
  const base: CameraActivity = { videoId: 'v', fps: 30, framesPerObject: 60, objectBytes: 1_000_000, leaseItemBytes: 2_000, resultItemBytes: 3_700, framesPerResultItem: 60, eventsPerSecond: 0, activeSecondsThisMonth: SECONDS_PER_MONTH / 2 };
  const settings = { frameRetentionDays: 7, resultsRetentionDays: 30, videosPerSlot: 8, heartbeatIntervalSeconds: 5 };

  it.each([
    { name: 'the lines add up to the month, and half the month active is half of it', change: {}, check: (e: ReturnType<typeof cameraMonthEstimate>) => {
      expect(Object.values(e.lines).reduce((a, b) => a + b, 0)).toBeCloseTo(e.month, 9);
      expect(e.thisMonth).toBeCloseTo(e.month / 2, 9);
    } },
    { name: 'a lease item past 2 KB costs one more KB per commit (2 units per segment)', change: { leaseItemBytes: 2_049 }, check: (e: ReturnType<typeof cameraMonthEstimate>) => {
      const below = cameraMonthEstimate(base, settings);
      const segments = (30 * SECONDS_PER_MONTH) / 60;
      expect(e.lines.dynamoDbWrites - below.lines.dynamoDbWrites).toBeCloseTo((segments * 2 * PRICES.ddbWriteUnitPerMillion) / 1e6, 6);
    } },
    { name: 'an event a second with 2-s segments: one batch per segment (2 units, a Pipes request, a bus event), about $3.50 a month', change: { eventsPerSecond: 1 }, check: (e: ReturnType<typeof cameraMonthEstimate>) => {
      expect(e.lines.ruleEvents).toBeCloseTo(((SECONDS_PER_MONTH / 2) * (2 * PRICES.ddbWriteUnitPerMillion + PRICES.eventBridgePerMillionEvents + PRICES.pipesPerMillionRequests)) / 1e6, 6);
      expect(e.lines.ruleEvents).toBeCloseTo(3.48, 2);
    } },
    { name: 'fifteen events per 10-s segment: a batch of about 2 KB, 6 units a segment', change: { fps: 3, framesPerObject: 30, framesPerResultItem: 30, eventsPerSecond: 1.5 }, check: (e: ReturnType<typeof cameraMonthEstimate>) => {
      expect(e.lines.ruleEvents).toBeCloseTo(((SECONDS_PER_MONTH / 10) * (6 * PRICES.ddbWriteUnitPerMillion + PRICES.eventBridgePerMillionEvents + PRICES.pipesPerMillionRequests)) / 1e6, 6);
    } },
    { name: 'JPEG frames, fewer events than commits: one item per event, about $7 a month per event a second', change: { framesPerObject: 1, framesPerResultItem: 1, resultItemBytes: 600, eventsPerSecond: 1 }, check: (e: ReturnType<typeof cameraMonthEstimate>) => {
      expect(e.lines.ruleEvents).toBeCloseTo(6.96, 2);
    } },
    { name: 'JPEG frames: one object per frame, sixty times the PUTs', change: { framesPerObject: 1, framesPerResultItem: 1, resultItemBytes: 600 }, check: (e: ReturnType<typeof cameraMonthEstimate>) => {
      expect(e.lines.requests).toBeGreaterThan((30 * SECONDS_PER_MONTH * PRICES.s3PutPerMillion) / 1e6);
    } },
  ])('$name', ({ change, check }) => {
    check(cameraMonthEstimate({ ...base, ...change }, settings));
  });

  it('leaves point-in-time recovery out of the results storage when the deployment turned it off', () => {
    const withPitr = cameraMonthEstimate(base, settings);
    const without = cameraMonthEstimate(base, { ...settings, pointInTimeRecovery: false });
    expect(without.lines.resultStorage / withPitr.lines.resultStorage).toBeCloseTo(PRICES.ddbStoragePerGbMonth / (PRICES.ddbStoragePerGbMonth + PRICES.ddbPitrPerGbMonth), 9);
    expect(without.lines.frameStorage).toBe(withPitr.lines.frameStorage);
  });

  it('takes the month from its first day, UTC', () => {
    expect(new Date(monthStartMs(Date.UTC(2026, 11, 7, 0, 30))).toISOString()).toBe('2026-12-01T00:00:00.000Z');
  });
});
