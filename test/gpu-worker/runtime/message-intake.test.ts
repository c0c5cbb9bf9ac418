/**
 * The intake's listings (docs/decisions.md, decision 4): the start listing a new video's
 * sequencer asks for at first sight goes to S3 with what bounds it (`throughFrame`, the
 * video's pad width) and comes back with its coverage; a failed one falls back to the wait.
 * The S3 adapter is a fake here: these are the calls between two units, not S3's behaviour
 * (test/system/frame-listing.int.test.ts covers that against the emulator).
 */
import { describe, expect, it } from 'vitest';
import { emptyCheckpoint } from '../../../core/commit/checkpoint.ts';
import { ObjectMissingError } from '../../../core/ingest/s3/frame-store.ts';
import type { FrameRef } from '../../../core/ordering/sequencer.ts';
import { nullMetrics, type LogSink } from '../../../core/ports.ts';
import { MessageIntake } from '../../../gpu-worker/runtime/message-intake.ts';
import { VideoSession } from '../../../gpu-worker/runtime/video-session.ts';
import { createFrameSources } from '../../../gpu-worker/sources/frame-sources.ts';
import type { SegmentReading } from '../../../gpu-worker/sources/segment/segment-source.ts';

const WAIT_MS = 30_000;
const ref = (frame: number): FrameRef => ({ frame, bucket: 'b', key: `frames/v/${String(frame).padStart(6, '0')}.jpg`, sizeBytes: 10 });
const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

interface ListCall {
  fromFrame: number;
  padWidth: number | undefined;
  throughFrame: number | undefined;
}

/** An intake over one automatic-start video whose listings answer with `answer` (or throw). */
function setup(answer: () => { frames: FrameRef[]; coveredThrough: number }) {
  const session = new VideoSession('v', 1, emptyCheckpoint(-1), { reorderWaitMs: WAIT_MS, reorderBufferFrames: 64, firstFrameNumber: -1 }, 0);
  const calls: ListCall[] = [];
  const intake = new MessageIntake({
    inbox: { deadLetter: async () => true, park: async () => true, delete: async () => undefined, forward: async () => true },
    registry: { place: async () => session, all: () => [session] },
    frames: {
      getText: async () => '',
      listFrames: async (_bucket, _videoId, fromFrame, padWidth, _pages, throughFrame) => {
        calls.push({ fromFrame, padWidth, throughFrame });
        const a = answer();
        return { ...a, complete: true, requests: 1 };
      },
    },
    bucket: 'b',
    records: NO_RECORDS,
    metrics: nullMetrics,
    log: quiet,
    slot: { lost: false },
    inDoubt: () => false,
    sources: NO_SEGMENTS,
  });
  return { session, calls, intake };
}

/** These tests read no record: a read would be a test bug. */
const NO_RECORDS = { get: async () => { throw new Error('no record reads in this test'); }, range: async () => { throw new Error('no record reads in this test'); } };
/** The frame sources with segments described by `describe` (no bytes are read in these tests). */
const sourcesDescribing = (describe: SegmentReading['describe']) =>
  createFrameSources({ frames: {} as never, tunables: { maxFrameBytes: 1_000 }, metrics: nullMetrics, log: quiet, segmentReader: { describe } });
/** These tests take image frames only: a segment would be a test bug. */
const NO_SEGMENTS = sourcesDescribing(async () => {
  throw new Error('no segments in this test');
});

describe('MessageIntake: the start listing at first sight', () => {
  it('lists from 0 through the frame below the first one, and the start is decided at once', async () => {
    // Prepare: ffmpeg numbering, frame 2's notification first; 1 is in S3 already
    const { session, calls, intake } = setup(() => ({ frames: [ref(1), ref(2)], coveredThrough: 999_999 }));
    expect(session.offerFrame(ref(2), 0).kind).toBe('accepted');
    // Act
    await intake.listWhereNeeded(5, () => false);
    await intake.listWhereNeeded(6, () => false);
    // Assess: one listing, bounded; the start is frame 1
    expect(calls).toEqual([{ fromFrame: 0, padWidth: 6, throughFrame: 1 }]);
    expect(session.sequencer.firstFrame).toBe(1);
    expect(session.sequencer.take(6).map((s) => (s.type === 'frame' ? s.ref.frame : s.type))).toEqual([1, 2]);
  });

  it('a failed start listing falls back to the wait: no further listing until reorderWaitMs', async () => {
    // Prepare
    let fail = true;
    const { session, calls, intake } = setup(() => {
      if (fail) throw new Error('SlowDown');
      return { frames: [ref(1), ref(2)], coveredThrough: 999_999 };
    });
    session.offerFrame(ref(2), 0);
    // Act
    await intake.listWhereNeeded(5, () => false);
    fail = false;
    await intake.listWhereNeeded(2_000, () => false);
    const beforeWait = calls.length;
    await intake.listWhereNeeded(WAIT_MS, () => false);
    // Assess
    expect(beforeWait).toBe(1);
    expect(session.sequencer.firstFrame).toBe(1);
    expect(calls).toEqual([
      { fromFrame: 0, padWidth: 6, throughFrame: 1 },
      { fromFrame: 0, padWidth: 6, throughFrame: undefined },
    ]);
  });
});

describe('MessageIntake: an end marker for a video released complete', () => {
  function releasedComplete(markerBody: string | Error) {
    const deleted: string[] = [];
    const news: boolean[] = [];
    const released = { ...emptyCheckpoint(0), complete: true, sequencer: { ...emptyCheckpoint(0).sequencer, endFrame: 5 } };
    const intake = new MessageIntake({
      inbox: { deadLetter: async () => true, park: async () => true, delete: async (h) => void deleted.push(...h), forward: async () => true },
      registry: {
        place: async (_id, takeReleased) => {
          news.push(await takeReleased!(released));
          return 'nothing-new';
        },
        all: () => [],
      },
      frames: {
        getText: async () => {
          if (markerBody instanceof Error) throw markerBody;
          return markerBody;
        },
        listFrames: async () => ({ frames: [], complete: true, coveredThrough: 0, requests: 1 }) },
      bucket: 'b',
      records: NO_RECORDS,
      metrics: nullMetrics,
      log: quiet,
      slot: { lost: false },
      inDoubt: () => false,
      sources: NO_SEGMENTS,
    });
    const end = { handle: 'h-end', body: '{}', msg: { kind: 'end' as const, videoId: 'v', bucket: 'b', key: 'frames/v/_end', eventTime: '2026-01-01T00:00:00Z', eTag: 'e2' } };
    return { intake, end, news, deleted };
  }

  it('a marker with another last frame is news: the video is taken back, so its session takes the new end (and warns)', async () => {
    const { intake, end, news } = releasedComplete('9');
    await intake.accept([end], 0);
    expect(news).toEqual([true]);
  });

  it('a marker S3 cannot serve now (an outage) holds the message for the next try: never dropped', async () => {
    const { intake, end, news, deleted } = releasedComplete(Object.assign(new Error('service unavailable'), { name: 'ServiceUnavailable' }));
    expect(await intake.accept([end], 0)).toEqual([end]);
    expect([news, deleted]).toEqual([[], []]);
  });

  it('a marker gone from S3 is no news: the message is dropped as a repeat', async () => {
    const { intake, end, news, deleted } = releasedComplete(new ObjectMissingError('gone'));
    await intake.accept([end], 0);
    expect([news, deleted]).toEqual([[false], ['h-end']]);
  });

  it('a repeated marker with the same last frame is a plain duplicate, dropped', async () => {
    const { intake, end, news, deleted } = releasedComplete('5');
    await intake.accept([end], 0);
    expect(news).toEqual([false]);
    expect(deleted).toEqual(['h-end']);
  });
});

describe('MessageIntake: an end marker changed while its video is owned', () => {
  function owned(oldEnd: number, markerBody: string) {
    const session = new VideoSession('v', 1, emptyCheckpoint(0), { reorderWaitMs: WAIT_MS, reorderBufferFrames: 64, firstFrameNumber: 0 }, 0);
    session.setEnd(oldEnd);
    const warnings: { message: string; command?: unknown }[] = [];
    const counted: string[] = [];
    const intake = new MessageIntake({
      inbox: { deadLetter: async () => true, park: async () => true, delete: async () => undefined, forward: async () => true },
      registry: { place: async () => session, all: () => [session] },
      frames: { getText: async () => markerBody, listFrames: async () => ({ frames: [], complete: true, coveredThrough: 0, requests: 1 }) },
      bucket: 'b',
      records: NO_RECORDS,
      metrics: { ...nullMetrics, count: (name: string) => void counted.push(name) },
      log: { ...quiet, warn: (message: string, fields?: Record<string, unknown>) => void warnings.push({ message, command: fields?.command }) },
      slot: { lost: false },
      inDoubt: () => false,
      sources: NO_SEGMENTS,
    });
    const end = { handle: 'h-end', body: '{}', msg: { kind: 'end' as const, videoId: 'v', bucket: 'b', key: 'frames/v/_end', eventTime: '2026-01-01T00:00:00Z', eTag: 'e2' } };
    return { session, intake, end, warnings, counted };
  }

  it('takes the new end, warns with the replay for frames already past the old one, and counts it', async () => {
    const { session, intake, end, warnings, counted } = owned(5, '9');

    await intake.accept([end], 0);

    expect(session.sequencer.endFrame).toBe(9);
    expect(warnings).toEqual([{ message: 'end marker changed; frames already recorded after-end-of-stream keep that record', command: 'affinity replay v --from 6' }]);
    expect(counted).toContain('EndMarkersChanged');
  });

  it('an end moved earlier is taken and warned about without a replay: frames past it keep their records', async () => {
    const { session, intake, end, warnings, counted } = owned(9, '5');

    await intake.accept([end], 0);

    expect(session.sequencer.endFrame).toBe(5);
    expect(warnings).toEqual([{ message: 'end marker moved earlier; frames already recorded past the new end keep their records', command: undefined }]);
    expect(counted).toContain('EndMarkersChanged');
  });
});

describe('MessageIntake: a video whose last commit is in doubt', () => {
  it('holds its messages undecided (returned for the next try) and offers those of other videos', async () => {
    // Prepare: two videos; v's commit is in doubt
    const sessions = new Map(['v', 'w'].map((id) => [id, new VideoSession(id, 1, emptyCheckpoint(0), { reorderWaitMs: WAIT_MS, reorderBufferFrames: 64, firstFrameNumber: 0 }, 0)]));
    const counted: string[] = [];
    const intake = new MessageIntake({
      inbox: { deadLetter: async () => true, park: async () => true, delete: async () => undefined, forward: async () => true },
      registry: { place: async (id) => sessions.get(id)!, all: () => [...sessions.values()] },
      frames: { getText: async () => '', listFrames: async () => ({ frames: [], complete: true, coveredThrough: 0, requests: 1 }) },
      bucket: 'b',
      records: NO_RECORDS,
      metrics: { ...nullMetrics, count: (name: string) => void counted.push(name) },
      log: quiet,
      slot: { lost: false },
      inDoubt: (id) => id === 'v',
      sources: NO_SEGMENTS,
    });
    const msg = (videoId: string, frame: number) => ({ handle: `${videoId}-${frame}`, body: '{}', msg: { kind: 'frame' as const, videoId, frame, bucket: 'b', key: `frames/${videoId}/${frame}.jpg`, sizeBytes: 10, eventTime: '2026-01-01T00:00:00Z' } });
    // Act
    const waiting = await intake.accept([msg('v', 0), msg('w', 0), msg('v', 1)], 0);
    // Assess
    expect(waiting.map((m) => m.handle)).toEqual(['v-0', 'v-1']);
    expect(sessions.get('v')!.sequencer.bufferedCount).toBe(0);
    expect(sessions.get('w')!.sequencer.bufferedCount).toBe(1);
    expect(counted).toContain('MessagesHeldInDoubt');
  });
});

describe("MessageIntake: a receive's segments", () => {
  it("describes the new segments of the videos it holds side by side, then places each video in turn", async () => {
    // Prepare: three held videos, one segment message each; each HEAD takes 20 ms
    const sessions = ['a', 'b', 'c'].map((v) => new VideoSession(v, 1, emptyCheckpoint(0), { reorderWaitMs: WAIT_MS, reorderBufferFrames: 64, firstFrameNumber: 0 }, 0));
    let inFlight = 0;
    let most = 0;
    const described: string[] = [];
    const intake = new MessageIntake({
      inbox: { deadLetter: async () => true, park: async () => true, delete: async () => undefined, forward: async () => true },
      registry: { place: async (id) => sessions.find((s) => s.videoId === id)!, all: () => sessions },
      frames: { getText: async () => '', listFrames: async () => ({ frames: [], complete: true, coveredThrough: 0, requests: 1 }) },
      bucket: 'b',
      records: NO_RECORDS,
      metrics: nullMetrics,
      log: quiet,
      slot: { lost: false },
      inDoubt: (id) => id === 'c',
      sources: sourcesDescribing(async (_bucket, key) => {
        described.push(key);
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setTimeout(r, 20));
        inFlight--;
        return { frameCount: 30, source: 'declared' as const, sizeBytes: 100, eTag: 'e' };
      }),
    });
    const message = (v: string) => ({ handle: `h-${v}`, body: '{}', msg: { kind: 'frame' as const, videoId: v, frame: 0, bucket: 'b', key: `frames/${v}/000000.mp4`, sizeBytes: 100, eventTime: '2026-01-01T00:00:00Z', eTag: 'e' } });
    // Act
    const waiting = await intake.accept(['a', 'b', 'c'].map(message), 0);
    // Assess: a and b were described at once (c, in doubt, is held and not read); then each once more, placed in turn
    expect(most).toBe(2);
    expect(described.slice(0, 2).sort()).toEqual(['frames/a/000000.mp4', 'frames/b/000000.mp4']);
    expect(waiting.map((m) => m.handle)).toEqual(['h-c']);
    expect(sessions[0]!.sequencer.lastBufferedFrame).toBe(29);
    expect(sessions[1]!.sequencer.lastBufferedFrame).toBe(29);
  });
});

describe('MessageIntake: a listing whose first frame lies inside a segment that starts below it (issue 40)', () => {
  const seg = (first: number): FrameRef => ({ frame: first, bucket: 'b', key: `frames/v/${String(first).padStart(6, '0')}.mp4`, sizeBytes: 100 });

  /**
   * A video of 45-frame segments 0 and 45, end 89. `state` shapes its sequencer; the records
   * say frame 29 came from segment 0 and `gapRecords` are gaps; S3 lists only segment 45
   * from any frame above 0 (a listing names a segment by its first frame).
   */
  function setup(state: Partial<ReturnType<typeof emptyCheckpoint>['sequencer']>, gapRecords: readonly number[] = []) {
    const base = emptyCheckpoint(0);
    const session = new VideoSession('v', 1, { ...base, sequencer: { ...base.sequencer, firstFrame: 0, endFrame: 89, ...state } }, { reorderWaitMs: WAIT_MS, reorderBufferFrames: 64, firstFrameNumber: 0 }, 0);
    const recordReads: number[] = [];
    const intake = new MessageIntake({
      inbox: { deadLetter: async () => true, park: async () => true, delete: async () => undefined, forward: async () => true },
      registry: { place: async () => session, all: () => [session] },
      frames: { getText: async () => '', listFrames: async (_b, _v, fromFrame) => ({ frames: [seg(0), seg(45)].filter((r) => r.frame >= fromFrame), complete: true, coveredThrough: 999_999, requests: 1 }) },
      bucket: 'b',
      records: {
        get: async (_v: string, frame: number) => {
          recordReads.push(frame);
          if (frame === 29) return { videoId: 'v', frame, status: 'ok' as const, detections: [], token: 1, worker: 'w', committedAtMs: 0, key: seg(0).key };
          return gapRecords.includes(frame) ? { videoId: 'v', frame, status: 'gap' as const, reason: 'missing-frame', detections: [], token: 1, worker: 'w', committedAtMs: 0 } : undefined;
        },
        range: async () => [],
      },
      metrics: nullMetrics,
      log: quiet,
      slot: { lost: false },
      inDoubt: () => false,
      sources: sourcesDescribing(async (_b, key) => ({ frameCount: 45, source: 'declared' as const, sizeBytes: 100, eTag: `e-${key}` })),
    });
    return { session, intake, recordReads };
  }

  it('an overdue listing from 30 finds segment 0 covering 30-44: they are taken from it, not declared gaps', async () => {
    // Prepare: the video waits at 30 with segment 45's frames buffered (an end moved later)
    const buffered = Array.from({ length: 45 }, (_, i) => ({ ...seg(45), frame: 45 + i, seenAtMs: 0 }));
    const { session, intake, recordReads } = setup({ nextFrame: 30, buffered, lastArrivalMs: 0 });
    // Act
    await intake.listWhereNeeded(3 * WAIT_MS, () => false);
    // Assess: the record of frame 29 named segment 0; its frames 30-44 run next, in order, no gap
    expect(recordReads).toEqual([29]);
    const steps = session.sequencer.take(3 * WAIT_MS, 100);
    expect(steps.filter((s) => s.type === 'gap')).toEqual([]);
    expect(steps.slice(0, 15).map((s) => (s.type === 'frame' ? `${s.ref.frame}:${s.ref.key}` : s.type))).toEqual(Array.from({ length: 15 }, (_, i) => `${30 + i}:${seg(0).key}`));
  });

  it('a gap re-check from 30 finds segment 0 covering the gaps 30-44: each runs late and replaces its gap', async () => {
    // Prepare: gaps 30-44 recorded, the video at its end, a re-check due
    const gaps = Array.from({ length: 15 }, (_, i) => 30 + i);
    const { session, intake } = setup({ nextFrame: 90, gaps: [[30, 44]], recheck: { fromFrame: 0, atMs: null } }, gaps);
    // Act
    const releasable = await intake.recheckBeforeRelease(session, 0);
    // Assess
    expect(releasable).toBe(false);
    const steps = session.sequencer.take(0, 100);
    expect(steps.map((s) => (s.type === 'late' ? `${s.ref.frame}:${s.ref.replacesGap}` : s.type))).toEqual(gaps.map((f) => `${f}:true`));
  });

  it('a listing whose first frame S3 lists needs no record read', async () => {
    // segment 0 holds 0-44; the video waits at 45, which S3 lists: nothing to read
    const listed = setup({ nextFrame: 45, buffered: [{ ...seg(90), frame: 90, seenAtMs: 0 }], lastArrivalMs: 0 });
    await listed.intake.listWhereNeeded(3 * WAIT_MS, () => false);
    expect(listed.recordReads).toEqual([]);
  });
});

describe('MessageIntake: the span of an object nothing could count (decision 59)', () => {
  const garbage: FrameRef = { frame: 0, bucket: 'b', key: 'frames/v/000000.mp4', sizeBytes: 19 };

  /** A video at frame 1 after the garbage object at 0 ran; S3 lists `later` from any frame above 0. */
  function setup(endFrame: number | null, later: FrameRef[], coveredThrough = 999_999) {
    const base = emptyCheckpoint(0);
    const session = new VideoSession('v', 1, { ...base, sequencer: { ...base.sequencer, firstFrame: 0, nextFrame: 1, endFrame, buffered: later.map((r) => ({ ...r, seenAtMs: 0 })), lastArrivalMs: 0 } }, { reorderWaitMs: WAIT_MS, reorderBufferFrames: 64, firstFrameNumber: 0 }, 0);
    const intake = new MessageIntake({
      inbox: { deadLetter: async () => true, park: async () => true, delete: async () => undefined, forward: async () => true },
      registry: { place: async () => session, all: () => [session] },
      frames: { getText: async () => '', listFrames: async () => ({ frames: later, complete: true, coveredThrough, requests: 1 }) },
      bucket: 'b',
      records: { get: async (_v: string, frame: number) => (frame === 0 ? { videoId: 'v', frame, status: 'failed' as const, reason: 'unreadable-container', detections: [], token: 1, worker: 'w', committedAtMs: 0, key: garbage.key } : undefined), range: async () => [] },
      metrics: nullMetrics,
      log: quiet,
      slot: { lost: false },
      inDoubt: () => false,
      sources: sourcesDescribing(async (_b, key) => (key === garbage.key ? { frameCount: 1, source: 'unknown' as const, sizeBytes: 19, eTag: 'g' } : { frameCount: 45, source: 'declared' as const, sizeBytes: 100, eTag: 's' })),
    });
    return { session, intake };
  }
  /** Past any wait, a lone stray's included. */
  const LATER = 20 * WAIT_MS;
  const taken = (session: VideoSession) => session.sequencer.take(LATER, 200).map((s) => (s.type === 'frame' ? `${s.ref.frame}@${s.ref.key.slice(-10)}` : `${s.type}`));

  it('reaches the next object S3 lists: its frames run from the object (to fail with its reason), none is a gap', async () => {
    const { session, intake } = setup(null, [{ frame: 10, bucket: 'b', key: 'frames/v/000010.mp4', sizeBytes: 100 }]);
    await intake.listWhereNeeded(LATER, () => false);
    expect(taken(session).slice(0, 10)).toEqual([...Array.from({ length: 9 }, (_, i) => `${i + 1}@000000.mp4`), '10@000010.mp4']);
  });

  it('with nothing after it, reaches the end marker within what the listing covered', async () => {
    const { session, intake } = setup(20, [], 999_999);
    await intake.listWhereNeeded(LATER, () => false);
    expect(taken(session)).toEqual(Array.from({ length: 20 }, (_, i) => `${i + 1}@000000.mp4`));
  });

  it('with a later frame known but not listed (the listing covered less), reaches as far as the listing covered', async () => {
    // Prepare: an image at 100 is buffered (not listed: the listing covered through 50 only)
    const { session, intake } = setup(null, [], 50);
    session.offerFrame({ frame: 100, bucket: 'b', key: 'frames/v/000100.jpg', sizeBytes: 10 }, 0);
    // Act
    await intake.listWhereNeeded(LATER, () => false);
    // Assess: 1-50 from the object; nothing is said of 51-99 yet
    expect(taken(session)).toEqual(Array.from({ length: 50 }, (_, i) => `${i + 1}@000000.mp4`));
  });
});
