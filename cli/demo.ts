/**
 * `npm run demo`: the whole pipeline on this machine in about a minute.
 *
 * Starts the local stack (vision workers, demo model), generates four synthetic
 * videos, uploads three as frames interleaved and slightly out of order like cameras
 * would and the fourth as a video file (H.264 encoded here, cut at keyframes into 1-s
 * segments and uploaded as `affinity upload <file>` does), SIGKILLs a worker midway and shows the takeover, waits for every video to
 * complete, scores tracking against ground truth, prints each video's rule counts
 * (a counting line and a zone, cli/demo-rules.ts) next to the counts of the same rules
 * on the clip's truth tracks, renders annotated output with the rules drawn under
 * `.local/demo/`, and stops everything.
 */
import { countResults as countStored } from '../core/commit/dynamodb/results-reader.ts';
import { createWriteStream, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import type { Tunables } from '../core/config.ts';
import { endMarkerKey, frameKey } from '../core/ingest/keys.ts';
import { allEvents } from '../core/analytics/dynamodb/events-reader.ts';
import { rulesKey } from '../core/analytics/s3/rules-store.ts';
import type { FrameResultItem } from '../core/commit/results.ts';
import { ensureDemoModel, generateClip } from '../gpu-worker/vision/index.ts';
import type { Clip } from '../gpu-worker/vision/synthetic/generate.ts';
import { startLocalStack, type LocalStack } from '../local/stack.ts';
import { putObjects } from './commands/upload.ts';
import sharp from 'sharp';
import { encodeClip } from './video/encode-clip.ts';
import { uploadVideoFile } from './video/segment-upload.ts';
import { renderVideo } from './commands/render.ts';
import { cameraSchedule, scoreVideo, summaryTable, type DemoRow } from './demo-lib.ts';
import { allMatch, compareTotals, demoRules, ruleCountTable, truthTotals, type VideoRuleCounts } from './demo-rules.ts';
import { formatDurationMs } from './format.ts';
import { loadLocalTarget } from './target.ts';
import { allResults, getSummary } from './read.ts';
import { sleep } from '../core/async.ts';

/** Short leases so the failover happens in seconds; printed on screen. */
export const DEMO_TUNABLES: Partial<Tunables> = {
  slotCount: 2,
  videosPerSlot: 2,
  slotLeaseTtlSeconds: 6,
  heartbeatIntervalSeconds: 2,
  slotQueueVisibilitySeconds: 6,
  reorderWaitMs: 2000,
  taskStartGraceSeconds: 20,
  videoIdleReleaseSeconds: 30,
  routerPinCacheSeconds: 10,
};

/** Three cameras upload images, one frame per object; `cam-d` is a video file, uploaded as H.264 segments (`affinity upload <file>`). */
const VIDEOS: readonly { videoId: string; seed: number; crossings: boolean; objects: number; file?: true }[] = [
  { videoId: 'cam-a', seed: 11, crossings: false, objects: 4 },
  { videoId: 'cam-b', seed: 22, crossings: false, objects: 5 },
  { videoId: 'cam-c', seed: 33, crossings: true, objects: 4 },
  { videoId: 'cam-d', seed: 44, crossings: false, objects: 4, file: true },
];
/** The video file's frame rate and keyframe interval: 1-s segments of 10 frames. */
const FILE_FPS = 10;
const FRAMES_PER_VIDEO = 60;
const CLIP_SIZE = { widthPx: 320, heightPx: 240 };
/** Every video gets the same rules, stored as its own `rules/{videoId}.json` (not the shared default) so other videos in a --keep session are unaffected. */
const RULES = demoRules(CLIP_SIZE);
/** Upload pacing: about this many frames per second across all cameras. */
const UPLOADS_PER_SECOND = 24;
const COMPLETE_TIMEOUT_MS = 150_000;

const tty = Boolean(process.stdout.isTTY);
/** The demo's own output; everything else printed in this process is diverted (see divertOutput). */
const writeOut = process.stdout.write.bind(process.stdout);
const say = (line = '') => void writeOut(`${tty ? '\r\x1b[K' : ''}${line}\n`);
let lastStatusMs = 0;
/** A live status line: redrawn in place on a terminal, printed every 3 s otherwise. */
function status(line: string, force = false): void {
  if (tty) return void writeOut(`\r\x1b[K${line}`);
  const now = Date.now();
  if (force || now - lastStatusMs >= 3000) {
    lastStatusMs = now;
    writeOut(`${line}\n`);
  }
}

/**
 * The router and janitor run in this process and log JSON lines and EMF metrics to
 * stdout, as they would in Lambda. The demo keeps its screen readable by sending
 * everything it did not print itself to a log file; returns the undo.
 */
function divertOutput(logFile: string): () => void {
  mkdirSync(dirname(logFile), { recursive: true });
  const sink = createWriteStream(logFile);
  const saved = { out: process.stdout.write, err: process.stderr.write };
  const write = ((chunk: string | Uint8Array, encodingOrCallback?: unknown, callback?: unknown) => {
    const done = typeof encodingOrCallback === 'function' ? encodingOrCallback : callback;
    sink.write(chunk, done as (() => void) | undefined);
    return true;
  }) as typeof process.stdout.write;
  process.stdout.write = write;
  process.stderr.write = write;
  return () => {
    process.stdout.write = saved.out;
    process.stderr.write = saved.err;
    sink.end();
  };
}

function countResults(stack: LocalStack, videoId: string): Promise<number> {
  return countStored({ ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable }, videoId);
}

async function progressLine(stack: LocalStack, uploaded: Map<string, number>): Promise<{ line: string; done: number }> {
  const counts = await Promise.all(VIDEOS.map((v) => countResults(stack, v.videoId)));
  const parts = VIDEOS.map((v, i) => `${v.videoId} ${String(uploaded.get(v.videoId) ?? 0).padStart(2)}↑ ${String(counts[i]).padStart(2)}✓`);
  return { line: `  ${parts.join('   ')}   (↑ uploaded, ✓ results of ${FRAMES_PER_VIDEO})`, done: counts.reduce((a, b) => a + b, 0) };
}

interface Kill {
  readonly atMs: number;
  readonly workerId: string;
  readonly slot: number;
  readonly videos: readonly string[];
}

async function killBusiestWorker(stack: LocalStack): Promise<Kill | undefined> {
  const target = loadLocalTarget(STATE_DIR);
  try {
    const owners = new Map<string, string[]>();
    for (const v of VIDEOS) {
      const s = await getSummary(target, v.videoId);
      if (s?.worker) owners.set(s.worker, [...(owners.get(s.worker) ?? []), v.videoId]);
    }
    const [workerId, videos] = [...owners.entries()].sort((a, b) => b[1].length - a[1].length)[0] ?? [];
    const w = stack.launcher.workers().find((x) => x.alive && x.workerId === workerId);
    if (!w || !videos) return undefined;
    const atMs = Date.now();
    stack.launcher.kill({ pid: w.pid }, 'SIGKILL');
    return { atMs, workerId: w.workerId, slot: w.slot, videos };
  } finally {
    target.close();
  }
}

const STATE_DIR = resolve('.local/demo/state');
const OUT_DIR = resolve('.local/demo');

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { keep: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    say('npm run demo [-- --keep]   runs the pipeline end to end on the local stack; --keep leaves the stack running afterwards');
    return 0;
  }
  const keep = Boolean(values.keep);
  const t0 = Date.now();
  say('frame-affinity demo: 3 image cameras and 1 video file -> S3 -> router -> 2 GPU-worker slots (CPU here) -> results');
  say(
    `tunables for the demo: slot lease ${DEMO_TUNABLES.slotLeaseTtlSeconds} s, heartbeat ${DEMO_TUNABLES.heartbeatIntervalSeconds} s, ` +
      `slot queue visibility ${DEMO_TUNABLES.slotQueueVisibilitySeconds} s, reorder wait ${DEMO_TUNABLES.reorderWaitMs} ms (production defaults are longer)`,
  );

  const [clips, modelPath] = await Promise.all([
    Promise.all(VIDEOS.map((v) => generateClip({ seed: v.seed, frames: FRAMES_PER_VIDEO, width: CLIP_SIZE.widthPx, height: CLIP_SIZE.heightPx, objects: v.objects, crossings: v.crossings }))),
    ensureDemoModel(),
  ]);
  const clipOf = new Map<string, Clip>(VIDEOS.map((v, i) => [v.videoId, clips[i]!]));
  say(`generated ${VIDEOS.length} synthetic videos of ${FRAMES_PER_VIDEO} frames (320x240; ${VIDEOS.filter((v) => v.crossings).map((v) => v.videoId).join(', ')} with crossing paths); model ${relative(process.cwd(), modelPath)}`);

  rmSync(STATE_DIR, { recursive: true, force: true });
  const inProcessLog = join(STATE_DIR, 'logs', 'router-janitor.log');
  const restoreOutput = divertOutput(inProcessLog);
  const workerTail: string[] = [];
  say('starting the local stack (DynamoDB Local, fauxqs S3+SQS, router, janitor)...');
  const stack = await startLocalStack({
    quiet: true,
    stateDir: STATE_DIR,
    tunables: DEMO_TUNABLES,
    routerWaitTimeSeconds: 1,
    janitorIntervalMs: 1000,
    workerStopGraceMs: 3000,
    workerEnv: { FRAME_PROCESSOR: 'vision' },
    onWorkerLine: (line) => {
      workerTail.push(line);
      if (workerTail.length > 40) workerTail.shift();
    },
  }).catch((e: unknown) => {
    restoreOutput();
    throw e;
  });
  let exitCode = 0;
  const onSignal = () => void stack.stop().then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  try {
    say(`stack up in ${formatDurationMs(Date.now() - t0)}; watch it from another terminal: npx affinity status --state-dir ${relative(process.cwd(), STATE_DIR)}`);
    say('');

    const schedule = cameraSchedule(
      VIDEOS.filter((v) => !v.file).map((v) => ({ videoId: v.videoId, frames: clipOf.get(v.videoId)!.frames.map((f) => f.frame) })),
      7,
    );
    // The video file: the clip encoded as H.264 (in process, no ffmpeg binary), cut at its keyframes without re-encoding.
    const files = await Promise.all(
      VIDEOS.filter((v) => v.file).map(async (v) => {
        const file = join(OUT_DIR, `${v.videoId}.mp4`);
        mkdirSync(dirname(file), { recursive: true });
        const clip = clipOf.get(v.videoId)!;
        const rgb = (async function* () {
          for (const f of clip.frames) yield await sharp(f.image).removeAlpha().raw().toBuffer();
        })();
        await encodeClip(rgb, file, { width: CLIP_SIZE.widthPx, height: CLIP_SIZE.heightPx, fps: FILE_FPS, gopFrames: FILE_FPS });
        return { videoId: v.videoId, file };
      }),
    );
    // Rules go in before the first frame, so the worker's first commit of each video already runs them.
    await Promise.all(
      VIDEOS.map((v) =>
        stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: rulesKey(v.videoId), Body: JSON.stringify(RULES), ContentType: 'application/json' })),
      ),
    );
    const midX = RULES.lines[0]!.a[0];
    say(`rules per video (rules/{videoId}.json): line "${RULES.lines[0]!.id}" at x=${midX} (in = towards the left), zone "${RULES.zones[0]!.id}" (x<${midX}, dwell ${RULES.zones[0]!.dwellSeconds} s)`);
    const imageOf = (videoId: string, frame: number) => clipOf.get(videoId)!.frames.find((f) => f.frame === frame)!.image;
    const uploaded = new Map<string, number>();
    say(`uploading ${schedule.length} frames, interleaved across cameras and slightly out of order, ~${UPLOADS_PER_SECOND} frames/s...`);
    for (const f of files) say(`uploading ${relative(process.cwd(), f.file)} as ${f.videoId}: H.264 cut at keyframes into 1-s segments, each declaring its frame count (as \`npx affinity upload ${relative(process.cwd(), f.file)} --video ${f.videoId} --end\` does)`);

    // Paced upload in the background; the foreground watches, kills and reports.
    const uploadStartMs = Date.now();
    const uploading = (async () => {
      for (let i = 0; i < schedule.length; i += 4) {
        const chunk = schedule.slice(i, i + 4);
        await putObjects(
          { clients: stack.clients, bucket: stack.wiring.bucket },
          chunk.map((u) => ({ key: frameKey(u.videoId, u.frame, 'png'), sizeBytes: imageOf(u.videoId, u.frame).length, body: async () => imageOf(u.videoId, u.frame), contentType: 'image/png' })),
          { concurrency: 4 },
        );
        for (const u of chunk) uploaded.set(u.videoId, (uploaded.get(u.videoId) ?? 0) + 1);
        const dueMs = uploadStartMs + ((i + chunk.length) / UPLOADS_PER_SECOND) * 1000;
        if (dueMs > Date.now()) await sleep(dueMs - Date.now());
      }
      await Promise.all(
        VIDEOS.filter((v) => !v.file).map((v) => stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: endMarkerKey(v.videoId), Body: String(FRAMES_PER_VIDEO - 1) }))),
      );
    })();
    // The file goes in beside them, a third of the way through (with its end marker).
    const fileUploads = (async () => {
      await sleep((schedule.length / UPLOADS_PER_SECOND / 3) * 1000);
      for (const f of files) {
        const r = await uploadVideoFile(f.file, { s3: stack.clients.s3, bucket: stack.wiring.bucket, videoId: f.videoId, end: true, outDir: join(OUT_DIR, `${f.videoId}-segments`), segmentSeconds: 1 });
        uploaded.set(f.videoId, r.frames);
      }
    })();
    let uploadError: unknown;
    let uploadDone = false;
    Promise.all([uploading, fileUploads]).then(
      () => {
        uploadDone = true;
      },
      (e) => {
        uploadError = e;
        uploadDone = true;
      },
    );

    const total = VIDEOS.length * FRAMES_PER_VIDEO;
    let kill: Kill | undefined;
    let takeoverShown = false;
    const deadline = Date.now() + COMPLETE_TIMEOUT_MS;
    for (;;) {
      if (uploadError) throw uploadError;
      const p = await progressLine(stack, uploaded);
      status(p.line);
      if (!kill && p.done >= total / 3) {
        kill = await killBusiestWorker(stack);
        if (kill) {
          say(p.line);
          say(
            `>>> SIGKILL worker ${kill.workerId} (slot ${kill.slot}), which holds ${kill.videos.join(', ')}: no drain, no checkpoint, no goodbye. ` +
              `Its slot lease runs out within ${DEMO_TUNABLES.slotLeaseTtlSeconds} s; the janitor launches a replacement.`,
          );
        }
      }
      if (kill && !takeoverShown) {
        const target = loadLocalTarget(STATE_DIR);
        try {
          for (const id of kill.videos) {
            const s = await getSummary(target, id);
            if (s && s.worker !== kill.workerId) {
              const owner = s.owners.at(-1);
              say(p.line);
              say(
                `>>> takeover: ${s.worker} claimed slot ${kill.slot} and adopted ${kill.videos.join(', ')} ` +
                  `${formatDurationMs(Date.now() - kill.atMs)} after the kill, continuing ${id} from frame ${owner?.fromFrame ?? '?'} ` +
                  `under token ${s.token} (tracker state restored from the checkpoint)`,
              );
              takeoverShown = true;
              break;
            }
          }
        } finally {
          target.close();
        }
      }
      if (uploadDone) {
        const target = loadLocalTarget(STATE_DIR);
        let complete: boolean;
        try {
          complete = (await Promise.all(VIDEOS.map((v) => getSummary(target, v.videoId)))).every((s) => s?.status === 'complete');
        } finally {
          target.close();
        }
        if (complete) {
          say(p.line);
          break;
        }
      }
      if (Date.now() > deadline) {
        say(p.line);
        say('worker output (last lines):');
        for (const l of workerTail) say(`  ${l}`);
        throw new Error(`videos did not complete within ${COMPLETE_TIMEOUT_MS / 1000} s`);
      }
      await sleep(tty ? 250 : 500);
    }
    say(`all ${VIDEOS.length} videos complete ${formatDurationMs(Date.now() - t0)} after start`);
    say('');

    const target = loadLocalTarget(STATE_DIR);
    const rows: DemoRow[] = [];
    const ruleCounts: VideoRuleCounts[] = [];
    const rendered: string[] = [];
    try {
      const all = new Map<string, FrameResultItem[]>();
      for (const v of VIDEOS) {
        const results = await allResults(target, v.videoId);
        all.set(v.videoId, results);
        const s = await getSummary(target, v.videoId);
        const clip = clipOf.get(v.videoId)!;
        rows.push(
          scoreVideo(v.videoId, results, clip.groundTruth.map((g) => ({ frame: g.frame, objects: g.objects.map((o) => ({ id: o.id, box: o.box })) })), {
            ownerChanges: s?.ownerChanges ?? 0,
            ...(kill ? { killAtMs: kill.atMs, killedWorker: kill.workerId } : {}),
          }),
        );
        const events = await allEvents(target.clients.ddb, target.eventsTable, v.videoId);
        ruleCounts.push({ videoId: v.videoId, rows: compareTotals(RULES, s?.ruleTotals, truthTotals(clip.groundTruth, RULES)), events: events.length });
      }
      say('SUMMARY (tracks vs ground truth; failover = kill -> first result committed by the new owner)');
      for (const line of summaryTable(rows)) say(`  ${line}`);
      say('');
      for (const r of rows) say(`  ${r.videoId}: committed by ${r.workers.join(' then ')}`);
      say('');
      say('RULES (counts from the video summary vs the same rules run on the clip\'s truth tracks)');
      for (const line of ruleCountTable(ruleCounts)) say(line ? `  ${line}` : '');
      if (!allMatch(ruleCounts)) {
        // Counts follow the tracker's ids, so a video whose tracks outnumber its truth objects is the likely cause, not the rules or the takeover.
        say('  (rules count per track id: a track the tracker splits enters a zone again; compare "tracks (truth)" above)');
      }
      say('');
      for (const v of VIDEOS) {
        const out = await renderVideo(target, v.videoId, all.get(v.videoId)!, { outDir: join(OUT_DIR, v.videoId), rules: RULES });
        rendered.push(`  ${v.videoId}: ${relative(process.cwd(), out.contactSheet)}  ${relative(process.cwd(), out.gif)}  ${relative(process.cwd(), out.html)}`);
      }
    } finally {
      target.close();
    }
    say('rendered (boxes and track IDs, colour per track; the counting line in yellow with its "in" arrow, the zone in cyan):');
    for (const l of rendered) say(l);
    say('');
    const sd = relative(process.cwd(), STATE_DIR);
    if (keep) {
      say(`the stack keeps running (--keep). Try, from another terminal:`);
      say(`  npx affinity status --state-dir ${sd}`);
      say(`  npx affinity video cam-a --state-dir ${sd}`);
      say(`  npx affinity results cam-a --csv --state-dir ${sd}`);
      say(`  npx affinity replay cam-a --from 30 --state-dir ${sd}`);
      say('Ctrl-C stops it.');
      process.off('SIGINT', onSignal);
      await new Promise<void>((r) => process.once('SIGINT', () => r()));
      say('');
    } else {
      say('run `npm run demo -- --keep` to keep the stack up afterwards and try the CLI on it (npx affinity --help)');
    }
  } catch (e) {
    exitCode = 1;
    say(`demo failed: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    process.off('SIGINT', onSignal);
    say('stopping the stack...');
    await stack.stop();
    restoreOutput();
  }
  say(`logs: ${relative(process.cwd(), join(STATE_DIR, 'logs'))} (workers, router and janitor)`);
  say(`done in ${formatDurationMs(Date.now() - t0)}`);
  return exitCode;
}

process.exitCode = await main().catch((e: unknown) => {
  say(`error: ${e instanceof Error ? e.message : String(e)}`);
  return 2;
});
