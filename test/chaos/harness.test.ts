/**
 * The bench harness's pure parts (bench/harness/): results are written with paths
 * relative to the repository, every committed result is, the uploader runs a plan in due
 * order and stops when told, the watch loop ends a run by its rules, the kill helper
 * picks the busiest live worker, and the chaos plan draws each fault kind of its tables.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { summaryRecords } from '../../bench/harness/collect.ts';
import { REPO_ROOT, RESULTS_DIR, writeResult } from '../../bench/harness/main.ts';
import { runUploads } from '../../bench/harness/uploader.ts';
import { busiestFirst, killBusiest, watchUntilSettled, type Outcome, type Progress, type SettleRules } from '../../bench/harness/watch.ts';
import { FRAME_FAULTS, NOTIFICATION_FAULTS, TIMED_FAULTS } from '../../bench/chaos/faults.ts';
import { CRASH_FRAME_KIND, DEFAULTS, makePlan, plannedCounts, withSegments } from '../../bench/chaos/plan.ts';
import { makeSegmentPlan, SEGMENT_FAULTS, SEGMENT_TRUNCATED } from '../../bench/chaos/segments.ts';
import type { VideoSummaryItem } from '../../core/commit/results.ts';

const quiet = () => {};

describe('writeResult', () => {
  it('writes repository paths relative to the repository, other paths as given, and non-finite numbers as null', () => {
    // Prepare
    const out = join(mkdtempSync(join(tmpdir(), 'bench-result-')), 'r.json');
    // Act
    writeResult(out, { modelUri: join(REPO_ROOT, '.local', 'models', 'm.onnx'), elsewhere: '/opt/x.onnx', nested: [{ p: join(REPO_ROOT, 'bench') }], nan: Number.NaN, inf: Infinity }, quiet);
    // Assess
    expect(JSON.parse(readFileSync(out, 'utf8'))).toEqual({ modelUri: '.local/models/m.onnx', elsewhere: '/opt/x.onnx', nested: [{ p: 'bench' }], nan: null, inf: null });
  });

  it('no committed result carries an absolute path of the machine it ran on', () => {
    for (const file of readdirSync(RESULTS_DIR).filter((f) => f.endsWith('.json'))) {
      const text = readFileSync(join(RESULTS_DIR, file), 'utf8');
      expect(text.match(/"(\/(work|home|tmp|root|Users)\/[^"]*)"/)?.[1], file).toBeUndefined();
    }
  });
});

describe('runUploads', () => {
  it('puts every item of a plan once, in due order on one lane', async () => {
    // Prepare
    const plan = [0, 1, 2, 3].map((k) => ({ dueMs: k, id: k }));
    const seen: number[] = [];
    // Act
    const uploads = runUploads(plan, 1, async (u) => {
      seen.push(u.id);
    });
    await uploads.finished;
    // Assess
    expect(seen).toEqual([0, 1, 2, 3]);
    expect(uploads.doneMs()).toBeDefined();
    expect(uploads.error()).toBeUndefined();
  });

  it('stops taking items once stopped, and keeps the first error', async () => {
    // Prepare
    const plan = [0, 0, 0, 60_000].map((dueMs, id) => ({ dueMs, id }));
    const seen: number[] = [];
    // Act
    const uploads = runUploads(plan, 1, async (u) => {
      seen.push(u.id);
      if (u.id === 1) throw new Error('put failed');
    });
    await uploads.finished;
    // Assess
    expect(seen).toEqual([0, 1]);
    expect(String(uploads.error())).toContain('put failed');
    expect(uploads.stopped()).toBe(true);
  });
});

describe('watchUntilSettled', () => {
  const finishedUploads = async () => {
    const u = runUploads([], 1, async () => {});
    await u.finished;
    return u;
  };
  const cases: { name: string; rules: Omit<SettleRules, 'everyMs'>; polls: Progress[]; want: Outcome }[] = [
    { name: 'every video done', rules: {}, polls: [{ records: 1, done: false }, { records: 2, done: true }], want: 'complete' },
    { name: 'nothing new for quietMs', rules: { quietMs: 0 }, polls: [{ records: 1, done: false }, { records: 1, done: false }, { records: 1, done: false }], want: 'quiet' },
    { name: 'the cap after the uploads', rules: { capAfterUploadsMs: 0 }, polls: [{ records: 1, done: false }, { records: 2, done: false }], want: 'cap' },
    { name: 'the deadline', rules: { deadlineMs: 0 }, polls: [{ records: 1, done: false }], want: 'timeout' },
    { name: 'an interrupt, before all else', rules: { interrupted: () => true }, polls: [{ records: 1, done: true }], want: 'interrupted' },
  ];
  for (const c of cases)
    it(`ends a run on ${c.name}`, async () => {
      // Prepare
      const uploads = await finishedUploads();
      let k = 0;
      // Act
      const { outcome } = await watchUntilSettled(uploads, { everyMs: 1, ...c.rules }, async () => c.polls[Math.min(k++, c.polls.length - 1)]!);
      // Assess
      expect(outcome).toBe(c.want);
    });
});

describe('killBusiest', () => {
  it('kills the live worker holding most videos, skipping one that is gone', () => {
    // Prepare
    const held = new Map([
      ['w1', ['a']],
      ['w2', ['b', 'c', 'd']],
      ['w3', ['e', 'f']],
    ]);
    const killed: number[] = [];
    const live: Record<string, number> = { w1: 11, w3: 13 };
    // Act
    const k = killBusiest(busiestFirst(held), { find: (w) => (live[w] ? { pid: live[w] } : undefined), kill: (pid) => killed.push(pid) });
    // Assess
    expect(k?.workerId).toBe('w3');
    expect(k?.videos).toEqual(['e', 'f']);
    expect(killed).toEqual([13]);
  });
});

describe('summaryRecords', () => {
  it('counts ok, late, failed and gap frames, and nothing without a summary', () => {
    const s = { framesOk: 5, framesLate: 2, framesFailed: 1, framesGap: 3 } as VideoSummaryItem;
    expect(summaryRecords(s)).toBe(11);
    expect(summaryRecords({ ...s, framesLate: undefined } as unknown as VideoSummaryItem)).toBe(9);
    expect(summaryRecords(undefined)).toBe(0);
  });
});

describe('the chaos plan', () => {
  const ctx = { o: { ...DEFAULTS, seed: 627231800, out: '' }, reorderWaitMs: 1_500, slotLeaseMs: 6_000, redriveWindowMs: 60_000 };

  it('replays the documented seed: the same planned fault counts as before the fault tables', () => {
    // bench/README.md, seed 627231800 (its run: bench/results/chaos-627231800.json, in git history at af136e9)
    expect(plannedCounts(makePlan(ctx))).toEqual({
      'notification dropped': 21,
      'notification duplicated': 26,
      'notification delayed': 17,
      'upload shuffled': 46,
      'frame corrupt': 3,
      'frame zero-byte': 6,
      'object unreadable (deleted)': 7,
      'upload late': 14,
      'frame never uploaded': 7,
      // Issue 32's kind, last in the table: it takes only frames that had no frame fault, so every count above is as documented.
      'upload late into an in-doubt window': 5,
      [CRASH_FRAME_KIND]: 1,
    });
  });

  it('picks a crash frame with no other fault in the middle half of its video, only when asked; an outage outlasts the redrive window', () => {
    const plan = makePlan(ctx);
    const c = plan.crashFrame!;
    const u = plan.uploads.find((x) => x.videoId === c.videoId && x.frame === c.frame)!;
    expect(u.frameFault ?? u.notification ?? u.shuffled).toBeUndefined();
    expect(c.frame > ctx.o.frames / 4 && c.frame < (3 * ctx.o.frames) / 4).toBe(true);
    expect(makePlan({ ...ctx, o: { ...ctx.o, crashFrames: 0 } }).crashFrame).toBeUndefined();
    const outages = plan.timedFaults.filter((f) => f.kind === 'DynamoDB outage > redrive window');
    expect(outages).toHaveLength(1);
    expect(outages[0]!.detail.outageMs).toBeGreaterThan(ctx.redriveWindowMs);
    // New kinds drew after the old ones: the timed faults drawn before stay where they were.
    const before = makePlan({ ...ctx, o: { ...ctx.o, outages: 0 } }).timedFaults;
    expect(plan.timedFaults.filter((f) => f.kind !== 'DynamoDB outage > redrive window')).toEqual(before);
  });

  it('draws every kind of each table, and each timed fault as many times as asked', () => {
    const plan = makePlan(ctx);
    const counts = plannedCounts(plan);
    for (const k of [...FRAME_FAULTS, ...NOTIFICATION_FAULTS]) expect(counts[k.kind], k.kind).toBeGreaterThan(0);
    for (const k of TIMED_FAULTS) expect(plan.timedFaults.filter((f) => f.kind === k.kind).length, k.kind).toBe(k.count(ctx.o));
    const frameOnes = plan.uploads.filter((u) => u.frame === 1);
    expect(frameOnes.every((u) => u.frameFault === undefined && u.notification === undefined)).toBe(true);
  });

  it('adds segment videos on a sequence of their own: contiguous segments, each fault kind on its segments, truncated ones decoding short, the JPEG plan unchanged', async () => {
    const jpeg = makePlan(ctx);
    const seg = await makeSegmentPlan(ctx, ctx.o.videos);
    const plan = withSegments(jpeg, seg);
    // The JPEG videos' uploads and timed faults are those of the plan without segments.
    expect(plan.uploads.filter((u) => !u.segment)).toEqual(jpeg.uploads);
    expect(plan.timedFaults).toEqual(jpeg.timedFaults);
    expect(seg.videoIds).toHaveLength(ctx.o.segmentVideos);
    for (const videoId of seg.videoIds) {
      const segs = [...seg.segments.get(videoId)!].sort(([a], [b]) => a - b);
      // Frames 1..frames, each covered once.
      let next = 1;
      for (const [first, s] of segs) {
        expect(first).toBe(next);
        next += s.frames;
      }
      expect(next - 1).toBe(ctx.o.frames);
    }
    const counts = plannedCounts(plan);
    for (const k of SEGMENT_FAULTS) expect(counts[k.kind], k.kind).toBe(ctx.o.segmentFaultsEach);
    const truncated = seg.uploads.filter((u) => u.frameFault === SEGMENT_TRUNCATED).map((u) => seg.segments.get(u.videoId)!.get(u.frame)!);
    for (const t of truncated) expect(t.yields).toBeLessThan(t.frames);
    // A missing segment's frames are lost, and it is not uploaded; the first segment of a video has no fault.
    const lost = [...seg.lost.values()].reduce((n, l) => n + l.size, 0);
    expect(lost).toBeGreaterThan(0);
    expect(seg.uploads.filter((u) => u.frame === 1).every((u) => u.frameFault === undefined && u.notification === undefined)).toBe(true);
    expect(seg.uploads.some((u) => seg.lost.get(u.videoId)!.has(u.frame))).toBe(false);
  }, 60_000);
});
