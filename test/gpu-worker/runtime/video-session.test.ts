import { describe, expect, it } from 'vitest';
import { emptyCheckpoint, type VideoCheckpoint } from '../../../core/commit/checkpoint.ts';
import type { CommitUnit } from '../../../core/commit/commit-packing.ts';
import type { SequencedStep } from '../../../core/ordering/sequencer.ts';
import { MARKER_PLAN, MAX_VIDEO_FAILURES, oneStepPerFrame, RETRY_MAX_MS, VideoSession } from '../../../gpu-worker/runtime/video-session.ts';

const OPTIONS = { reorderWaitMs: 5_000, reorderBufferFrames: 64, firstFrameNumber: 0 };
const ref = (frame: number) => ({ frame, bucket: 'b', key: `frames/v/${String(frame).padStart(6, '0')}.jpg`, sizeBytes: 10 });
const frames = (steps: readonly SequencedStep[]) => steps.map((s) => (s.type === 'gap' ? `gap ${s.frame}` : `${s.type} ${s.ref.frame}`));

function session(ck: VideoCheckpoint = emptyCheckpoint(0)): VideoSession {
  return new VideoSession('v', 1, ck, OPTIONS, 0);
}

/** Offers frames with their handles, as the intake does. */
function receive(s: VideoSession, nowMs: number, ...numbers: number[]): void {
  for (const n of numbers) {
    expect(s.offerFrame(ref(n), nowMs).kind).toBe('accepted');
    s.takeHandle(`h${n}`, nowMs);
  }
}

/** The unit a plan would commit: the checkpoint after it (the sequencer as it now stands). */
function unitFor(s: VideoSession, steps: readonly SequencedStep[]): CommitUnit {
  const results = steps.map((st) => ({ videoId: 'v', frame: st.type === 'gap' ? st.frame : st.ref.frame, status: 'ok' as const, detections: [], token: 1, worker: 'w', committedAtMs: 0 }));
  const checkpoint = { ...s.committed, seq: s.committed.seq + 1, sequencer: s.sequencer.snapshot(), complete: s.sequencer.isComplete() };
  return { videoId: 'v', token: 1, expectedSeq: s.committed.seq, expectedCommitId: s.committed.commitId, checkpoint: { ...checkpoint, commitId: `c-${checkpoint.seq}` }, results, summary: {} as CommitUnit['summary'] };
}

describe('VideoSession', () => {
  it('plans the frames in order and, once the unit lands, deletes exactly the handles it covers', () => {
    const s = session();
    receive(s, 0, 2, 0, 1);
    const plan = s.plan(0)!;
    expect(frames(plan.steps)).toEqual(['frame 0', 'frame 1', 'frame 2']);
    expect(plan.handles).toEqual(['h2', 'h0', 'h1']);
    const landed = s.applyCommitted(unitFor(s, plan.steps), plan);
    expect(landed.deleteHandles).toEqual(['h2', 'h0', 'h1']);
    expect(s.handles).toEqual([]);
    expect(s.dirty).toBe(false);
    expect(s.committed.seq).toBe(1);
    expect(s.plan(0)).toBeUndefined();
  });

  it('a rollback keeps the messages and replays what arrived since the last commit: the retry plans the same frames', () => {
    const s = session();
    receive(s, 0, 0, 1, 2);
    s.setEnd(2);
    const first = s.plan(0)!;
    const r = s.rollback([1], 'processing-error', true, 1_000);
    expect(r.restoreProcessor).toBeUndefined();
    expect(s.handles).toEqual(['h0', 'h1', 'h2']);
    expect(s.backingOff(1_000)).toBe(true);
    expect(s.backingOff(1_000 + r.backoffMs)).toBe(false);
    const retry = s.plan(1_000 + r.backoffMs)!;
    expect(frames(retry.steps)).toEqual(frames(first.steps));
    expect(retry.handles).toEqual(first.handles);
    // The end marker was replayed too: the retry's checkpoint says complete.
    expect(s.sequencer.isComplete()).toBe(true);
  });

  it('replays listings, late frames and rejects after a rollback', () => {
    const s = session({ ...emptyCheckpoint(0), sequencer: { ...emptyCheckpoint(0).sequencer, nextFrame: 5 } });
    s.learnListing(5, [ref(5), ref(6)], true, 0);
    const below = s.offerFrame(ref(3), 0);
    expect(below.kind).toBe('needs-record');
    if (below.kind !== 'needs-record') throw new Error('unreachable');
    expect(s.resolveWithRecord(ref(3), below, 'gap')).toBe('late');
    s.setEnd(6);
    const after = s.offerFrame(ref(9), 0);
    if (after.kind !== 'needs-record') throw new Error('expected needs-record');
    expect(s.resolveWithRecord(ref(9), after, undefined)).toBe('rejected');
    s.takeHandle('h3', 0);
    s.takeHandle('h9', 0);
    const first = frames(s.plan(0)!.steps);
    s.rollback([], 'commit-unknown', false, 0);
    expect(frames(s.plan(RETRY_MAX_MS)!.steps)).toEqual(first);
    expect(first).toEqual(expect.arrayContaining(['late 3', 'frame 5', 'reject 9']));
  });

  it('parks the blamed frames after MAX_VIDEO_FAILURES counted failures, never after outages', () => {
    const s = session();
    receive(s, 0, 0, 1);
    for (let i = 0; i < 20; i++) s.rollback([1], 'SlowDown', false, 0);
    expect(s.failures).toBe(0);
    expect(s.plan(10 * RETRY_MAX_MS)!.parked.size).toBe(0);
    for (let i = 0; i < MAX_VIDEO_FAILURES; i++) s.rollback([1], 'processing-error', true, 0);
    const plan = s.plan(10 * RETRY_MAX_MS)!;
    expect([...plan.parked]).toEqual([[1, 'processing-error']]);
    expect(s.parkedIn(plan)).toBe(1);
    // A landed unit forgets the failures and the blame.
    s.applyCommitted(unitFor(s, plan.steps), plan);
    expect(s.failures).toBe(0);
    expect(s.blamed.size).toBe(0);
  });

  it('a frame a commit found already recorded is settled at once: the retry leaves it out, with no backoff and nothing blamed or counted', () => {
    const s = session();
    receive(s, 0, 0, 1, 2);
    const first = s.plan(0)!;
    const r = s.settleExisting(1);
    expect([r.backoffMs, r.counted, s.failures, s.blamed.size]).toEqual([0, false, 0, 0]);
    expect(s.backingOff(0)).toBe(false);
    expect(s.handles).toEqual(['h0', 'h1', 'h2']);
    const retry = s.plan(0)!;
    expect(frames(retry.steps)).toEqual(frames(first.steps).filter((f) => f !== 'frame 1'));
  });

  it('a plan whose only frames were found recorded still commits: the sequencer moved past them (simulation, seed 165)', () => {
    // Prepare: an isolated video (one frame per round) whose frames 0 and 1 were buffered;
    // frame 0's unit landed, so nothing else is dirty.
    const s = new VideoSession('v', 1, { ...emptyCheckpoint(0), stall: { adoptions: 1 } }, OPTIONS, 0, 'dead-owner');
    receive(s, 0, 0, 1);
    const first = s.plan(0)!;
    expect(frames(first.steps)).toEqual(['frame 0']);
    s.applyCommitted(unitFor(s, first.steps), first);
    expect(s.dirty).toBe(false);
    // Act: frame 1's commit finds it recorded; the retry takes frame 1 and leaves it out.
    expect(frames(s.plan(0)!.steps)).toEqual(['frame 1']);
    s.settleExisting(1);
    const retry = s.plan(0);
    // Assess: an empty plan, not none; once it lands the checkpoint has moved past frame 1.
    expect(retry && frames(retry.steps)).toEqual([]);
    s.applyCommitted(unitFor(s, retry!.steps), retry!);
    expect(s.committed.sequencer.nextFrame).toBe(2);
    expect(s.committed.sequencer.buffered).toEqual([]);
  });

  it('an isolated plan does not spend its one frame on a frame found recorded: it takes the next frame that runs', () => {
    const s = new VideoSession('v', 1, { ...emptyCheckpoint(0), stall: { adoptions: 1 } }, OPTIONS, 0, 'dead-owner');
    receive(s, 0, 0, 1, 2);
    expect(frames(s.plan(0)!.steps)).toEqual(['frame 0']);
    s.settleExisting(0);
    expect(frames(s.plan(0)!.steps)).toEqual(['frame 1']);
  });

  it('forgets what it remembered about a frame\'s record when a replay re-sends it: settled or found recorded, it is decided by its record again and runs late (issue 40, defect 2)', () => {
    // Prepare: frame 1 found recorded by a commit, frame 0 settled by this session's own commit.
    const s = session();
    receive(s, 0, 0, 1, 2);
    s.settleExisting(1);
    const plan = s.plan(0)!;
    s.applyCommitted(unitFor(s, plan.steps), plan);
    expect(s.offerFrame(ref(0), 0)).toEqual({ kind: 'duplicate' });
    // Act: a replay deleted both records and re-sent the frames.
    s.forgetRecorded([0, 1]);
    const offered = [0, 1].map((f) => s.offerFrame(ref(f), 0));
    const decided = offered.map((o, f) => (o.kind === 'needs-record' ? s.resolveWithRecord(ref(f), o, undefined) : o.kind));
    // Assess: both run late, and the plan keeps them.
    expect(decided).toEqual(['late', 'late']);
    expect(frames(s.plan(0)!.steps)).toEqual(['late 0', 'late 1']);
  });

  it('backs off longer with each failed round, outages included, up to the cap', () => {
    const s = session();
    receive(s, 0, 0);
    const backoffs = Array.from({ length: 10 }, () => s.rollback([], 'SlowDown', false, 0).backoffMs);
    expect(backoffs[1]).toBe(2 * backoffs[0]!);
    expect(backoffs.at(-1)).toBe(RETRY_MAX_MS);
  });

  it('tells duplicates from frames below the tracker: settled frames need no read', () => {
    const s = session();
    receive(s, 0, 0);
    expect(s.offerFrame(ref(0), 0).kind).toBe('duplicate');
    const plan = s.plan(0)!;
    s.applyCommitted(unitFor(s, plan.steps), plan);
    expect(s.offerFrame(ref(0), 0)).toEqual({ kind: 'duplicate' });
    const fresh = session({ ...emptyCheckpoint(0), sequencer: { ...emptyCheckpoint(0).sequencer, nextFrame: 4 } });
    expect(fresh.offerFrame(ref(2), 0)).toEqual({ kind: 'needs-record', offered: 'below' });
  });

  it.each([
    ['a frame ahead', 3, true],
    ['the next frame', 1, true],
    ['a settled frame', 0, false],
    ['a frame below the tracker', -1, false],
    ['beyond the end marker', 9, false],
  ] as const)('decodes ahead only what it will run: %s', (_name, frame, expected) => {
    const s = session();
    receive(s, 0, 0);
    const plan = s.plan(0)!;
    s.applyCommitted(unitFor(s, plan.steps), plan);
    s.setEnd(5);
    expect(s.wouldRun(frame, 0)).toBe(expected);
  });

  it('a video backing off decodes nothing ahead', () => {
    const s = session();
    receive(s, 0, 0);
    s.rollback([], 'SlowDown', false, 0);
    expect(s.wouldRun(1, 0)).toBe(false);
  });

  it.each([
    ['quiet long enough', {}, 60_000, true],
    ['holding a message', { handle: true }, 60_000, false],
    ['not quiet long enough', {}, 59_999, false],
    ['a failed round not yet retried', { failed: true }, 600_000, false],
  ] as const)('idle release: %s', (_name, state, nowMs, expected) => {
    const s = session();
    if ('handle' in state) s.takeHandle('h', 0);
    if ('failed' in state) s.rollback([], 'SlowDown', false, 0);
    s.dirty = 'handle' in state;
    expect(s.idleReleaseDue(nowMs, 60_000)).toBe(expected);
  });
});

describe('VideoSession under the crash-loop breaker (decision 28)', () => {
  it('a video adopted with no evidence runs normally: all due frames in one plan', () => {
    const s = session({ ...emptyCheckpoint(0), stall: { adoptions: 1 } });
    expect(s.isolated).toBe(false);
    receive(s, 0, 0, 1, 2);
    expect(frames(s.plan(0)!.steps)).toEqual(['frame 0', 'frame 1', 'frame 2']);
  });

  it('a video adopted twice without progress runs one frame per plan, and a marker landing changes nothing else', () => {
    const s = session({ ...emptyCheckpoint(0), stall: { adoptions: 2 } });
    expect(s.isolated).toBe(true);
    receive(s, 0, 0, 1, 2);
    const first = s.plan(0)!;
    expect(frames(first.steps)).toEqual(['frame 0']);
    // The marker lands: the committed checkpoint carries it, handles and log stay.
    const marker = { ...unitFor(s, []), checkpoint: { ...s.committed, seq: 1, commitId: 'm', stall: { adoptions: 2, trying: 0 } } };
    expect(s.applyCommitted(marker, MARKER_PLAN)).toEqual({ deleteHandles: [], complete: false });
    expect(s.committed.commitId).toBe('m');
    expect(s.handles).toEqual(['h0', 'h1', 'h2']);
    s.applyCommitted(unitFor(s, first.steps), first);
    expect(frames(s.plan(0)!.steps)).toEqual(['frame 1']);
    // Still isolated after progress, until every frame a predecessor ran has been run alone.
    expect(s.isolated).toBe(true);
  });

  it('an isolated video has nothing decoded ahead; a normal one does', () => {
    expect(session({ ...emptyCheckpoint(0), stall: { adoptions: 2 } }).wouldRun(0, 0)).toBe(false);
    expect(session({ ...emptyCheckpoint(0), stall: { adoptions: 1 } }).wouldRun(0, 0)).toBe(true);
  });

  it('a plan whose marker did not land is undone: the frame is taken again', () => {
    const s = session({ ...emptyCheckpoint(0), stall: { adoptions: 2 } });
    receive(s, 0, 0, 1);
    expect(frames(s.plan(0)!.steps)).toEqual(['frame 0']);
    s.undoPlan();
    expect(frames(s.plan(0)!.steps)).toEqual(['frame 0']);
  });

  it('a frame processes died running alone twice is parked as crashed-worker, once', () => {
    const s = session({ ...emptyCheckpoint(0), stall: { adoptions: 4, trying: 1, tries: 2 } });
    expect(s.isolated).toBe(true);
    receive(s, 0, 0, 1, 2);
    const p0 = s.plan(0)!;
    expect(p0.parked.get(1)).toBe('crashed-worker');
    s.applyCommitted(unitFor(s, p0.steps), p0);
    const p1 = s.plan(0)!;
    expect(frames(p1.steps)).toEqual(['frame 1']);
    expect(p1.parked.get(1)).toBe('crashed-worker');
    expect(s.parkedIn(p1)).toBe(1);
    s.applyCommitted(unitFor(s, p1.steps), p1);
    expect(s.crashParked.size).toBe(0);
    expect(s.plan(0)!.parked.size).toBe(0);
  });

  it('leaves isolation once the redelivery window is over and nothing waits, not before', () => {
    const s = new VideoSession('v', 1, { ...emptyCheckpoint(0), stall: { adoptions: 2 } }, OPTIONS, 1_000);
    receive(s, 1_000, 0);
    expect(s.leaveIsolationIfDue(10_000, 5_000)).toBe(false); // frame 0 waits
    const p = s.plan(1_000)!;
    s.applyCommitted(unitFor(s, p.steps), p);
    expect(s.leaveIsolationIfDue(5_999, 5_000)).toBe(false);
    expect(s.leaveIsolationIfDue(6_000, 5_000)).toBe(true);
    expect(s.isolated).toBe(false);
  });

  it('taken over from a dead owner: isolated on the first adoption; a clean handover is not', () => {
    expect(new VideoSession('v', 1, { ...emptyCheckpoint(0), stall: { adoptions: 1 } }, OPTIONS, 0, 'dead-owner').isolated).toBe(true);
    expect(new VideoSession('v', 1, { ...emptyCheckpoint(0), stall: { adoptions: 1 } }, OPTIONS, 0, 'clean').isolated).toBe(false);
    // Evidence from earlier adoptions without progress does not isolate after a clean handover
    expect(new VideoSession('v', 1, { ...emptyCheckpoint(0), stall: { adoptions: 3 } }, OPTIONS, 0, 'clean').isolated).toBe(false);
  });

  it('a video that keeps streaming leaves isolation once the frames known when the window closed have run alone', () => {
    const s = new VideoSession('v', 1, { ...emptyCheckpoint(0), stall: { adoptions: 1 } }, OPTIONS, 1_000, 'dead-owner');
    receive(s, 1_000, 0, 1);
    expect(s.leaveIsolationIfDue(6_000, 5_000)).toBe(false); // window closes at frame 1
    for (const f of [0, 1]) {
      receive(s, 6_000, f + 2); // a new frame arrives for every one run: something always waits
      const p = s.plan(6_000)!;
      expect(frames(p.steps)).toEqual([`frame ${f}`]);
      s.applyCommitted(unitFor(s, p.steps), p);
      expect(s.leaveIsolationIfDue(7_000, 5_000)).toBe(f === 1);
    }
    expect(frames(s.plan(7_000)!.steps)).toEqual(['frame 2', 'frame 3']);
  });
});

describe('VideoSession: one record per frame, whatever a rollback replays (issue 32)', () => {
  it('a frame taken as late for a gap that then did not land runs in order after the rollback, never as both gap and late', () => {
    // Prepare: 0-2 committed, 4-5 buffered (committed); a listing finds no 3, the plan gaps it
    const s = session();
    receive(s, 0, 0, 1, 2);
    const first = s.plan(0)!;
    s.applyCommitted(unitFor(s, first.steps), first);
    receive(s, 10, 4, 5);
    s.setEnd(5);
    const buffered = s.plan(10)!;
    expect(frames(buffered.steps)).toEqual([]);
    s.applyCommitted(unitFor(s, buffered.steps), buffered);
    s.learnListing(3, [ref(4), ref(5)], 5, 6_000);
    const gapPlan = s.plan(6_000)!;
    expect(frames(gapPlan.steps)).toEqual(['gap 3', 'frame 4']);
    // Act: frame 3 decided from the live state (below the tracker, no record) as late, then the gap's unit does not land
    const offered = s.offerFrame(ref(3), 6_100);
    expect(offered.kind).toBe('needs-record');
    if (offered.kind !== 'needs-record') return;
    expect(s.resolveWithRecord(ref(3), offered, undefined)).toBe('late');
    s.rollback([], 'commit-unknown', false, 6_200);
    const retry = s.plan(7_000)!;
    // Assess: frame 3 runs in order, once
    expect(frames(retry.steps)).toEqual(['frame 3', 'frame 4', 'frame 5']);
  });

  it.each([
    { name: 'distinct frames pass as they are', steps: ['frame 1', 'gap 2', 'late 0'], kept: ['frame 1', 'gap 2', 'late 0'] },
    { name: 'a frame step beats a gap of the same frame', steps: ['gap 3', 'frame 3'], kept: ['frame 3'] },
    { name: 'a late step beats a gap', steps: ['late 3', 'gap 3'], kept: ['late 3'] },
    { name: 'a frame step beats a late one', steps: ['late 3', 'frame 3', 'frame 4'], kept: ['frame 3', 'frame 4'] },
    { name: 'two rejects of one frame keep the first', steps: ['reject 7', 'reject 7', 'frame 6'], kept: ['reject 7', 'frame 6'] },
    { name: 'a reject beats a gap', steps: ['gap 7', 'reject 7'], kept: ['reject 7'] },
  ])('oneStepPerFrame: $name', ({ steps, kept }) => {
    const parsed: SequencedStep[] = steps.map((t) => {
      const [type, n] = t.split(' ') as [SequencedStep['type'], string];
      const frame = Number(n);
      if (type === 'gap') return { type, frame, reason: 'missing-frame' };
      if (type === 'reject') return { type, ref: ref(frame), reason: 'after-end-of-stream' };
      if (type === 'late') return { type, ref: { ...ref(frame), replacesGap: false } };
      return { type, ref: ref(frame) };
    });
    expect(frames(oneStepPerFrame(parsed))).toEqual(kept);
  });
});

describe('VideoSession: upload times (issue 32)', () => {
  it('forgets the upload time of a frame a commit found already recorded: no entry is kept forever', () => {
    const s = session();
    receive(s, 0, 0);
    s.uploads.note(0, '2026-01-01T00:00:00.000Z');
    expect(s.uploads.size).toBe(1);
    s.settleExisting(0);
    expect(s.uploads.size).toBe(0);
  });
});

describe('VideoSession: the source watch of a new owner (decision 85)', () => {
  const watched = (lastSegmentAtMs: number): VideoCheckpoint => ({ ...emptyCheckpoint(0), source: { lastSegmentAtMs, intervalMs: 10_000, stalled: false, stalls: 0 } });

  it('counts silence from when it took the video, not from its predecessor\'s last segment', () => {
    // The predecessor last received a segment at 100 s and died; this owner took the video at 160 s.
    const s = new VideoSession('v', 2, watched(100_000), OPTIONS, 160_000, 'dead-owner');
    expect(s.checkStall(160_000)).toBe(false);
    expect(s.nextWakeMs(160_000)).toBe(160_000 + 30_000);
    expect(s.checkStall(189_999)).toBe(false);
    // Nothing came within three intervals of its own tenure: a stall.
    expect(s.checkStall(190_000)).toBe(true);
  });

  it('an owner that took the video before the last segment judges from the segment', () => {
    const s = new VideoSession('v', 2, watched(100_000), OPTIONS, 90_000);
    expect(s.checkStall(129_999)).toBe(false);
    expect(s.checkStall(130_000)).toBe(true);
  });
});
