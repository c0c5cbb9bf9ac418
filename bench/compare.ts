/**
 * Side by side: seed 000's lock-and-skip design (bench/baseline/) vs. ours, on the same
 * local stack (DynamoDB Local + fauxqs), the same machine, the same `FrameProcessor` and
 * the same workload, in one run.
 *
 * Workload (both designs): `--videos` (8) synthetic videos with ground truth x `--frames`
 * frames, numbered from 1, uploaded interleaved like live cameras at a fixed total rate
 * (`--rate`, frames/s over all videos: frame f of video v is due at ((f-1)·V + v)/rate),
 * `--workers` (4) worker processes. Two scenarios per design: no fault, and `kill -9` of
 * the worker that last committed for the most videos when `--kill-at` (half) of the
 * uploads are done. A run ends when every uploaded frame has a record, or `--cap-s` after
 * the last upload (what is missing then counts as lost).
 *
 *  - Ours: the frames' S3 notifications go to the router, which pins videos to slots
 *    (`slotCount` = workers, `videosPerSlot` = videos / workers so every worker gets work,
 *    `firstFrameNumber` 1 since the clips start at 1); its workers are warmed up first.
 *  - Baseline: the uploader PUTs each frame (outside `frames/`, so our router never sees
 *    it) and sends the seed's message to the shared FIFO queue (group = video); 4 baseline
 *    workers (bench/baseline/worker.ts) long-poll it. The killed worker is replaced at once,
 *    as our janitor replaces ours.
 *
 * Measured per run: p50/p99 latency from the upload (PUT done, or PUT + send for the
 * baseline) to the record's `committedAtMs`; wasted receives (baseline: messages a worker
 * received and skipped for want of the lock; ours: frames forwarded to another slot or
 * dropped as duplicates, from the workers' EMF metrics); AWS calls per uploaded frame
 * and per recorded frame (every SDK call of router, janitor and workers through AWS_CALL_LOG,
 * plus the baseline producer's SendMessage; the user's PUTs and the emulated Lambda event source's own
 * receives are not counted); time from the first upload to the last frame's record;
 * frames lost (uploaded, no record, message gone), unfinished (no record, message still
 * queued at the cap) and doubled (baseline: committed more than once, from
 * the workers' event logs; ours: summary counts above the records); ID switches and IDF1
 * against ground truth (gpu-worker/vision/eval/mot.ts), and the failover stall (kill to
 * the first record of a killed worker's video by another worker; the longest over its videos).
 *
 *   npx node bench/compare.ts [--videos 8] [--frames 200] [--workers 4] [--rate 24] [--cap-s 90]
 *                             [--kill-at 0.5] [--seed 1] [--processor vision|stats] [--only baseline|ours]
 *
 * Prints one table and writes bench/results/compare.json. About 8 minutes at the defaults
 * (the 8 videos x 200 frames) on a 2-core machine; `--frames 60` takes about 5.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { endMarkerKey, frameKey } from '../core/ingest/keys.ts';
import type { LocalStack } from '../local/stack.ts';
import { BaselineFleet, createBaselineResources, readEvents, sendFrameMessage, SEED_SETTINGS, type BaselineResources } from './baseline/fleet.ts';
import { readSummaries, resultsSource, totalRecords } from './harness/collect.ts';
import { benchMain, commandLine, createBench, freshStateDir, machine, repoPath, RESULTS_DIR, sleep, writeResult, type Bench } from './harness/main.ts';
import { errorLines, startBenchStack } from './harness/stack.ts';
import { putObject, runUploads } from './harness/uploader.ts';
import { busiestFirst, every, killBusiest, stackWorkers, watchUntilSettled, type Kill } from './harness/watch.ts';
import { measureRun, printTable, runLine, type Design, type RunReport, type Scenario } from './compare/report.ts';
import { parseFlags, type Flag, type Parsed } from './harness/options.ts';
import { emfValues, makeSegmentedVideo, type SyntheticVideo } from './workload.ts';

/** The comparison's flags: default and range. */
const COMPARE_FLAGS = {
  videos: { num: [8, 1, 64], int: true },
  frames: { num: [200, 4, 10_000], int: true },
  workers: { num: [4, 2, 16], int: true },
  /** Frames per second over all videos. */
  rate: { num: [24, 0.5, 1000] },
  'cap-s': { num: [90, 5, 3_600] },
  'kill-at': { num: [0.5, 0.05, 0.95] },
  seed: { num: [1, 0, 2 ** 31], int: true },
  processor: { choice: ['vision', 'stats'], fallback: 'vision' },
  uploaders: { num: [4, 1, 64], int: true },
  only: { choice: ['baseline', 'ours'] },
  'baseline-visibility-s': { num: [SEED_SETTINGS.visibilitySeconds, 0, 43_200], int: true },
  out: { text: join(RESULTS_DIR, 'compare.json') },
} as const satisfies Record<string, Flag>;

/** What one comparison does. */
export type CompareOptions = Omit<Parsed<typeof COMPARE_FLAGS>, 'capS' | 'baselineVisibilityS'> & { capMs: number; baselineVisibilitySeconds: number };

/** Options from the command line; undefined after `--help`. */
export function parseCompareOptions(args: readonly string[]): CompareOptions | undefined {
  const f = parseFlags('compare.ts', COMPARE_FLAGS, args);
  if (!f) return undefined;
  const { capS, baselineVisibilityS, ...rest } = f;
  return { ...rest, capMs: capS * 1000, baselineVisibilitySeconds: baselineVisibilityS };
}

/** Our workers' wasted receives, from their EMF lines (summed while `counting`). */
const WASTE_METRICS = ['FramesForwarded', 'FramesDuplicate'] as const;

/** Runs both designs in both scenarios, prints the table, writes the JSON; returns the runs. */
export async function runCompare(opts: CompareOptions, bench: Bench = createBench(), args: readonly string[] = []): Promise<{ reports: RunReport[]; failed: boolean }> {
  const { say, clock } = bench;
  const stateDir = freshStateDir('compare');
  const callLog: Record<Design, string> = { ours: join(stateDir, 'calls-ours.log'), baseline: join(stateDir, 'calls-baseline.log') };
  const eventsFile = join(stateDir, 'baseline-events.jsonl');
  // The router and janitor run in this process and build their clients from process.env.
  process.env.AWS_CALL_LOG = callLog.ours;
  const oursWaste = { counting: false, FramesForwarded: 0, FramesDuplicate: 0 };
  const workerErrors: string[] = [];
  say(
    `compare: ${opts.videos} videos x ${opts.frames} frames at ${opts.rate} frames/s in total, ${opts.workers} workers, processor ${opts.processor}, ` +
      `cap ${opts.capMs / 1000} s after the last upload; generating clips and starting the local stack...`,
  );
  const [videos, started] = await Promise.all([
    Promise.all(Array.from({ length: opts.videos }, (_, i) => makeSegmentedVideo(opts.seed, i, opts.frames))),
    startBenchStack({
      stateDir,
      tunables: { slotCount: opts.workers, videosPerSlot: Math.max(1, Math.ceil(opts.videos / opts.workers)), firstFrameNumber: 1 },
      workerEnv: { FRAME_PROCESSOR: opts.processor, AWS_CALL_LOG: callLog.ours, METRICS_FLUSH_INTERVAL_MS: '1000' },
      onWorkerLine: (line) => {
        if (!oursWaste.counting) return;
        const v = emfValues(line, WASTE_METRICS);
        for (const n of WASTE_METRICS) oursWaste[n] += v[n] ?? 0;
      },
    }),
  ]);
  const stack = started.stack;
  let baseline: { resources: BaselineResources; fleet: BaselineFleet } | undefined;
  const reports: RunReport[] = [];
  let failed = false;
  const one = (design: Design, scenario: Scenario) =>
    runOne({ opts, bench, stack, videos, design, scenario, baseline, callLog: callLog[design], eventsFile, oursWaste, workerErrors });
  try {
    if (opts.only !== 'baseline') {
      await warmUpOurs(stack, opts, videos[0]!, bench);
      for (const scenario of ['calm', 'kill'] as const) reports.push(await one('ours', scenario));
    }
    if (opts.only !== 'ours') {
      // A fresh queue, tables and fleet per run: what one run leaves in its queue (the
      // baseline seldom finishes before the cap) must not compete with the next run.
      for (const scenario of ['calm', 'kill'] as const) {
        say(`${clock()}  baseline: creating its FIFO queue and tables, starting ${opts.workers} workers...`);
        const resources = await createBaselineResources(stack, opts.baselineVisibilitySeconds, `-${scenario}`);
        const fleet = new BaselineFleet({
          stack,
          resources,
          workers: opts.workers,
          eventsFile,
          callLog: callLog.baseline,
          env: { FRAME_PROCESSOR: opts.processor },
          onLine: (line) => {
            if (/error|fail/i.test(line)) workerErrors.push(line);
          },
        });
        baseline = { resources, fleet };
        await fleet.start();
        reports.push(await one('baseline', scenario));
        await fleet.stop();
      }
    }
  } catch (e) {
    failed = true;
    say(`compare failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    if (reports.length === 0) throw e;
  } finally {
    say(`${clock()}  stopping...`);
    await baseline?.fleet.stop();
    await stack.stop();
  }

  printTable(reports, say);
  writeResult(
    opts.out,
    {
      command: commandLine('compare.ts', args),
      date: new Date().toISOString(),
      machine: machine(),
      options: { ...opts, out: repoPath(opts.out) },
      tunables: stack.tunables,
      baselineSettings: { ...SEED_SETTINGS, visibilitySeconds: opts.baselineVisibilitySeconds },
      notes: [
        'Indicative: a 2-core machine shared with other work; fauxqs hands out at most one message per FIFO group per receive (SQS: up to 10).',
        "Wasted receives: baseline = messages received by a worker that could not lock their video (left to reappear after the visibility timeout); ours = frames forwarded to the slot their video is pinned to, plus redelivered or duplicate frames dropped (workers' EMF metrics).",
        "AWS calls: every SDK call of router, janitor and workers (AWS_CALL_LOG), plus the baseline producer's SendMessage per frame; uploads (PUT) and the emulated Lambda event source are not counted. fauxqs returns a FIFO long poll early and empty when a send wakes it for a blocked group; the baseline's such receives are replaced by the 20-s long polls SQS would have held (awsCallsRaw: as logged).",
        'Frames lost: uploaded frames without a record when the run ended whose message is no longer queued; frames unfinished: without a record, message still in the queue when the cap (after the last upload) came.',
      ],
      runs: reports,
      errorsSeen: [...errorLines(started.stackLines), ...workerErrors].slice(0, 20),
      runtimeS: (Date.now() - bench.t0) / 1000,
    },
    say,
  );
  return { reports, failed };
}

/** Starts our workers (one per slot) with one-frame videos, so no run pays for process start and model load. */
async function warmUpOurs(stack: LocalStack, opts: CompareOptions, video: SyntheticVideo, bench: Bench): Promise<void> {
  bench.say(`${bench.clock()}  ours: warming up ${opts.workers} workers...`);
  const ids = Array.from({ length: opts.workers * stack.tunables.videosPerSlot }, (_, i) => `warmup-${i}`);
  for (const id of ids) {
    await putObject(stack, frameKey(id, 1), video.images.get(1)!);
    await putObject(stack, endMarkerKey(id), '1');
  }
  const until = Date.now() + 180_000;
  while (!(await readSummaries(resultsSource(stack), ids)).every((x) => x?.status === 'complete')) {
    if (Date.now() > until) throw new Error('warm-up: our workers did not complete one frame per video in 180 s');
    await sleep(500);
  }
  bench.say(`${bench.clock()}  ours: ${stack.launcher.workers().filter((w) => w.alive).length} workers up`);
}

/** One design in one scenario: plan -> (kill) -> report. */
async function runOne(c: {
  opts: CompareOptions;
  bench: Bench;
  stack: LocalStack;
  videos: readonly SyntheticVideo[];
  design: Design;
  scenario: Scenario;
  baseline: { resources: BaselineResources; fleet: BaselineFleet } | undefined;
  callLog: string;
  eventsFile: string;
  oursWaste: { counting: boolean; FramesForwarded: number; FramesDuplicate: number };
  workerErrors: string[];
}): Promise<RunReport> {
  const { opts, bench, stack, design, scenario, baseline, oursWaste } = c;
  const { say, clock } = bench;
  // Plan: frame f of video v is due at ((f-1)·V + v)/rate, interleaved like live cameras.
  const videoIds = Array.from({ length: opts.videos }, (_, i) => `${design === 'ours' ? 'ours' : 'base'}-${scenario}-${String(i + 1).padStart(2, '0')}`);
  const total = opts.videos * opts.frames;
  const plan = Array.from({ length: total }, (_, k) => ({ v: k % opts.videos, videoId: videoIds[k % opts.videos]!, frame: Math.floor(k / opts.videos) + 1, dueMs: (k * 1000) / opts.rate }));
  const source = resultsSource(stack, design === 'ours' ? stack.wiring.resultsTable : baseline!.resources.resultsTable);
  writeFileSync(c.callLog, '');
  if (design === 'baseline') writeFileSync(c.eventsFile, '');
  oursWaste.FramesForwarded = 0;
  oursWaste.FramesDuplicate = 0;
  oursWaste.counting = design === 'ours';
  let producerSends = 0;
  say(`${clock()}  ${design} / ${scenario === 'kill' ? 'kill -9 at the midpoint' : 'no fault'}: ${total} uploads over ${(total / opts.rate).toFixed(0)} s...`);

  const putDone = new Map<string, number>();
  const uploads = runUploads(plan, opts.uploaders, async (u) => {
    const image = c.videos[u.v]!.images.get(u.frame)!;
    if (design === 'ours') {
      await putObject(stack, frameKey(u.videoId, u.frame), image, 'image/jpeg');
      putDone.set(`${u.videoId}:${u.frame}`, Date.now());
      if (u.frame === opts.frames) await putObject(stack, endMarkerKey(u.videoId), String(opts.frames));
      return;
    }
    // Outside `frames/`: our router is not notified of the baseline's frames.
    const key = `baseline/${u.videoId}/${String(u.frame).padStart(6, '0')}.jpg`;
    await putObject(stack, key, image, 'image/jpeg');
    putDone.set(`${u.videoId}:${u.frame}`, Date.now());
    await sendFrameMessage(stack, baseline!.resources.queueUrl, { videoId: u.videoId, frame: u.frame, bucket: stack.wiring.bucket, key });
    producerSends++;
  }, bench.interrupted);

  // Fault: once killAt of the uploads are done, SIGKILL the worker that last committed for the most videos.
  const events = () => readEvents(c.eventsFile);
  const target =
    design === 'ours'
      ? stackWorkers(stack)
      : {
          find: (workerId: string) => baseline!.fleet.workers.find((x) => x.alive && x.workerId === workerId),
          kill: (pid: number) => {
            baseline!.fleet.kill(pid, 'SIGKILL');
            // As an auto-scaling group (or our janitor) would: a replacement at once.
            void baseline!.fleet.spawnOne().catch((e: unknown) => c.workerErrors.push(`baseline replacement: ${String(e)}`));
          },
        };
  let kill: Kill | undefined;
  const tick = every(10_000);
  const { outcome } = await watchUntilSettled(
    uploads,
    { everyMs: 500, capAfterUploadsMs: opts.capMs, interrupted: bench.interrupted },
    async () => {
      if (design === 'ours') {
        const summaries = await readSummaries(source, videoIds);
        const records = totalRecords(summaries);
        return { records, done: records >= total, summaries };
      }
      const records = new Set(events().filter((e) => e.e === 'commit').map((e) => `${e.v}:${e.f}`)).size;
      return { records, done: records >= total, summaries: [] };
    },
    (p) => {
      if (scenario === 'kill' && !kill && putDone.size >= total * opts.killAt) {
        // Which worker committed each video's latest frame so far.
        const held = new Map<string, string[]>();
        const hold = (v: string, w: string) => held.set(w, [...(held.get(w) ?? []), v]);
        if (design === 'ours') for (const s of p.summaries) if (s?.worker && s.status !== 'complete') hold(s.videoId, s.worker);
        if (design === 'baseline') {
          const owners = new Map<string, string>();
          for (const e of events()) if (e.e === 'commit' && e.v) owners.set(e.v, e.w);
          for (const [v, w] of owners) hold(v, w);
        }
        kill = killBusiest(busiestFirst(held), target);
        if (kill) say(`${clock()}  >>> SIGKILL ${kill.workerId}, last to commit for ${kill.videos.join(', ')}, at ${putDone.size}/${total} uploads, ${p.records} records`);
      }
      if (tick()) say(`${clock()}  uploaded ${putDone.size}/${total}  recorded ${p.records}`);
    },
  );
  const endMs = Date.now();
  await uploads.finished;
  // Let the last EMF flush (1 s) and event lines land.
  await sleep(1_500);
  oursWaste.counting = false;

  const report = await measureRun({
    stack, design, scenario, frames: opts.frames, videoIds, videos: c.videos, source, putDone, uploadClock: uploads.clockMs, uploadsDoneMs: uploads.doneMs(), endMs,
    outcome: outcome === 'complete' ? 'complete' : 'cap', kill, events: design === 'baseline' ? events() : [], callLog: c.callLog, producerSends, oursWaste,
    ...(baseline ? { baselineQueueUrl: baseline.resources.queueUrl } : {}),
  });
  say(`${clock()}  ${runLine(report, total)}`);
  return report;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const opts = parseCompareOptions(args);
  if (opts) await benchMain('compare', async (bench) => ((await runCompare(opts, bench, args)).failed ? 1 : 0));
}
