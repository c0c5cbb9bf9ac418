/**
 * Sizes of what a commit writes: transactions are packed under DynamoDB's 100 items and
 * 4 MB (with margins), a unit too big for any transaction is refused with a clear
 * message, and a checkpoint whose tracker state is compacted to its room keeps the
 * video item under DynamoDB's 400 KB.
 */
import { describe, expect, it } from 'vitest';
import { emptyCheckpoint, summaryOf, type VideoCheckpoint } from '../../../core/commit/checkpoint.ts';
import {
  estimatedBytes,
  MAX_CHECKPOINT_BYTES,
  MAX_TRANSACT_ITEMS,
  MAX_TRANSACTION_BYTES,
  packUnits,
  unitCost,
  type CommitUnit,
} from '../../../core/commit/commit-packing.ts';
import type { Detection } from '../../../core/ports.ts';
import type { FrameResultItem } from '../../../core/commit/results.ts';
import { MAX_REORDER_BUFFER_FRAMES } from '../../../core/config.ts';
import { addGap, MAX_GAP_RANGES } from '../../../core/ordering/gap-ranges.ts';
import { VideoSequencer } from '../../../core/ordering/sequencer.ts';
import { StatsProcessor } from '../../../lab/worker/stats-processor.ts';
import { ByteTracker, readTrackerSnapshot } from '../../../gpu-worker/vision/tracker.ts';

const LEASE = { token: 3, worker: 'task-1', slot: 0 };
const NOW = 1_700_000_000_000;

/** Detector-like detections: fractional pixel boxes, so each is ~100 bytes of JSON. */
function detections(count: number, seed: number): Detection[] {
  return Array.from({ length: count }, (_, i) => {
    const x = (i % 40) * 47.123456789 + seed / 7;
    const y = Math.floor(i / 40) * 53.987654321 + seed / 11;
    return { trackId: 1000 * seed + i + 1, label: i % 2 ? 'person' : 'car', score: 0.5 + ((i * 37) % 50) / 101, box: [x, y, x + 31.4159, y + 62.8318] };
  });
}

function unit(videoId: string, frames: number, detectionsPerFrame: number, checkpoint?: VideoCheckpoint): CommitUnit {
  const ck: VideoCheckpoint = checkpoint ?? { ...emptyCheckpoint(0), seq: 8, framesOk: frames, firstFrame: 0, lastFrame: frames - 1 };
  const results: FrameResultItem[] = Array.from({ length: frames }, (_, frame) => ({
    videoId,
    frame,
    status: 'ok',
    detections: detections(detectionsPerFrame, frame + 1),
    token: LEASE.token,
    worker: LEASE.worker,
    committedAtMs: NOW,
    key: `frames/${videoId}/${String(frame).padStart(6, '0')}.jpg`,
  }));
  return { videoId, token: LEASE.token, expectedSeq: ck.seq - 1, expectedCommitId: 'previous', checkpoint: ck, results, summary: summaryOf(videoId, ck, LEASE, NOW) };
}

function cost(group: readonly CommitUnit[]) {
  return group.reduce((a, u) => ({ items: a.items + unitCost(u).items, bytes: a.bytes + unitCost(u).bytes }), { items: 0, bytes: 0 });
}

describe('packUnits with large detections', () => {
  it('splits units into transactions under MAX_TRANSACTION_BYTES and 99 items, in order and without needless splits', () => {
    // Prepare: crowded frames (300 detections, ~30 KB a result) that hit the byte cap,
    // and many light frames that hit the item cap (48 results + checkpoint + summary =
    // 50 items: two would make 100, one more than a transaction leaves for them).
    const heavy = Array.from({ length: 8 }, (_, i) => unit(`heavy-${i}`, 20, 300));
    const light = Array.from({ length: 5 }, (_, i) => unit(`light-${i}`, 48, 3));
    const units = [...heavy.slice(0, 4), ...light, ...heavy.slice(4)];
    expect(unitCost(heavy[0]).bytes).toBeGreaterThan(500_000);
    expect(unitCost(light[0]).items).toBe(50);
    expect(cost(units).bytes).toBeGreaterThan(2 * MAX_TRANSACTION_BYTES);
    // Act
    const groups = packUnits(units);
    // Assess: every group fits one transaction (the slot's ConditionCheck takes the 100th item).
    expect(groups.length).toBeGreaterThan(2);
    for (const g of groups) {
      expect(cost(g).items).toBeLessThanOrEqual(MAX_TRANSACT_ITEMS - 1);
      expect(cost(g).bytes).toBeLessThanOrEqual(MAX_TRANSACTION_BYTES);
    }
    // Nothing lost, nothing doubled, order kept.
    expect(groups.flat().map((u) => u.videoId)).toEqual(units.map((u) => u.videoId));
    // Greedy and tight: each split was forced by a cap, and both caps forced some.
    const reasons = new Set<string>();
    for (let i = 0; i + 1 < groups.length; i++) {
      const c = cost(groups[i]);
      const next = unitCost(groups[i + 1][0]);
      const overItems = c.items + next.items > MAX_TRANSACT_ITEMS - 1;
      const overBytes = c.bytes + next.bytes > MAX_TRANSACTION_BYTES;
      expect(overItems || overBytes).toBe(true);
      if (overItems) reasons.add('items');
      if (overBytes) reasons.add('bytes');
    }
    expect([...reasons].sort()).toEqual(['bytes', 'items']);
  });

  it('refuses a single unit over the byte cap, naming the video and its size', () => {
    // Prepare: one frame with 35,000 detections, over 3 MB on its own.
    const big = unit('big-video', 1, 35_000);
    const bytes = unitCost(big).bytes;
    expect(bytes).toBeGreaterThan(MAX_TRANSACTION_BYTES);
    // Act + Assess
    expect(() => packUnits([unit('small', 2, 5), big])).toThrow(`commit unit for big-video is ${bytes} bytes; split it before committing`);
  });

  it('refuses a single unit with more items than one transaction holds', () => {
    const wide = unit('wide-video', MAX_TRANSACT_ITEMS - 2, 1); // + checkpoint + summary = 100 > 99
    expect(() => packUnits([wide])).toThrow(`commit unit for wide-video has ${MAX_TRANSACT_ITEMS} items; split it before committing`);
  });
});

describe('checkpoint size with a crowded tracker', () => {
  it('compacting the tracker to the checkpoint room keeps the video item under 400 KB and the unit committable', () => {
    // Prepare: 6,000 objects seen once, then all lost: ~500 KB of tracker state (binary snapshot, issue 44).
    const tracker = new ByteTracker();
    tracker.update(
      0,
      Array.from({ length: 6000 }, (_, i) => {
        const x = (i % 60) * 40 + ((i * 0.618034) % 1);
        const y = Math.floor(i / 60) * 40 + ((i * 0.414214) % 1);
        return { box: [x, y, x + 25.3, y + 31.7] as const, score: 0.9, label: 'person' };
      }),
    );
    tracker.update(1, []);
    const base: VideoCheckpoint = { ...emptyCheckpoint(0), seq: 4, framesOk: 2, firstFrame: 0, lastFrame: 1 };
    const full = tracker.serialize();
    expect(estimatedBytes({ ...base, processor: full })).toBeGreaterThan(400_000);
    // Act: the worker's rule: the processor gets what the rest of the checkpoint leaves.
    const room = MAX_CHECKPOINT_BYTES - estimatedBytes({ ...base, processor: undefined });
    const processor = tracker.serialize(room);
    const checkpoint = { ...base, processor };
    // Assess
    expect(Buffer.byteLength(processor)).toBeLessThanOrEqual(room);
    // The JSON estimate counts the snapshot as text (base64): still far under 400 KB.
    expect(estimatedBytes(checkpoint)).toBeLessThan(MAX_CHECKPOINT_BYTES + 5_000);
    expect(estimatedBytes(checkpoint)).toBeLessThan(400_000);
    const u = unit('crowded', 2, 300, checkpoint);
    expect(packUnits([u])).toEqual([[u]]);
    // The compacted state restores, with its ID counter intact.
    expect(readTrackerSnapshot(ByteTracker.restore(processor).serialize()).n).toBe(6001);
  });

  it('StatsProcessor accepts a budget; its state is far under any', () => {
    const p = new StatsProcessor();
    p.openVideo('v', JSON.stringify({ framesSeen: 12, meanLuma: 101.5, lastFrame: 11 }));
    expect(p.snapshot('v', MAX_CHECKPOINT_BYTES)).toBe(p.snapshot('v'));
  });
});

describe('checkpoint size with a full reorder buffer', () => {
  it('the largest reorder buffer config allows, with the longest keys and the most gap ranges, leaves room for the tracker under MAX_CHECKPOINT_BYTES', () => {
    // Prepare: the longest video id (128), the longest frame numbers (15 digits), the
    // longest bucket name (63) and extension; frame `start` is missing, so everything waits.
    const videoId = 'v'.repeat(128);
    const bucket = 'b'.repeat(63);
    const start = 100_000_000_000_000;
    const sequencer = new VideoSequencer({ reorderWaitMs: 5000, reorderBufferFrames: MAX_REORDER_BUFFER_FRAMES, firstFrameNumber: start });
    // The buffer may pass its size by what arrives before the watermark decision it forces.
    for (let i = 1; i <= MAX_REORDER_BUFFER_FRAMES + 50; i++) {
      const frame = start + i;
      expect(sequencer.offer({ frame, bucket, key: `frames/${videoId}/${frame}.jpeg`, sizeBytes: 99_999_999 }, NOW + i)).toBe('accepted');
    }
    // ...and the most gap ranges it keeps, every other frame a gap so none merge (15-digit numbers).
    const state = sequencer.snapshot();
    for (let i = 0; i < MAX_GAP_RANGES + 10; i++) addGap(state.gaps, start - 10_000 + 2 * i);
    expect(state.gaps).toHaveLength(MAX_GAP_RANGES);
    // Act
    const rest = estimatedBytes({ ...emptyCheckpoint(start), seq: 123_456, sequencer: state });
    // Assess: the worker gives the processor what is left (worker.ts processorSnapshot);
    // at least 120 KB remain for it, and the whole checkpoint stays far under 400 KB.
    expect(MAX_CHECKPOINT_BYTES - rest).toBeGreaterThan(120_000);
    expect(MAX_CHECKPOINT_BYTES).toBeLessThan(400_000 - 50_000);
  });
});
