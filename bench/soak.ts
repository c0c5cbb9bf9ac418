/**
 * Soak with a hostile uploader, on the local stack (DynamoDB Local + fauxqs, router,
 * janitor, real worker processes), default tunables.
 *
 * Scenario (all draws seeded, so a run is reproducible up to timing):
 *  - N videos x F frames (default 8 x 300) of synthetic clips with ground truth, numbered
 *    from 1 like ffmpeg output (`000001.jpg` ...), default `firstFrameNumber` (automatic
 *    start). Each video is made of segments of {@link SEGMENT_FRAMES} frames from
 *    different clip seeds (a scene cut between them), so objects stay in view for the
 *    whole video; ground-truth IDs are distinct per segment.
 *  - Each video produces frames at `--fps` (default 10), videos staggered a little. A
 *    pool of `--uploaders` (default 8) parallel uploaders PUTs them through the S3 API,
 *    each frame delayed by a log-normal draw with median `--delay-p50-ms` and p99 at
 *    4 x reorderWaitMs (a heavy tail: a few frames come much later than the wait).
 *  - 1% of frames are never uploaded (never frame 1, which would just move the start);
 *    1% of the uploaded frames get a duplicated notification (local/s3-notifications.ts
 *    fault hook), the second copy 0 to 2 x reorderWaitMs after the first; `--strays`
 *    (default 4) frames are uploaded 40-60 frames ahead of their video's stream.
 *  - One worker (the one holding most videos) is killed with SIGKILL when half of the
 *    planned frames have a record (`--kill-at 0.5`; 0 = no kill).
 *  - After a video's last upload its `_end` marker is put (body: the last frame number,
 *    F, even when frame F was one of the never-uploaded ones). The run waits until every
 *    video's summary is `complete`, or nothing changed for `--quiet-s`, or `--timeout-s`.
 *
 * Measured:
 *  - records by status (ok, late, gap, failed) per video and in total, vs. frames uploaded;
 *  - frames that exist in S3 (a LIST at the end) but ended `gap` (target 0); uploaded
 *    frames with no record (target 0); never-uploaded frames that ended other than `gap`;
 *  - latency from upload (PUT completed, this process's clock) to the record's
 *    `committedAtMs` (worker's clock; same machine; stamped when the round that wrote
 *    the record began, so one round short of the landing) for `ok` frames: p50 / p99 / max;
 *  - tracking against ground truth (gpu-worker/vision `evaluateMot`): IDF1, MOTA, ID
 *    switches, with `ok` and `late` detections (a late detection with trackId 0, i.e. no
 *    track associated, is left out and counted); ground truth restricted to uploaded
 *    frames. Also ID switches over `ok` frames only;
 *  - the largest video lease item seen (`video#<id>` in the leases table, polled every
 *    `--poll-ms`): DynamoDB's item size by its documented rules (attribute names + values,
 *    3 bytes per list/map + 1 per element), and the checkpoint attribute's JSON length;
 *  - uploaded vs. committed over time (from the summaries' counts), so a latency figure
 *    can be told apart from a backlog; the uploader pool's lag behind its plan;
 *  - with the vision processor, a baseline after the run: the same uploaded frames in order
 *    through one in-process VisionProcessor (no pipeline, no faults), so the soak's ID
 *    switches can be set against the tracker's own (`--no-baseline` skips it).
 *
 *   npx node bench/soak.ts [--videos 8] [--frames 300] [--seed 1] [--processor vision|stats] [--fps 10]
 *
 * Prints a table and writes bench/results/soak.json.
 */
import { join } from 'node:path';
import { frameKey } from '../core/ingest/keys.ts';
import { table } from '../cli/format.ts';
import { collectVideos, completeCount, countBy, readSummaries, resultsSource, totalRecords } from './harness/collect.ts';
import { benchMain, commandLine, createBench, freshStateDir, machine, repoPath, RESULTS_DIR, sleep, writeResult, type Bench } from './harness/main.ts';
import { errorLines, startBenchStack, withStack } from './harness/stack.ts';
import { endMarkers, putObject, runUploads } from './harness/uploader.ts';
import { every, killBusiest, ownersBySummary, stackWorkers, watchUntilSettled, type Kill } from './harness/watch.ts';
import { pollLeaseItems } from './soak/lease-items.ts';
import { makePlan } from './soak/plan.ts';
import { parseFlags, type Flag, type Parsed } from './harness/options.ts';
import { frameId, spread, totalsOf, trackingBaseline, videoReport } from './soak/report.ts';
import { ms, percentile } from './support.ts';
import { makeSegmentedVideo } from './workload.ts';

/** The soak's flags: default and range. */
const SOAK_FLAGS = {
  videos: { num: [8, 1, 64], int: true },
  frames: { num: [300, 20, 100_000], int: true },
  seed: { num: [1, 0, 2 ** 31], int: true },
  processor: { choice: ['vision', 'stats'], fallback: 'vision' },
  fps: { num: [10, 0.1, 1000] },
  uploaders: { num: [8, 1, 256], int: true },
  'delay-p50-ms': { num: [200, 1, 600_000] },
  'max-delay-ms': { num: [120_000, 1, 3_600_000] },
  'lost-share': { num: [0.01, 0, 0.5] },
  'duplicate-share': { num: [0.01, 0, 1] },
  strays: { num: [4, 0, 1000], int: true },
  'kill-at': { num: [0.5, 0, 1] },
  'timeout-s': { num: [900, 10, 86_400] },
  'quiet-s': { num: [90, 5, 86_400] },
  'poll-ms': { num: [500, 50, 60_000] },
  'no-baseline': { switch: true },
  out: { text: join(RESULTS_DIR, 'soak.json') },
} as const satisfies Record<string, Flag>;

/** What one soak run does (`killAt`: share of the planned frames with a record at which the busiest worker is killed, 0 for none). */
export type SoakOptions = Omit<Parsed<typeof SOAK_FLAGS>, 'timeoutS' | 'quietS' | 'noBaseline'> & { timeoutMs: number; quietMs: number; baseline: boolean };

/** Options from the command line; undefined after `--help`. */
export function parseSoakOptions(args: readonly string[]): SoakOptions | undefined {
  const f = parseFlags('soak.ts', SOAK_FLAGS, args);
  if (!f) return undefined;
  const { timeoutS, quietS, noBaseline, ...rest } = f;
  return { ...rest, timeoutMs: timeoutS * 1000, quietMs: quietS * 1000, baseline: !noBaseline };
}

/** Runs one soak, prints as it goes, writes the JSON; returns it and whether the run settled. */
export async function runSoak(opts: SoakOptions, bench: Bench = createBench(), args: readonly string[] = []) {
  const { say, clock } = bench;
  let dupOf = new Map<string, number>();
  say(`soak: ${opts.videos} videos x ${opts.frames} frames, processor ${opts.processor}, seed ${opts.seed}; generating clips and starting the local stack...`);
  const [videos, started] = await Promise.all([
    Promise.all(Array.from({ length: opts.videos }, (_, i) => makeSegmentedVideo(opts.seed, i, opts.frames))),
    startBenchStack({
      stateDir: freshStateDir('soak'),
      workerEnv: { FRAME_PROCESSOR: opts.processor },
      // Decided per key from the plan (filled in below, before any frame is uploaded).
      notificationFault: (key) => {
        const afterMs = dupOf.get(key);
        return afterMs !== undefined ? { kind: 'duplicate', afterMs } : undefined;
      },
    }),
  ]);
  const run = await withStack(started, bench, async (stack) => {
    // Plan.
    const t = stack.tunables;
    const plan = makePlan(opts, t.reorderWaitMs);
    dupOf = new Map(plan.uploads.filter((u) => u.duplicateAfterMs !== undefined).map((u) => [frameKey(u.videoId, u.frame), u.duplicateAfterMs!]));
    const plannedDelays = plan.uploads.filter((u) => !u.stray).map((u) => u.delayMs);
    say(
      `${clock()}  stack up; tunables: reorderWaitMs ${t.reorderWaitMs}, firstFrameNumber ${t.firstFrameNumber}, slotCount ${t.slotCount}, ` +
        `videosPerSlot ${t.videosPerSlot}, slot lease ${t.slotLeaseTtlSeconds} s, slot-queue visibility ${t.slotQueueVisibilitySeconds} s`,
    );
    say(
      `${clock()}  plan: ${plan.uploads.length} uploads (${[...plan.lost.values()].reduce((n, l) => n + l.length, 0)} frames never uploaded, ` +
        `${dupOf.size} duplicated notifications, ${plan.uploads.filter((u) => u.stray).length} strays 40-60 frames ahead), ${opts.uploaders} uploaders, ` +
        `${opts.fps} fps per video; delay log-normal median ${opts.delayP50Ms} ms sigma ${plan.sigma.toFixed(2)} (p99 target ${4 * t.reorderWaitMs} ms): ` +
        `drawn p50 ${ms(percentile(plannedDelays, 50))} p99 ${ms(percentile(plannedDelays, 99))} max ${ms(Math.max(...plannedDelays))}`,
    );

    // Uploads.
    const putDoneMs = new Map<string, number>();
    const actualDelays: number[] = [];
    /** PUT done - due: how far the uploader pool (and the emulator behind it) fell behind the plan. */
    const uploaderLag: number[] = [];
    const endPutMs = new Map<string, number>();
    const afterLast = endMarkers(stack, plan.uploads, opts.frames, (id) => endPutMs.set(id, Date.now()));
    const uploads = runUploads(
      plan.uploads,
      opts.uploaders,
      async (u) => {
        await putObject(stack, frameKey(u.videoId, u.frame), videos[plan.videoIds.indexOf(u.videoId)]!.images.get(u.frame)!, 'image/jpeg');
        const done = Date.now();
        putDoneMs.set(frameId(u.videoId, u.frame), done);
        if (!u.stray) actualDelays.push(done - uploads.clockMs - u.producedMs);
        uploaderLag.push(done - uploads.clockMs - u.dueMs);
        await afterLast(u.videoId);
      },
      bench.interrupted,
    );
    const leaseItems = pollLeaseItems(stack, plan.videoIds, opts.pollMs, uploads.clockMs, uploads.stopped);

    // Fault: kill the busiest worker once killAt of the planned frames have a record.
    const source = resultsSource(stack);
    const expected = plan.uploads.length;
    let kill: (Kill & { atRecords: number }) | undefined;
    /** Uploaded vs. committed over time: the backlog behind the latency figures. */
    const timeline: { atS: number; uploaded: number; records: number }[] = [];
    let complete = 0;
    const tick = every(5_000);
    const { outcome, finishedMs } = await watchUntilSettled(
      uploads,
      { everyMs: 1_000, quietMs: opts.quietMs, deadlineMs: bench.t0 + opts.timeoutMs, interrupted: bench.interrupted },
      async () => {
        const summaries = await readSummaries(source, plan.videoIds);
        complete = completeCount(summaries);
        return { records: totalRecords(summaries), done: complete === plan.videoIds.length, summaries };
      },
      (p) => {
        timeline.push({ atS: Math.round((Date.now() - uploads.clockMs) / 100) / 10, uploaded: putDoneMs.size, records: p.records });
        if (tick()) {
          const n = stack.notifier.counts;
          say(
            `${clock()}  uploaded ${putDoneMs.size}/${expected}  records ${p.records}  complete ${complete}/${plan.videoIds.length}  ` +
              `workers alive ${stack.launcher.workers().filter((w) => w.alive).length}  notifications sent ${n.sent} (duplicated ${n.duplicated})`,
          );
        }
        if (kill || opts.killAt <= 0 || p.records < expected * opts.killAt) return;
        const k = killBusiest(ownersBySummary(p.summaries), stackWorkers(stack));
        if (!k) return;
        kill = { ...k, atRecords: p.records };
        say(`${clock()}  >>> SIGKILL worker ${k.workerId} (slot ${k.slot}, pid ${k.pid}) holding ${k.videos.join(', ')} at ${p.records}/${expected} records`);
      },
    );
    // On a timeout, uploads may still be waiting for their due time: stop them.
    if (outcome === 'timeout') uploads.stop();
    say(`${clock()}  ${outcome} (${complete} of ${plan.videoIds.length} videos complete); waiting for delayed duplicate notifications...`);
    // Second copies of duplicated notifications may still be due: let them arrive and be
    // handled (they must change nothing), bounded.
    await Promise.race([stack.notifier.flush({ delayed: true }), sleep(2 * t.reorderWaitMs + 1_000)]);
    await sleep(Math.min(10_000, 2 * t.reorderWaitMs));
    await leaseItems.stop();
    await uploads.finished;

    // Report.
    const left = await collectVideos(stack, plan.videoIds);
    const perVideo = left.map((v, i) => videoReport(opts, plan, videos[i]!, v, putDoneMs, kill));
    const reasons = countBy(left.flatMap((v) => v.records.filter((r) => String(r.status) === 'failed')), (r) => r.reason ?? '?');
    return { reasons, stackErrors: errorLines(started.stackLines), plan, putDoneMs, actualDelays, uploaderLag, endPutMs, uploads, outcome, finishedMs, kill, timeline, biggest: leaseItems.biggest, perVideo, tunables: t, notifications: stack.notifier.counts };
  });
  const { plan, perVideo, uploads, kill, timeline, biggest } = run;
  const uploadClock = uploads.clockMs;
  const uploadsDoneMs = uploads.doneMs();
  const t = run.tunables;
  const totals = totalsOf(perVideo);
  const idf1Mean = perVideo.reduce((n, v) => n + v.tracking.idf1, 0) / perVideo.length;
  const allOk = perVideo.flatMap((v) => v.okLatency);
  const allLate = perVideo.flatMap((v) => v.lateLatency);
  const latencyOk = spread(allOk);
  const latencyLate = { p50: percentile(allLate, 50), p99: percentile(allLate, 99) };
  const lag = spread(run.uploaderLag);
  const realised = spread(run.actualDelays);
  const plannedDelays = plan.uploads.filter((u) => !u.stray).map((u) => u.delayMs);

  // The stats processor detects nothing, so tracking is only scored for vision.
  const tracked = opts.processor === 'vision';
  say('');
  say(`outcome: ${run.outcome} ${((run.finishedMs - uploadClock) / 1000).toFixed(1)} s after the first upload (uploads took ${uploadsDoneMs ? ((uploadsDoneMs - uploadClock) / 1000).toFixed(1) : '-'} s); processor ${opts.processor}`);
  say(
    `upload delay (produced -> PUT done, strays excluded): planned p50 ${ms(percentile(plannedDelays, 50))} p99 ${ms(percentile(plannedDelays, 99))}; ` +
      `realised p50 ${ms(realised.p50)} p99 ${ms(realised.p99)} max ${ms(realised.max)} (target p99 ${4 * t.reorderWaitMs} ms = 4 x reorderWaitMs)`,
  );
  say(`uploader lag behind the plan (PUT done - due): p50 ${ms(lag.p50)} p99 ${ms(lag.p99)} max ${ms(lag.max)}${lag.p50 > 1000 ? '  <- the machine could not keep up with the plan: delays above are not the planned ones' : ''}`);
  const backlog = timeline.reduce((m, p) => (p.uploaded - p.records > m.frames ? { frames: p.uploaded - p.records, atS: p.atS } : m), { frames: 0, atS: 0 });
  const commitSpanS = timeline.length ? (timeline.find((p) => p.records >= totals.records)?.atS ?? timeline.at(-1)!.atS) - (timeline.find((p) => p.records > 0)?.atS ?? 0) : 0;
  say(
    `backlog (frames uploaded, not yet recorded): max ${backlog.frames} at ${backlog.atS.toFixed(0)} s; records committed at ${commitSpanS > 0 ? (totals.records / commitSpanS).toFixed(1) : '-'} frames/s ` +
      `from the first to the last (cameras produce ${opts.fps * opts.videos} frames/s)`,
  );
  say(kill ? `kill: SIGKILL ${kill.workerId} (slot ${kill.slot}) at ${((kill.atMs - uploadClock) / 1000).toFixed(1)} s, holding ${kill.videos.join(', ')}` : 'kill: none');
  say('');
  const row = (v: (typeof perVideo)[number]) => [
    v.videoId, v.uploaded, v.neverUploaded, v.records, v.status.ok, v.status.late, v.status.gap, v.status.failed, v.existsButGap.length, v.uploadedNoRecord.length, v.neverUploadedNotGap.length,
    ms(v.latencyOkMs.p50), ms(v.latencyOkMs.p99), tracked ? v.tracking.idf1.toFixed(3) : '-', tracked ? v.tracking.idSwitches : '-', tracked ? v.tracking.idSwitchesOkOnly : '-',
    v.summary?.ownerChanges ?? '-', v.failoverSeconds !== null ? `${v.failoverSeconds.toFixed(1)} s` : '-', v.summary?.status ?? '-',
  ];
  const totalRow = [
    'total', totals.uploaded, totals.neverUploaded, totals.records, totals.ok, totals.late, totals.gap, totals.failed, totals.existsButGap, totals.uploadedNoRecord, totals.neverUploadedNotGap,
    ms(latencyOk.p50), ms(latencyOk.p99), tracked ? idf1Mean.toFixed(3) : '-', tracked ? totals.idSwitches : '-', tracked ? totals.idSwitchesOkOnly : '-', '', '', `${totals.complete}/${perVideo.length} complete`,
  ];
  const header = ['video', 'uploaded', 'lost', 'records', 'ok', 'late', 'gap', 'failed', 'S3 but gap', 'no record', 'lost not gap', 'ok p50', 'ok p99', 'IDF1', 'IDSW', 'IDSW ok-only', 'owners', 'failover', 'summary'];
  for (const line of table(header, [...perVideo.map(row), totalRow])) say(`  ${line}`);
  say('');
  const problems = perVideo.flatMap((v) => [
    ...(v.existsButGap.length ? [`${v.videoId}: in S3 but gap: ${v.existsButGap.join(', ')}`] : []),
    ...(v.uploadedNoRecord.length ? [`${v.videoId}: uploaded, no record: ${v.uploadedNoRecord.join(', ')}`] : []),
    ...(v.neverUploadedNotGap.length ? [`${v.videoId}: never uploaded, not gap: ${v.neverUploadedNotGap.join(', ')}`] : []),
    ...(v.unexpectedFrames.length ? [`${v.videoId}: records outside 1..${opts.frames}: ${v.unexpectedFrames.join(', ')}`] : []),
  ]);
  say(`frames in S3 that ended gap: ${totals.existsButGap} (target 0); uploaded frames with no record: ${totals.uploadedNoRecord} (target 0); never-uploaded frames not gap: ${totals.neverUploadedNotGap} (expect 0)`);
  for (const p of problems.slice(0, 40)) say(`  ${p}`);
  if (problems.length > 40) say(`  ... ${problems.length - 40} more lines in the JSON`);
  say(`latency upload -> commit: ok p50 ${ms(latencyOk.p50)} p99 ${ms(latencyOk.p99)} max ${ms(latencyOk.max)} (${allOk.length} frames); late p50 ${ms(latencyLate.p50)} p99 ${ms(latencyLate.p99)} (${allLate.length} frames)`);
  say(`strays: ${perVideo.flatMap((v) => v.strays.map((s) => `${v.videoId}/${s.frame} (+${s.aheadBy}) ${s.status}`)).join(', ') || 'none'}`);
  if (Object.keys(run.reasons).length) say(`failed reasons: ${Object.entries(run.reasons).map(([r, n]) => `${r} ${n}`).join(', ')}`);
  say(
    `largest video lease item: ${biggest.itemBytes} bytes (DynamoDB item size rules) on ${biggest.itemVideo || '-'} at ${biggest.atS.toFixed(1)} s; ` +
      `largest checkpoint attribute: ${biggest.checkpointJsonBytes} bytes as JSON on ${biggest.checkpointVideo || '-'} (${biggest.samples} samples, every ${opts.pollMs} ms)`,
  );
  const n = run.notifications;
  say(`notifications: events ${n.events}, sent ${n.sent}, duplicated ${n.duplicated}, dropped ${n.dropped}, failed ${n.failed}`);
  if (run.stackErrors.length) {
    say(`stack log lines mentioning errors: ${run.stackErrors.length}; first:`);
    for (const l of run.stackErrors.slice(0, 5)) say(`  ${l.slice(0, 300)}`);
  }

  const out: Record<string, unknown> = {
    command: commandLine('soak.ts', args),
    date: new Date().toISOString(),
    machine: machine(),
    processor: opts.processor,
    options: { ...opts, out: repoPath(opts.out) },
    tunables: t,
    outcome: run.outcome,
    runtimeS: (Date.now() - bench.t0) / 1000,
    firstUploadToOutcomeS: (run.finishedMs - uploadClock) / 1000,
    uploadsS: uploadsDoneMs ? (uploadsDoneMs - uploadClock) / 1000 : null,
    uploadDelayMs: {
      distribution: `log-normal, median ${opts.delayP50Ms} ms, sigma ${plan.sigma.toFixed(3)} (p99 = 4 x reorderWaitMs)`,
      planned: { p50: percentile(plannedDelays, 50), p99: percentile(plannedDelays, 99), max: Math.max(...plannedDelays) },
      realised,
      uploaderLag: lag,
    },
    kill: kill ? { ...kill, atS: (kill.atMs - uploadClock) / 1000 } : null,
    backlog: { maxFrames: backlog.frames, atS: backlog.atS, commitRatePerS: commitSpanS > 0 ? totals.records / commitSpanS : null },
    timeline,
    totals,
    idf1Mean,
    latencyOkMs: latencyOk,
    latencyLateMs: latencyLate,
    largestLeaseItem: {
      ...biggest,
      itemBytesMethod: 'DynamoDB item size rules (attribute names + values; numbers 1 byte per 2 significant digits + 1; list/map 3 bytes + 1 per element)',
      pollMs: opts.pollMs,
    },
    notifications: n,
    failedReasons: run.reasons,
    videos: perVideo.map(({ okLatency: _ok, lateLatency: _late, ...v }) => ({ ...v, endMarkerPutS: run.endPutMs.has(v.videoId) ? (run.endPutMs.get(v.videoId)! - uploadClock) / 1000 : null })),
  };
  if (tracked && opts.baseline) {
    say(`${clock()}  baseline: the same uploaded frames in order through one in-process VisionProcessor (no pipeline, no faults)...`);
    const rows = await trackingBaseline(t, videos, plan.videoIds, run.putDoneMs);
    for (const line of table(
      ['video', 'soak IDF1', 'baseline IDF1', 'soak IDSW', 'baseline IDSW'],
      rows.map((b, i) => [b.videoId, perVideo[i]!.tracking.idf1.toFixed(3), b.idf1.toFixed(3), perVideo[i]!.tracking.idSwitches, b.idSwitches]),
    ))
      say(`  ${line}`);
    const idsw = rows.reduce((k, b) => k + b.idSwitches, 0);
    say(`ID switches: soak ${totals.idSwitches}, baseline ${idsw} (the soak's excess is what the pipeline added: late frames, failover, gaps)`);
    out.baseline = { method: 'uploaded frames in order, one in-process VisionProcessor, same tunables', idSwitches: idsw, idf1Mean: rows.reduce((k, b) => k + b.idf1, 0) / rows.length, videos: rows };
  }
  out.runtimeS = (Date.now() - bench.t0) / 1000;
  writeResult(opts.out, out, say);
  return { out, ok: run.outcome === 'complete' || run.outcome === 'quiet' };
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const opts = parseSoakOptions(args);
  if (opts) await benchMain('soak', async (bench) => ((await runSoak(opts, bench, args)).ok ? 0 : 1));
}
