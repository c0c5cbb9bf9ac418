/**
 * Chaos run on the local stack (DynamoDB Local + fauxqs, router, janitor, real worker
 * processes): many faults at once, mixed at random, then the pipeline's guarantees
 * checked on what it left behind. Randomised with a printed seed; `--seed N` replays the
 * same plan (the same faults at the same planned times; which worker a process fault
 * hits and which calls an injected AWS error hits still depend on timing).
 *
 * Plan (bench/chaos/plan.ts): `--videos` x `--frames` (default 6 x 200) small JPEGs
 * numbered from 1, each video a camera at `--fps` (default 5), uploaded by a pool of
 * parallel uploaders, with the `_end` marker after each video's last upload. Workers run
 * the `stats` processor, whose track ID is the number of frames the video's state has
 * seen in order. Short leases (test/support/pipeline.ts FAST_TUNABLES) so that failovers
 * happen in seconds.
 *
 * Faults (bench/chaos/faults.ts, one table entry per kind): `kill -9` of a worker;
 * SIGSTOP then SIGCONT shorter and longer than the slot lease (a zombie comes back);
 * a skipped janitor run; notifications dropped, duplicated, delayed; uploads shuffled and
 * late; frames never uploaded; corrupt, zero-byte and unreadable objects; throttling and
 * 5xx on DynamoDB, SQS and S3 calls of workers, router and janitor (`AWS_FAULT_INJECTION`).
 *
 * Report (bench/chaos/report.ts): faults by kind, what the faulted frames ended as, and
 * the six invariants of bench/harness/invariants.ts; exits 1 on any violation.
 *
 *   npx node bench/chaos.ts [--seed N] [--videos 6] [--frames 200] [--fps 5] [--aws-fault-rate 0.02] [--out path]
 *
 * Writes bench/results/chaos-<seed>.json. test/chaos/chaos.test.ts runs it when CHAOS=1.
 */
import { join } from 'node:path';
import { frameKey } from '../core/keys.ts';
import { rng } from '../core/random.ts';
import type { ScheduledHandler } from '../local/event-source.ts';
import type { NotificationFault } from '../local/stack.ts';
import { FAST_TUNABLES } from '../test/support/pipeline.ts';
import { collectVideos, completeCount, readSummaries, resultsSource, totalRecords } from './harness/collect.ts';
import { checkInvariants } from './harness/invariants.ts';
import { benchMain, createBench, freshStateDir, RESULTS_DIR, sleep, type Bench } from './harness/main.ts';
import { startBenchStack, withStack } from './harness/stack.ts';
import { endMarkers, putObject, runUploads, waitUntil } from './harness/uploader.ts';
import { every, watchUntilSettled } from './harness/watch.ts';
import { FRAME_FAULTS, TIMED_FAULTS, type FaultContext } from './chaos/faults.ts';
import { DEFAULTS, jpegs, makePlan, plannedCounts, type ChaosOptions } from './chaos/plan.ts';
import { report, type AppliedFault } from './chaos/report.ts';
import { parseFlags, type Flag } from './harness/options.ts';

export type { ChaosOptions } from './chaos/plan.ts';

/** The chaos run's flags (the shares of each fault are options of {@link runChaos} only). */
const CHAOS_FLAGS = {
  seed: { num: [undefined, 0, 2 ** 31], int: true },
  videos: { num: [DEFAULTS.videos, 1, 64], int: true },
  frames: { num: [DEFAULTS.frames, 20, 10_000], int: true },
  fps: { num: [DEFAULTS.fps, 0.1, 100] },
  uploaders: { num: [DEFAULTS.uploaders, 1, 64], int: true },
  kills: { num: [DEFAULTS.kills, 0, 100], int: true },
  'short-pauses': { num: [DEFAULTS.shortPauses, 0, 100], int: true },
  'long-pauses': { num: [DEFAULTS.longPauses, 0, 100], int: true },
  'janitor-skips': { num: [DEFAULTS.janitorSkips, 0, 100], int: true },
  'aws-fault-rate': { num: [DEFAULTS.awsFaultRate, 0, 0.5] },
  'timeout-s': { num: [DEFAULTS.timeoutMs / 1000, 10, 86_400] },
  out: { text: undefined },
} as const satisfies Record<string, Flag>;

/** Options from the command line; undefined after `--help`. */
export function parseOptions(args: readonly string[]): ChaosOptions | undefined {
  const f = parseFlags('chaos.ts', CHAOS_FLAGS, args);
  if (!f) return undefined;
  // A fresh seed unless one is given: printed first thing, so any run can be replayed.
  const seed = f.seed ?? Math.floor(Math.random() * 2 ** 31);
  const { timeoutS, out, ...rest } = f;
  return { ...DEFAULTS, ...rest, seed, timeoutMs: timeoutS * 1000, out: out ?? join(RESULTS_DIR, `chaos-${seed}.json`) };
}

/** Runs one chaos run, prints as it goes, writes the JSON report; returns it. */
export async function runChaos(o: ChaosOptions, bench: Bench = createBench()) {
  const { say, clock } = bench;
  say(`chaos seed ${o.seed}  (replay: npx node bench/chaos.ts --seed ${o.seed})`);
  const stateDir = freshStateDir('chaos');
  const awsFaultLog = join(stateDir, 'aws-faults.log');
  const faultEnv = o.awsFaultRate > 0 ? JSON.stringify({ rate: o.awsFaultRate, seed: o.seed, log: awsFaultLog }) : undefined;
  // The router and janitor run in this process and build their clients from process.env.
  const savedFaultEnv = process.env.AWS_FAULT_INJECTION;
  if (faultEnv) process.env.AWS_FAULT_INJECTION = faultEnv;

  let notificationFaults = new Map<string, NotificationFault>();
  const janitor = { pendingSkips: 0, skipped: 0, scheduledRuns: 0 };
  // Wraps the real janitor (imported on first use: it reads its configuration from the
  // environment the stack sets) so that a scheduled run can be skipped. Task-stopped
  // events are never skipped: only the schedule is the fault.
  const janitorHandler: ScheduledHandler = async (event, context) => {
    if ((event as { 'detail-type'?: string })['detail-type'] === 'Scheduled Event') {
      if (janitor.pendingSkips > 0) {
        janitor.pendingSkips--;
        janitor.skipped++;
        return undefined;
      }
      janitor.scheduledRuns++;
    }
    const { handler } = await import('../functions/janitor/handler.ts');
    return handler(event, context);
  };
  try {
    const [images, started] = await Promise.all([
      jpegs(8),
      startBenchStack({
        stateDir,
        janitorIntervalMs: 1_000,
        janitorHandler,
        workerTailLines: 80,
        // Videos spread over every slot (the router packs a slot up to videosPerSlot first),
        // so that every slot has a worker to kill or freeze.
        tunables: { ...FAST_TUNABLES, slotCount: o.slotCount, videosPerSlot: Math.max(1, Math.ceil(o.videos / o.slotCount)) },
        workerEnv: { FRAME_PROCESSOR: 'stats', ...(faultEnv ? { AWS_FAULT_INJECTION: faultEnv } : {}) },
        notificationFault: (key) => notificationFaults.get(key),
      }),
    ]);
    return await withStack(started, bench, async (stack) => {
      // Plan.
      const t = stack.tunables;
      const plan = makePlan({ o, reorderWaitMs: t.reorderWaitMs, slotLeaseMs: t.slotLeaseTtlSeconds * 1000 });
      notificationFaults = new Map(plan.uploads.filter((u) => u.notification).map((u) => [frameKey(u.videoId, u.frame), u.notification!]));
      say(
        `${clock()}  stack up: ${o.videos} videos x ${o.frames} frames at ${o.fps} fps, ${t.slotCount} slots, stats processor; ` +
          `lease ${t.slotLeaseTtlSeconds} s, reorderWaitMs ${t.reorderWaitMs}, slot-queue visibility ${t.slotQueueVisibilitySeconds} s; AWS fault rate ${o.awsFaultRate}`,
      );
      say(`${clock()}  planned: ${Object.entries(plannedCounts(plan)).map(([k, n]) => `${k} ${n}`).join(', ')}; ${plan.timedFaults.map((f) => `${f.kind} @${(f.atMs / 1000).toFixed(1)} s`).join(', ')}`);

      // Uploads, with their frame faults.
      const uploaded = new Map<string, Set<number>>(plan.videoIds.map((id) => [id, new Set<number>()]));
      const pending: Promise<unknown>[] = [];
      const afterLast = endMarkers(stack, plan.uploads, o.frames);
      const uploads = runUploads(
        plan.uploads,
        o.uploaders,
        async (u) => {
          const fault = FRAME_FAULTS.find((k) => k.kind === u.frameFault);
          const key = frameKey(u.videoId, u.frame);
          await putObject(stack, key, fault?.body?.(u, o.seed) ?? images[(u.frame * 7 + u.videoId.charCodeAt(u.videoId.length - 1)) % images.length]!, 'image/jpeg');
          uploaded.get(u.videoId)!.add(u.frame);
          if (fault?.afterPut) pending.push(fault.afterPut(stack, u, key));
          await afterLast(u.videoId);
        },
        bench.interrupted,
      );

      // Timed faults, at their planned times.
      let summaries: Awaited<ReturnType<typeof readSummaries>> = [];
      const ctx: FaultContext = {
        o,
        stack,
        bench,
        rand: rng(o.seed * 31 + 5),
        owners: () => new Set(summaries.filter((s) => s && s.status !== 'complete').map((s) => s!.worker)),
        stopped: uploads.stopped,
        pending,
        skipJanitorRun: () => janitor.pendingSkips++,
      };
      const applied: AppliedFault[] = [];
      const faulting = (async () => {
        for (const f of plan.timedFaults) {
          if (!(await waitUntil(uploads.clockMs, f.atMs, uploads.stopped))) return;
          const atS = (Date.now() - uploads.clockMs) / 1000;
          const done = await TIMED_FAULTS.find((k) => k.kind === f.kind)!.apply(ctx, f.detail);
          if (done.skipped) say(`${clock()}  >>> ${f.kind}: ${done.skipped}, fault not applied`);
          applied.push({ kind: f.kind, atS, ...done });
        }
      })();

      // Watch until every video is complete, nothing changes for quietMs, or the timeout.
      const source = resultsSource(stack);
      const tick = every(10_000);
      const { outcome, finishedMs } = await watchUntilSettled(
        uploads,
        { everyMs: 1_000, quietMs: o.quietMs, deadlineMs: bench.t0 + o.timeoutMs, interrupted: bench.interrupted },
        async () => {
          summaries = await readSummaries(source, plan.videoIds);
          return { records: totalRecords(summaries), done: completeCount(summaries) === o.videos };
        },
        (p) => {
          if (!tick()) return;
          const ws = stack.launcher.workers();
          say(
            `${clock()}  uploaded ${[...uploaded.values()].reduce((n, s) => n + s.size, 0)}/${plan.uploads.length}  records ${p.records}  complete ${completeCount(summaries)}/${o.videos}  ` +
              `workers alive ${ws.filter((w) => w.alive).length} (paused ${ws.filter((w) => w.alive && w.paused).length}, started ${ws.length})`,
          );
        },
      );
      uploads.stop();
      await Promise.all([uploads.finished, faulting]);
      await Promise.allSettled(pending);
      say(`${clock()}  ${outcome}; letting delayed and duplicated notifications arrive (they must change nothing)...`);
      await Promise.race([stack.notifier.flush({ delayed: true }), sleep(4 * t.reorderWaitMs)]);
      await sleep(2 * t.reorderWaitMs);

      // Report.
      const left = (await collectVideos(stack, plan.videoIds)).map((v) => ({ ...v, uploaded: uploaded.get(v.videoId)! }));
      const invariants = checkInvariants(left.map((v) => ({ ...v, neverUploaded: plan.lost.get(v.videoId)! })));
      const finishedS = (finishedMs - uploads.clockMs) / 1000;
      return report({ o, plan, stack, outcome, finishedS, applied, janitor, awsFaultLog, left, invariants }, bench);
    });
  } finally {
    if (savedFaultEnv === undefined) delete process.env.AWS_FAULT_INJECTION;
    else process.env.AWS_FAULT_INJECTION = savedFaultEnv;
  }
}

if (import.meta.main) {
  const o = parseOptions(process.argv.slice(2));
  if (o) await benchMain('chaos', async (bench) => {
    const r = await runChaos(o, bench);
    return r.violations === 0 && r.outcome === 'complete' ? 0 : 1;
  });
}
