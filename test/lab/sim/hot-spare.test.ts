/**
 * The hot spare and the standby (decision 75) on the deterministic simulation: the product's
 * supervisor, workers, router and janitor on the twins and one fake clock (lab/sim/), the
 * faults at chosen moments. The oracle of the simulation judges each run (0 frames lost or
 * doubled, track IDs equal to an uninterrupted run's), except the poison frame's, whose
 * record is a failure by design.
 */
import { describe, expect, it } from 'vitest';
import { allResults } from '../../../core/commit/dynamodb/results-reader.ts';
import { frameKey } from '../../../core/ingest/keys.ts';
import { simFrameBytes } from '../../../lab/sim/media.ts';
import { NO_AWS_FAULTS, type SimEvent, type SimPlan, type SimVideo } from '../../../lab/sim/plan.ts';
import { runPlan, type SimRunOptions } from '../../../lab/sim/run.ts';
import type { SimWorld } from '../../../lab/sim/world.ts';
import { CRASHED_WORKER_REASON } from '../../../gpu-worker/runtime/crash/crash-breaker.ts';

/** `videos` JPEG videos on one slot at 2 frames/s for `seconds`, each end-marked. */
function livePlan(seed: number, videos: number, seconds: number): SimPlan {
  const events: SimEvent[] = [];
  const list: SimVideo[] = [];
  const frames = seconds * 2;
  for (let v = 0; v < videos; v++) {
    const videoId = `cam${v}`;
    for (let f = 0; f < frames; f++) events.push({ atMs: v * 100 + f * 500, kind: 'upload', videoId, key: frameKey(videoId, f), body: Buffer.from(simFrameBytes(videoId, f)).toString('latin1'), faults: [] });
    events.push({ atMs: v * 100 + frames * 500, kind: 'end', videoId, lastFrame: frames - 1, faults: [] });
    list.push({ videoId, kind: 'jpeg', lastFrame: frames - 1, endMarked: true, neverUploaded: [], segments: [] });
  }
  events.sort((a, b) => a.atMs - b.atMs);
  return { seed, slots: 1, videos: list, events, aws: NO_AWS_FAULTS, lastEventMs: events[events.length - 1]!.atMs };
}

/** Runs `plan`, calls `fault(world)` at `atMs`; returns the result, the fault's time and every video's first record under a newer token after it (s). */
async function withFault(plan: SimPlan, atMs: number, fault: (w: SimWorld) => void, o: SimRunOptions = {}) {
  let faultAt = NaN;
  const firstNewer: (number | null)[] = [];
  let world!: SimWorld;
  const records = new Map<string, Awaited<ReturnType<typeof allResults>>>();
  const result = await runPlan(plan, {
    processBatchMs: 100,
    settleMs: 5 * 60_000,
    ...o,
    onWorld: (w) => {
      world = w;
      o.onWorld?.(w);
      setTimeout(() => {
        faultAt = Date.now();
        fault(w);
      }, atMs);
    },
    inspect: async (w) => {
      for (const v of plan.videos) {
        const rs = await allResults({ ddb: w.leasesTwin.ddb, resultsTable: w.wiring.resultsTable }, v.videoId);
        records.set(v.videoId, rs);
        const old = Math.max(0, ...rs.filter((r) => r.committedAtMs <= faultAt).map((r) => r.token));
        const after = rs.filter((r) => r.token > old).map((r) => r.committedAtMs);
        firstNewer.push(after.length ? (Math.min(...after) - faultAt) / 1000 : null);
      }
    },
  });
  return { result, world, firstNewer, records, trace: result.trace.map((l) => l.what) };
}

describe('a hot spare beside each worker (decision 75)', () => {
  it('takes the slot within a second of a kill -9 of the worker process: no new task, the dead owner\'s messages handed back, nothing lost or doubled', async () => {
    const r = await withFault(livePlan(1, 3, 40), 20_300, (w) => w.kill(w.runningTasks()[0]!), { world: { hotSpare: true } });
    expect(r.result.violations).toEqual([]);
    expect(r.result.ended).toBe('settled');
    expect(r.trace.filter((l) => /promoted$/.test(l))).toHaveLength(1);
    // The same task goes on: the janitor launched nothing after the first task.
    expect(r.trace.filter((l) => /^launch t0-/.test(l))).toHaveLength(1);
    for (const s of r.firstNewer) expect(s).not.toBeNull();
    expect(Math.max(...(r.firstNewer as number[]))).toBeLessThan(1);
  }, 120_000);

  it('without the spare the same kill waits for the task-stopped event and a new task (the test can fail)', async () => {
    const r = await withFault(livePlan(1, 3, 40), 20_300, (w) => w.kill(w.runningTasks()[0]!));
    expect(r.result.violations).toEqual([]);
    expect(Math.max(...(r.firstNewer as number[]))).toBeGreaterThan(2);
  }, 120_000);

  it('kills a worker process frozen past its lease (SIGSTOP) and fails over at the lease\'s expiry; the frozen one writes nothing more', async () => {
    const r = await withFault(livePlan(2, 2, 60), 20_300, (w) => w.pause(w.runningTasks()[0]!, 30_000), { world: { hotSpare: true } });
    expect(r.result.violations).toEqual([]);
    expect(r.trace.some((l) => /promoted$/.test(l))).toBe(true);
    // At most the lease (15 s) after the freeze, plus the watchdog's second and the claim.
    expect(Math.max(...(r.firstNewer as number[]))).toBeLessThanOrEqual(15 + 2);
    expect([...r.world.warnings].filter(([k]) => /supervisor: primary worker frozen past its lease/.test(k)).map(([, n]) => n)).toEqual([1]);
  }, 120_000);

  it('still isolates and parks a poison frame, however quickly the spare takes over: 3 deaths, the frame failed crashed-worker, every other frame ok', async () => {
    const plan = livePlan(3, 2, 30);
    const r = await withFault(plan, 0, (w) => (w.poison = { videoId: 'cam0', frame: 20 }), { world: { hotSpare: true } });
    expect(r.result.ended).toBe('settled');
    // The owner (mixed round), then two successors running the frame alone (PARK_AFTER_TRIES).
    expect(r.world.poisonDeaths).toBe(3);
    const cam0 = r.records.get('cam0')!;
    expect(cam0.filter((x) => x.frame === 20).map((x) => [x.status, x.reason])).toEqual([['failed', CRASHED_WORKER_REASON]]);
    expect(cam0.filter((x) => x.frame !== 20).every((x) => x.status === 'ok')).toBe(true);
    expect(cam0).toHaveLength(60);
    expect(r.records.get('cam1')!.filter((x) => x.status === 'ok')).toHaveLength(60);
    // One task all along: each death was a spare's takeover, not a relaunch.
    expect(r.trace.filter((l) => /^launch t0-/.test(l))).toHaveLength(1);
  }, 120_000);
});

describe('standbys across instances (decision 75)', () => {
  const shortLease = { slotLeaseTtlSeconds: 3, heartbeatIntervalSeconds: 1, clockSkewToleranceMs: 1_000, slotQueueVisibilitySeconds: 3 };

  it('a standby takes the slot of a lost instance within about 5 s with a 3-s lease; nothing lost or doubled', async () => {
    const r = await withFault(livePlan(4, 3, 40), 20_300, (w) => w.loseInstance(), { world: { standbys: 1 }, tunables: shortLease });
    expect(r.result.violations).toEqual([]);
    expect(r.trace.some((l) => /standby takes slot 0$/.test(l))).toBe(true);
    expect(Math.max(...(r.firstNewer as number[]))).toBeLessThanOrEqual(5);
  }, 120_000);

  it('a lost standby is replaced by the janitor, on its task-stopped event', async () => {
    const r = await withFault(livePlan(5, 1, 20), 10_000, (w) => w.kill(w.runningStandbys()[0]!, { whole: true }), { world: { standbys: 1 } });
    expect(r.result.violations).toEqual([]);
    const launches = r.trace.filter((l) => /^launch s0-/.test(l));
    expect(launches).toHaveLength(2);
    expect(launches[1]).toMatch(/standby task stopped/);
  }, 120_000);
});
