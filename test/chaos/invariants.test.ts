/**
 * The chaos run's invariant checks (bench/harness/invariants.ts checkInvariants) on made-up outcomes:
 * a clean video passes all eight, and each kind of damage the run must catch is counted
 * against the right invariant. (The chaos run itself is test/chaos/chaos.int.test.ts, CHAOS=1.)
 */
import { describe, expect, it } from 'vitest';
import { checkInvariants, type VideoOutcome } from '../../bench/harness/invariants.ts';
import type { FrameResultItem, FrameStatus, VideoSummaryItem } from '../../core/commit/results.ts';

const W1 = 'w1';
const W2 = 'w2';

function record(frame: number, status: FrameStatus, token: number, worker: string, trackId?: number): FrameResultItem {
  return {
    videoId: 'v',
    frame,
    status,
    token,
    worker,
    committedAtMs: 1_000 + frame,
    detections: trackId === undefined ? [] : [{ trackId, label: 'frame', score: 0.5, box: [0, 0, 1, 1] }],
  };
}

/**
 * Frames 1-6: 1-3 by w1 (token 1), w2 adopts at frame 4 (token 2); frame 5 failed (corrupt),
 * frame 2 arrived late (after a gap) and was committed late by w2. The stats processor's
 * track ID counts in-order frames: 1 (frame 1), 2 (frame 3), 3 (frame 4), 4 (frame 6).
 */
function clean(): VideoOutcome & { records: FrameResultItem[]; summary: VideoSummaryItem | undefined } {
  const records = [
    record(1, 'ok', 1, W1, 1),
    record(2, 'late', 2, W2, 1),
    record(3, 'ok', 1, W1, 2),
    record(4, 'ok', 2, W2, 3),
    record(5, 'failed', 2, W2),
    record(6, 'ok', 2, W2, 4),
  ];
  const summary: VideoSummaryItem = {
    videoId: 'v',
    frame: -1,
    kind: 'summary',
    status: 'complete',
    framesOk: 4,
    framesLate: 1,
    framesFailed: 1,
    framesGap: 0,
    ownerChanges: 2,
    token: 2,
    worker: W2,
    slot: 0,
    updatedAtMs: 2_000,
    owners: [
      { worker: W1, token: 1, sinceMs: 1_000, fromFrame: 1 },
      { worker: W2, token: 2, sinceMs: 1_500, fromFrame: 4 },
    ],
  };
  // Frames 1-3 came as one encoded segment, which decodes whole.
  const segments = [{ firstFrame: 1, frames: 3, yields: 3 }];
  return { videoId: 'v', uploaded: new Set([1, 2, 3, 4, 5, 6]), neverUploaded: new Set([7]), records, summary, inS3: new Set([1, 2, 3, 4, 5, 6]), endMarked: true, segments };
}

const violations = (v: VideoOutcome) => Object.fromEntries(checkInvariants([v]).map((i) => [i.name, i.violations]));

describe('chaos invariants', () => {
  it('find nothing wrong with a clean failover, a late frame and a corrupt one', () => {
    const results = checkInvariants([clean()], { 'ingest DLQ': 0, 'slot 0 DLQ': 0 });
    expect(results).toHaveLength(9);
    for (const r of results) {
      expect(r.violations, r.name).toBe(0);
      expect(r.checked, r.name).toBeGreaterThan(0);
    }
  });

  it('accept a gap for a frame never uploaded, and count one that is not a gap', () => {
    const v = clean();
    v.records.push(record(7, 'gap', 2, W2));
    v.summary = { ...v.summary!, framesGap: 1 };
    expect(checkInvariants([v]).every((i) => i.violations === 0)).toBe(true);
    v.records[6] = record(7, 'ok', 2, W2, 5);
    expect(violations(v)['every uploaded frame has exactly one record']).toBe(1);
  });

  it('count an uploaded frame without a record, and a record for a frame neither uploaded nor lost', () => {
    const v = clean();
    v.records.splice(v.records.findIndex((r) => r.frame === 3), 1, record(8, 'gap', 2, W2));
    expect(violations(v)['every uploaded frame has exactly one record']).toBe(2);
  });

  it('count a gap record for an object that exists', () => {
    const v = clean();
    v.records[5] = record(6, 'gap', 2, W2);
    expect(violations(v)['no frame whose object exists ends as gap']).toBe(1);
  });

  it("count a zombie's write below the new owner's token in the new owner's tenure", () => {
    const v = clean();
    v.records[5] = record(6, 'ok', 1, W1, 4);
    const found = violations(v);
    expect(found["every record's token >= the token of the lease that held the video when it was written"]).toBe(1);
    expect(found["no two owners' tenures overlap for a video"]).toBe(1);
  });

  it('count a token used by two workers', () => {
    const v = clean();
    v.records[3] = record(4, 'ok', 2, W1, 3);
    expect(violations(v)["no two owners' tenures overlap for a video"]).toBe(1);
  });

  it('count a summary whose counts differ from the records', () => {
    const v = clean();
    v.records[4] = record(5, 'ok', 2, W2, 4);
    v.records[5] = record(6, 'ok', 2, W2, 5);
    const found = violations(v);
    expect(found['summaries equal the records they summarise']).toBe(1);
    expect(found["track IDs equal an uninterrupted run's on frames processed in order"]).toBe(0);
  });

  it('count track IDs that restarted after a failover (state lost)', () => {
    const v = clean();
    v.records[3] = record(4, 'ok', 2, W2, 1);
    v.records[5] = record(6, 'ok', 2, W2, 2);
    expect(violations(v)["track IDs equal an uninterrupted run's on frames processed in order"]).toBe(2);
  });

  it('count an end-marked video that did not complete, and leave one without an end marker alone', () => {
    const v = { ...clean(), summary: { ...clean().summary!, status: 'active' as const } };
    expect(violations(v)['every video with an end marker completes']).toBe(1);
    expect(violations({ ...v, endMarked: false })['every video with an end marker completes']).toBe(0);
  });

  it("count a truncated segment's frames that are not failed past where it decodes, or ok before it, or failed without a reason", () => {
    const name = "segment frames: ok or late where the segment decodes, failed with the decoder's reason past it";
    const v = clean();
    v.records[4] = { ...record(5, 'failed', 2, W2), reason: 'truncated' };
    // Frames 4-6 as a segment that decodes to its first frame only: 4 ok and 5 failed are right, 6 ok is not.
    expect(violations({ ...v, segments: [{ firstFrame: 4, frames: 3, yields: 1 }] })[name]).toBe(1);
    expect(violations({ ...v, segments: [{ firstFrame: 4, frames: 2, yields: 1 }] })[name]).toBe(0);
    // Decodes whole, yet frame 5 failed.
    expect(violations({ ...v, segments: [{ firstFrame: 4, frames: 2, yields: 2 }] })[name]).toBe(1);
    // Failed without the decoder's reason.
    v.records[4] = record(5, 'failed', 2, W2);
    expect(violations({ ...v, segments: [{ firstFrame: 4, frames: 2, yields: 1 }] })[name]).toBe(1);
  });

  it('count every DLQ that still holds messages', () => {
    const dlq = checkInvariants([clean()], { 'ingest DLQ': 0, 'slot 0 DLQ': 3, 'slot 1 DLQ': 1 }).find((i) => i.name === 'no message in any DLQ')!;
    expect(dlq).toMatchObject({ checked: 3, violations: 2, examples: ['slot 0 DLQ: 3 message(s)', 'slot 1 DLQ: 1 message(s)'] });
  });

  it("accept a gap replaced after a later owner adopted past it (seed 424242's chaos-03/66), but not the same write by the earlier tenure's zombie", () => {
    // Prepare: W2 took over from frame 4; frame 2's gap is replaced by W2 (token 2) with a
    // failed record after W2's adoption, not `late`: written out of order by a tenure that
    // began after frame 2, while frame 3 stays under token 1.
    const v = clean();
    v.records[1] = { ...record(2, 'failed', 2, W2), reason: 'object-missing' };
    v.summary = { ...v.summary!, framesLate: 0, framesFailed: 2 };
    expect(violations(v)["no two owners' tenures overlap for a video"]).toBe(0);
    // A write by W1 (token 1) of frame 5 after W2's frame 4 is still counted.
    const z = clean();
    z.records[4] = record(5, 'failed', 1, W1);
    expect(violations(z)["no two owners' tenures overlap for a video"]).toBe(1);
  });
});
