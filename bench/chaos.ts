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
 * seen in order. Short leases (harness/pipeline.ts FAST_TUNABLES) so that failovers
 * happen in seconds; `--default-tunables` runs at the tunables users get instead (slot
 * lease 15 s, heartbeat 5 s, slot-queue visibility 5 s, launch grace 900 s, the janitor
 * every 60 s).
 *
 * Faults (bench/chaos/faults.ts, one table entry per kind): `kill -9` of a worker;
 * SIGSTOP then SIGCONT shorter and longer than the slot lease (a zombie comes back);
 * a skipped janitor run; notifications dropped, duplicated, delayed; uploads shuffled and
 * late; frames never uploaded; corrupt, zero-byte and unreadable objects; throttling and
 * 5xx on DynamoDB, SQS and S3 calls of workers, router and janitor (`AWS_FAULT_INJECTION`);
 * worker commits applied with their answer lost, and commits whose later group fails
 * (its `lostAnswerRate`, `laterGroupRate`); a DynamoDB outage longer than the slot queues'
 * redrive window; a frame that crashes the worker (`WORKER_CRASH_ON_KEY`).
 *
 * Report (bench/chaos/report.ts): faults by kind, what the faulted frames ended as, and
 * the invariants of bench/harness/invariants.ts; exits 1 on any violation.
 *
 *   npx node bench/chaos.ts [--seed N] [--videos 6] [--frames 200] [--fps 5] [--aws-fault-rate 0.02]
 *     [--lost-answer-rate 0.03] [--later-group-rate 0.03] [--outages 1] [--crash-frames 1] [--default-tunables] [--out path]
 *
 * Writes bench/results/chaos-<seed>.json. test/chaos/chaos.int.test.ts runs it when CHAOS=1.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { DEFAULT_TUNABLES, type Tunables } from '../core/config.ts';
import { frameKey } from '../core/ingest/keys.ts';
import { segmentKey } from '../core/ingest/segment-keys.ts';
import { rng } from '../core/random.ts';
import { COMMIT_FAULT_NAMES } from '../lab/aws/fault-injection.ts';
import type { LocalStack } from '../local/stack.ts';
import type { ScheduledHandler } from '../local/event-source.ts';
import type { NotificationFault } from '../local/stack.ts';
import { FAST_TUNABLES } from '../harness/pipeline.ts';
import { collectVideos, completeCount, readSummaries, resultsSource, totalRecords } from './harness/collect.ts';
import { checkInvariants } from './harness/invariants.ts';
import { benchMain, createBench, freshStateDir, RESULTS_DIR, sleep, type Bench } from './harness/main.ts';
import { startBenchStack, withStack } from './harness/stack.ts';
import { endMarkers, putObject, runUploads, waitUntil } from './harness/uploader.ts';
import { every, watchUntilSettled } from './harness/watch.ts';
import { DOUBT_WAIT_MS, DOUBT_WAIT_SHARE, DOUBT_WINDOW_KIND, DOUBT_WINDOW_READS, FRAME_FAULTS, TIMED_FAULTS, type FaultContext } from './chaos/faults.ts';
import { DEFAULTS, jpegs, makePlan, neverUploaded, plannedCounts, withSegments, type ChaosOptions } from './chaos/plan.ts';
import { makeSegmentPlan, putPlannedSegment } from './chaos/segments.ts';
import type { PlannedUpload } from './chaos/faults.ts';
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
  'lost-answer-rate': { num: [DEFAULTS.lostAnswerRate, 0, 1] },
  'later-group-rate': { num: [DEFAULTS.laterGroupRate, 0, 1] },
  outages: { num: [DEFAULTS.outages, 0, 10], int: true },
  'crash-frames': { num: [DEFAULTS.crashFrames, 0, 1], int: true },
  'segment-videos': { num: [DEFAULTS.segmentVideos, 0, 32], int: true },
  'segment-seconds': { num: [DEFAULTS.segmentSeconds, 0.5, 30] },
  'segment-faults-each': { num: [DEFAULTS.segmentFaultsEach, 0, 20], int: true },
  'default-tunables': { switch: true },
  'hot-spare': { switch: true },
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

/** The stack's tunables for a run: FAST_TUNABLES, or the defaults users get; videos spread over every slot. */
export function chaosTunables(o: ChaosOptions): Partial<Tunables> {
  // The router packs a slot up to videosPerSlot first: spread the videos so that every slot
  // has a worker to kill or freeze.
  const spread = { slotCount: o.slotCount, videosPerSlot: Math.max(1, Math.ceil((o.videos + o.segmentVideos) / o.slotCount)) };
  const base = o.defaultTunables ? spread : { ...FAST_TUNABLES, ...spread };
  return { ...base, hotSpare: o.hotSpare };
}

/** Messages (visible or in flight) in every DLQ of the stack: the ingest DLQ and each slot's. */
export async function dlqMessages(stack: LocalStack): Promise<Record<string, number>> {
  const queues = [{ name: 'ingest DLQ', url: stack.resources.ingestDlq.url }, ...stack.resources.slots.map((s) => ({ name: `slot ${s.slot} DLQ`, url: s.dlq.url }))];
  const out: Record<string, number> = {};
  for (const q of queues) {
    const r = await stack.clients.sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }));
    out[q.name] = Number(r.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(r.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0);
  }
  return out;
}

/** Runs one chaos run, prints as it goes, writes the JSON report; returns it. */
export async function runChaos(o: ChaosOptions, bench: Bench = createBench()) {
  const { say, clock } = bench;
  say(`chaos seed ${o.seed}  (replay: npx node bench/chaos.ts --seed ${o.seed})`);
  const stateDir = freshStateDir('chaos');
  const awsFaultLog = join(stateDir, 'aws-faults.log');
  // The plan is drawn before the stack starts (the crash frame's key and the planned in-doubt
  // windows go into the workers' environment), against the tunables the stack will validate.
  const tunables = chaosTunables(o);
  const t0 = { ...DEFAULT_TUNABLES, ...tunables };
  const planContext = {
    o,
    reorderWaitMs: t0.reorderWaitMs,
    slotLeaseMs: t0.slotLeaseTtlSeconds * 1000,
    redriveWindowMs: t0.slotQueueMaxReceiveCount * t0.slotQueueVisibilitySeconds * 1000,
  };
  // The segment videos are drawn on a sequence of their own: the JPEG videos' plan of a seed is as before.
  const plan = withSegments(makePlan(planContext), o.segmentVideos > 0 ? await makeSegmentPlan(planContext, o.videos) : undefined);
  const segmentOf = (videoId: string, frame: number) => plan.segments?.segments.get(videoId)?.get(frame);
  const keyOf = (u: PlannedUpload) => (u.segment ? segmentKey(u.videoId, u.frame, 'mpegts') : frameKey(u.videoId, u.frame));
  const doubtWindows = plan.uploads.filter((u) => u.frameFault === DOUBT_WINDOW_KIND).map((u) => ({ videoId: u.videoId, frame: u.frame, reads: DOUBT_WINDOW_READS }));
  const faultEnv =
    o.awsFaultRate > 0 || o.lostAnswerRate > 0 || o.laterGroupRate > 0 || doubtWindows.length > 0
      ? JSON.stringify({ rate: o.awsFaultRate, lostAnswerRate: o.lostAnswerRate, laterGroupRate: o.laterGroupRate, seed: o.seed, log: awsFaultLog, doubtWindows })
      : undefined;
  const doubt = doubtWatch(awsFaultLog);
  const crashKey = plan.crashFrame ? frameKey(plan.crashFrame.videoId, plan.crashFrame.frame) : undefined;
  // The watch must outlast an outage: no record is written while DynamoDB is down.
  const longestOutageMs = Math.max(0, ...plan.timedFaults.map((f) => f.detail.outageMs ?? 0));
  const quietMs = Math.max(o.quietMs, longestOutageMs + 30_000);
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
        // The janitor's period at the defaults is the users' (a minute); 1 s with FAST_TUNABLES.
        janitorIntervalMs: o.defaultTunables ? t0.janitorIntervalSeconds * 1000 : 1_000,
        janitorHandler,
        workerTailLines: 80,
        tunables,
        // With a hot spare the task's entry is the product's supervisor, which forks the lab's worker twice.
        ...(o.hotSpare ? { workerEntry: 'gpu-worker/supervisor-main.ts' } : {}),
        workerEnv: { FRAME_PROCESSOR: 'stats', ...(o.hotSpare ? { WORKER_ENTRY: 'lab/worker-main.ts' } : {}), ...(faultEnv ? { AWS_FAULT_INJECTION: faultEnv } : {}), ...(crashKey ? { WORKER_CRASH_ON_KEY: crashKey } : {}) },
        notificationFault: (key) => notificationFaults.get(key),
      }),
    ]);
    return await withStack(started, bench, async (stack) => {
      // Plan.
      const t = stack.tunables;
      notificationFaults = new Map(plan.uploads.filter((u) => u.notification).map((u) => [keyOf(u), u.notification!]));
      say(
        `${clock()}  stack up: ${o.videos} videos x ${o.frames} frames at ${o.fps} fps${o.segmentVideos > 0 ? ` + ${o.segmentVideos} videos in ${o.segmentSeconds}-s H.264 segments` : ''}, ${t.slotCount} slots, stats processor; ` +
          `lease ${t.slotLeaseTtlSeconds} s, reorderWaitMs ${t.reorderWaitMs}, slot-queue visibility ${t.slotQueueVisibilitySeconds} s; AWS fault rate ${o.awsFaultRate}`,
      );
      say(`${clock()}  planned: ${Object.entries(plannedCounts(plan)).map(([k, n]) => `${k} ${n}`).join(', ')}; ${plan.timedFaults.map((f) => `${f.kind} @${(f.atMs / 1000).toFixed(1)} s`).join(', ')}`);
      if (crashKey) say(`${clock()}  frame that crashes the worker: ${crashKey}`);

      // Uploads, with their frame faults.
      const applied: AppliedFault[] = [];
      const uploaded = new Map<string, Set<number>>(plan.videoIds.map((id) => [id, new Set<number>()]));
      const pending: Promise<unknown>[] = [];
      const afterLast = endMarkers(stack, plan.uploads, (videoId) => plan.segments?.lastFrame.get(videoId) ?? o.frames);
      const puts = new Map<string, number>();
      const plannedFrames = plan.uploads.reduce((n, u) => n + (u.segment?.frames ?? 1), 0);
      const uploads = runUploads(
        plan.uploads,
        o.uploaders,
        async (u) => {
          if (u.segment) {
            // A segment: its frames are uploaded with it.
            const seg = segmentOf(u.videoId, u.frame)!;
            await putPlannedSegment(stack, u, seg, t.reorderWaitMs, pending);
            for (let f = u.frame; f < u.frame + seg.frames; f++) uploaded.get(u.videoId)!.add(f);
            puts.set(u.videoId, (puts.get(u.videoId) ?? 0) + 1);
            await afterLast(u.videoId);
            return;
          }
          const fault = FRAME_FAULTS.find((k) => k.kind === u.frameFault);
          const key = frameKey(u.videoId, u.frame);
          // Put when its window opens (below), not by the uploader.
          if (fault?.kind === DOUBT_WINDOW_KIND) return;
          await putObject(stack, key, fault?.body?.(u, o.seed) ?? images[(u.frame * 7 + u.videoId.charCodeAt(u.videoId.length - 1)) % images.length]!, 'image/jpeg');
          uploaded.get(u.videoId)!.add(u.frame);
          if (fault?.afterPut) pending.push(fault.afterPut(stack, u, key));
          await afterLast(u.videoId);
        },
        bench.interrupted,
      );

      // Frames put into their video's in-doubt window: the worker's fault injection logs the
      // strike of the frame's gap commit, and the frame is put at once, while the reads that
      // would settle the commit still fail. Its video may lag far behind the uploads (an
      // outage, pauses): the frame waits for its gap for most of the run (DOUBT_WAIT_SHARE of
      // the timeout, at least DOUBT_WAIT_MS after its due time), then is put late all the
      // same (reported as skipped).
      for (const u of plan.uploads.filter((x) => x.frameFault === DOUBT_WINDOW_KIND)) {
        const key = frameKey(u.videoId, u.frame);
        pending.push(
          doubt.wait(u.videoId, u.frame, Math.max(u.dueMs + DOUBT_WAIT_MS, DOUBT_WAIT_SHARE * o.timeoutMs)).then(async (hit) => {
            await putObject(stack, key, images[u.frame % images.length]!, 'image/jpeg');
            uploaded.get(u.videoId)!.add(u.frame);
            applied.push({ kind: DOUBT_WINDOW_KIND, atS: (Date.now() - uploads.clockMs) / 1000, ...(hit ? {} : { skipped: 'its gap was never committed in time; uploaded late instead' }) });
            say(`${clock()}  >>> ${key} put ${hit ? "inside its video's in-doubt window" : 'late (no in-doubt window came)'}`);
            await afterLast(u.videoId);
          }),
        );
      }

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
        killed: new Set<number>(),
      };
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
        { everyMs: 1_000, quietMs, deadlineMs: bench.t0 + o.timeoutMs, interrupted: bench.interrupted },
        async () => {
          // During a DynamoDB outage every read fails (readSummaries gives undefined for a
          // failed read): a video's last summary stands, so progress does not read as 0.
          const read = await readSummaries(source, plan.videoIds);
          summaries = read.map((x, i) => x ?? summaries[i]);
          return { records: totalRecords(summaries), done: completeCount(summaries) === plan.videoIds.length };
        },
        (p) => {
          if (!tick()) return;
          const ws = stack.launcher.workers();
          say(
            `${clock()}  uploaded ${[...uploaded.values()].reduce((n, s) => n + s.size, 0)}/${plannedFrames} frames  records ${p.records}  complete ${completeCount(summaries)}/${plan.videoIds.length}  ` +
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
      // A segment's object covers its frames: S3 holds every frame of a segment whose key it lists.
      const left = (await collectVideos(stack, plan.videoIds)).map((v) => ({ ...v, inS3: coveredFrames(v.inS3, (n) => segmentOf(v.videoId, n)?.frames), uploaded: uploaded.get(v.videoId)! }));
      const dlqs = await dlqMessages(stack);
      // A video's end marker is put right after its last planned upload (an interrupted run may not get there).
      const planned = (videoId: string) => plan.uploads.filter((u) => u.videoId === videoId).length;
      const segmentsPut = (videoId: string) => new Set(plan.uploads.filter((u) => u.videoId === videoId && u.segment && uploaded.get(videoId)!.has(u.frame)).map((u) => u.frame));
      const invariants = checkInvariants(
        left.map((v) => {
          const segs = plan.segments?.segments.get(v.videoId);
          if (!segs) return { ...v, neverUploaded: neverUploaded(plan, v.videoId), endMarked: v.uploaded.size === planned(v.videoId) };
          const put = segmentsPut(v.videoId);
          return {
            ...v,
            neverUploaded: neverUploaded(plan, v.videoId),
            endMarked: (puts.get(v.videoId) ?? 0) === planned(v.videoId),
            segments: [...segs].filter(([first]) => put.has(first)).map(([first, s]) => ({ firstFrame: first, frames: s.frames, yields: s.yields, ...(s.decoded ? { decoded: s.decoded } : {}) })),
          };
        }),
        dlqs,
      );
      const finishedS = (finishedMs - uploads.clockMs) / 1000;
      return report({ o, plan, stack, outcome, finishedS, applied, janitor, awsFaultLog, left, invariants, dlqs }, bench);
    });
  } finally {
    if (savedFaultEnv === undefined) delete process.env.AWS_FAULT_INJECTION;
    else process.env.AWS_FAULT_INJECTION = savedFaultEnv;
  }
}

/** Frames S3 holds: an image's frame, or every frame of a segment whose first frame is listed (`framesOf` gives a segment's count). */
function coveredFrames(listed: ReadonlySet<number>, framesOf: (first: number) => number | undefined): Set<number> {
  const out = new Set<number>();
  for (const n of listed) for (let f = n; f < n + (framesOf(n) ?? 1); f++) out.add(f);
  return out;
}

/**
 * Watches the workers' fault log for the planned strikes of gap commits (`commit in doubt
 * (planned)`, with the video and frame): `wait` resolves true once its frame's window has
 * opened, or false `timeoutMs` after it was called.
 */
function doubtWatch(faultLog: string): { wait: (videoId: string, frame: number, timeoutMs: number) => Promise<boolean> } {
  return {
    wait: async (videoId, frame, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      const mark = `${COMMIT_FAULT_NAMES.doubt}\t${videoId}\t${frame}\n`;
      while (Date.now() < deadline) {
        if (existsSync(faultLog) && readFileSync(faultLog, 'utf8').includes(mark)) return true;
        await sleep(100);
      }
      return false;
    },
  };
}

if (import.meta.main) {
  const o = parseOptions(process.argv.slice(2));
  if (o) await benchMain('chaos', async (bench) => {
    const r = await runChaos(o, bench);
    return r.violations === 0 && r.outcome === 'complete' ? 0 : 1;
  });
}
