/**
 * Chaos run on the local stack (DynamoDB Local + fauxqs, router, janitor, real worker
 * processes): many faults at once, mixed at random, then the pipeline's guarantees
 * checked on what it left behind. Randomised with a printed seed; `--seed N` replays the
 * same plan (the same faults at the same planned times; which worker a process fault
 * hits and which calls an injected AWS error hits still depend on timing).
 *
 * Workload: `--videos` x `--frames` (default 6 x 200) small JPEGs numbered from 1, each
 * video a camera at `--fps` (default 5), uploaded by a pool of parallel uploaders, with
 * the `_end` marker after each video's last upload. Workers run the `stats` processor,
 * whose track ID is the number of frames the video's state has seen in order: an
 * uninterrupted in-order run gives the k-th `ok` frame track ID k, so any lost, doubled
 * or rolled-back tracker state shows as a mismatch, frame by frame. Short leases
 * (test/support/pipeline.ts FAST_TUNABLES) so that failovers happen in seconds.
 *
 * Faults (counts printed and written by kind):
 *  - processes: `kill -9` of a worker; SIGSTOP then SIGCONT shorter than the slot lease,
 *    and longer than it (the worker comes back a zombie whose slot was taken over);
 *  - notifications (local/s3-notifications.ts fault hook): dropped, duplicated, delayed;
 *  - uploads: shuffled (the due times of a few consecutive frames permuted), late (held
 *    back 3-6 x reorderWaitMs, so the frame is first gapped and then committed `late`);
 *  - the stream: a few frames never uploaded (they must end as `gap`);
 *  - objects: corrupt (random bytes behind a JPEG marker), zero-byte, unreadable (deleted
 *    shortly after its PUT: the notification points at an object that is gone);
 *  - AWS: throttling and 5xx on DynamoDB, SQS and S3 calls of workers, router and janitor
 *    (`AWS_FAULT_INJECTION`, core/aws/fault-injection.ts), counted from its log;
 *  - the janitor: a scheduled run skipped.
 *
 * Invariants, checked at the end (each printed with the number of items checked and of
 * violations; the run exits 1 on any violation):
 *  1. every uploaded frame has exactly one record (and a frame never uploaded, none or a `gap`);
 *  2. no frame whose object exists in S3 at the end has a `gap` record;
 *  3. every record's token >= the token of the lease that held the video when the frame
 *     was written: the summary's owner history says which tenure covers each frame (an
 *     owner holds frames from its `fromFrame`), and the record's token must be at least
 *     that owner's, and one of the owners' tokens;
 *  4. no two owners' tenures overlap: each token belongs to one worker, owner tokens rise,
 *     and in-order (non-`late`) records never go down in token along the frames;
 *  5. summaries equal the records they summarise (ok, late, failed, gap counts);
 *  6. track IDs equal an uninterrupted run's on frames processed in order (`ok`).
 *
 *   npx node bench/chaos.ts [--seed N] [--videos 6] [--frames 200] [--fps 5] [--aws-fault-rate 0.02] [--out path]
 *
 * Writes bench/results/chaos-<seed>.json. test/chaos/chaos.test.ts runs it when CHAOS=1.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { endMarkerKey, frameKey } from '../core/keys.ts';
import { allResults, getSummary } from '../core/aws/results-reader.ts';
import type { FrameResultItem, VideoSummaryItem } from '../core/results.ts';
import { MAX_OWNER_HISTORY } from '../core/checkpoint.ts';
import { rng } from '../core/random.ts';
import type { ScheduledHandler } from '../local/event-source.ts';
import { startLocalStack, type LocalStack, type NotificationFault } from '../local/stack.ts';
import { FAST_TUNABLES } from '../test/support/pipeline.ts';
import { formatDurationMs, table } from '../cli/format.ts';
import { framesInS3, gapFrames, normal, numberOption, sleep } from './support.ts';

const HERE = dirname(fileURLToPath(import.meta.url));

// ---------------------------------------------------------------------------------------
// Options

/** What one chaos run does; every share is of the frames (frame 1 of each video is left alone). */
export interface ChaosOptions {
  readonly seed: number;
  readonly videos: number;
  readonly frames: number;
  readonly fps: number;
  readonly uploaders: number;
  /** Median of the ordinary upload delay (log-normal, capped under reorderWaitMs / 2). */
  readonly delayP50Ms: number;
  readonly kills: number;
  /** SIGSTOP for less than the slot lease. */
  readonly shortPauses: number;
  /** SIGSTOP for longer than the slot lease: the slot is taken over, the worker returns a zombie. */
  readonly longPauses: number;
  readonly janitorSkips: number;
  readonly dropShare: number;
  readonly duplicateShare: number;
  readonly delayShare: number;
  /** Share of frames that start a window of 3-6 frames whose upload order is permuted. */
  readonly shuffleShare: number;
  readonly lateShare: number;
  readonly corruptShare: number;
  readonly zeroShare: number;
  readonly unreadableShare: number;
  /** Share of frames never uploaded (the stream really lost them: they must end as `gap`). */
  readonly lostShare: number;
  /** Share of AWS request attempts (workers, router, janitor) failed with throttling or 5xx. */
  readonly awsFaultRate: number;
  readonly slotCount: number;
  readonly timeoutMs: number;
  readonly quietMs: number;
  readonly out: string;
}

const DEFAULTS: Omit<ChaosOptions, 'seed' | 'out'> = {
  videos: 6,
  frames: 200,
  fps: 5,
  uploaders: 6,
  delayP50Ms: 100,
  kills: 5,
  shortPauses: 4,
  longPauses: 3,
  janitorSkips: 3,
  dropShare: 0.02,
  duplicateShare: 0.02,
  delayShare: 0.01,
  shuffleShare: 0.01,
  lateShare: 0.01,
  corruptShare: 0.006,
  zeroShare: 0.006,
  unreadableShare: 0.006,
  lostShare: 0.005,
  awsFaultRate: 0.02,
  slotCount: 3,
  timeoutMs: 220_000,
  quietMs: 40_000,
};

export function parseOptions(args: readonly string[]): ChaosOptions | undefined {
  const { values: argv } = parseArgs({
    args: [...args],
    options: {
      seed: { type: 'string' },
      videos: { type: 'string' },
      frames: { type: 'string' },
      fps: { type: 'string' },
      uploaders: { type: 'string' },
      kills: { type: 'string' },
      'short-pauses': { type: 'string' },
      'long-pauses': { type: 'string' },
      'janitor-skips': { type: 'string' },
      'aws-fault-rate': { type: 'string' },
      'timeout-s': { type: 'string' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (argv.help) {
    console.log(
      'npx node bench/chaos.ts [--seed N] [--videos 6] [--frames 200] [--fps 5] [--uploaders 6] [--kills 5] [--short-pauses 4]\n' +
        '  [--long-pauses 3] [--janitor-skips 3] [--aws-fault-rate 0.02] [--timeout-s 220] [--out path]',
    );
    return undefined;
  }
  const num = (name: keyof typeof argv, fallback: number, min: number, max: number): number => (argv[name] === undefined ? fallback : numberOption(argv, name, min, max));
  // A fresh seed unless one is given: printed first thing, so any run can be replayed.
  const seed = Math.round(num('seed', Math.floor(Math.random() * 2 ** 31), 0, 2 ** 31));
  return {
    ...DEFAULTS,
    seed,
    videos: Math.round(num('videos', DEFAULTS.videos, 1, 64)),
    frames: Math.round(num('frames', DEFAULTS.frames, 20, 10_000)),
    fps: num('fps', DEFAULTS.fps, 0.1, 100),
    uploaders: Math.round(num('uploaders', DEFAULTS.uploaders, 1, 64)),
    kills: Math.round(num('kills', DEFAULTS.kills, 0, 100)),
    shortPauses: Math.round(num('short-pauses', DEFAULTS.shortPauses, 0, 100)),
    longPauses: Math.round(num('long-pauses', DEFAULTS.longPauses, 0, 100)),
    janitorSkips: Math.round(num('janitor-skips', DEFAULTS.janitorSkips, 0, 100)),
    awsFaultRate: num('aws-fault-rate', DEFAULTS.awsFaultRate, 0, 0.5),
    timeoutMs: num('timeout-s', DEFAULTS.timeoutMs / 1000, 10, 86_400) * 1000,
    out: argv.out ?? join(HERE, 'results', `chaos-${seed}.json`),
  };
}

// ---------------------------------------------------------------------------------------
// Plan

type Body = 'jpeg' | 'corrupt' | 'zero';

interface PlannedUpload {
  readonly videoId: string;
  readonly frame: number;
  /** When the uploader may PUT it (ms after the upload clock starts). */
  readonly dueMs: number;
  readonly body: Body;
  /** Deleted this long after its PUT (an unreadable object). */
  readonly deleteAfterMs?: number;
  readonly late?: boolean;
  readonly shuffled?: boolean;
  readonly notification?: NotificationFault;
}

type ProcessFaultKind = 'kill -9' | 'SIGSTOP < lease' | 'SIGSTOP > lease' | 'janitor run skipped';

interface PlannedProcessFault {
  readonly kind: ProcessFaultKind;
  readonly atMs: number;
  /** For a pause: how long until SIGCONT. */
  readonly pauseMs?: number;
}

interface Plan {
  readonly videoIds: readonly string[];
  readonly uploads: readonly PlannedUpload[];
  /** Per video, the frames never uploaded. */
  readonly lost: ReadonlyMap<string, ReadonlySet<number>>;
  readonly processFaults: readonly PlannedProcessFault[];
}

function makePlan(o: ChaosOptions, reorderWaitMs: number, leaseMs: number): Plan {
  const rand = rng(o.seed * 7919 + 17);
  const videoIds = Array.from({ length: o.videos }, (_, i) => `chaos-${String(i + 1).padStart(2, '0')}`);
  const frameMs = 1000 / o.fps;
  const sigma = 0.6;
  const uploads: PlannedUpload[] = [];
  const lost = new Map<string, Set<number>>();
  for (const [v, videoId] of videoIds.entries()) {
    lost.set(videoId, new Set());
    const startMs = (v * frameMs) / videoIds.length + v * 137;
    const due: number[] = [];
    for (let f = 1; f <= o.frames; f++) due[f] = startMs + (f - 1) * frameMs + Math.min(reorderWaitMs / 2, o.delayP50Ms * Math.exp(sigma * normal(rand)));
    // Shuffled windows: a few consecutive frames take each other's due times.
    const shuffled = new Set<number>();
    for (let f = 2; f <= o.frames - 6; f++) {
      if (rand() >= o.shuffleShare) continue;
      const w = 3 + Math.floor(rand() * 4);
      const frames = Array.from({ length: w }, (_, k) => f + k);
      const times = frames.map((x) => due[x]!);
      for (let i = times.length - 1; i > 0; i--) {
        const j = Math.floor(rand() * (i + 1));
        [times[i], times[j]] = [times[j]!, times[i]!];
      }
      frames.forEach((x, k) => {
        if (times[k] !== due[x]) shuffled.add(x);
        due[x] = times[k]!;
      });
      f += w;
    }
    for (let f = 1; f <= o.frames; f++) {
      // Frame 1 is left alone: it only moves the video's start.
      const r = f === 1 ? 1 : rand();
      let body: Body = 'jpeg';
      let deleteAfterMs: number | undefined;
      let late = false;
      let x = r;
      if ((x -= o.corruptShare) < 0) body = 'corrupt';
      else if ((x -= o.zeroShare) < 0) body = 'zero';
      else if ((x -= o.unreadableShare) < 0) deleteAfterMs = Math.round(rand() * 400);
      else if ((x -= o.lateShare) < 0) late = true;
      else if ((x -= o.lostShare) < 0) {
        lost.get(videoId)!.add(f);
        continue;
      }
      const n = f === 1 ? 1 : rand();
      let notification: NotificationFault | undefined;
      if (n < o.dropShare) notification = { kind: 'drop' };
      else if (n < o.dropShare + o.duplicateShare) notification = { kind: 'duplicate', afterMs: Math.round(rand() * 2 * reorderWaitMs) };
      else if (n < o.dropShare + o.duplicateShare + o.delayShare) notification = { kind: 'delay', ms: Math.round((1 + rand() * 2) * reorderWaitMs) };
      uploads.push({
        videoId,
        frame: f,
        dueMs: Math.max(0, due[f]! + (late ? (3 + rand() * 3) * reorderWaitMs : 0)),
        body,
        ...(deleteAfterMs !== undefined ? { deleteAfterMs } : {}),
        ...(late ? { late } : {}),
        ...(shuffled.has(f) ? { shuffled: true } : {}),
        ...(notification ? { notification } : {}),
      });
    }
  }
  uploads.sort((a, b) => a.dueMs - b.dueMs);

  // Process faults at random times over the middle of the upload span, so that each one
  // lands while videos are in flight and every pause has ended before the uploads do.
  const spanMs = o.frames * frameMs;
  const at = () => Math.round(spanMs * (0.08 + 0.72 * rand()));
  const processFaults: PlannedProcessFault[] = [
    ...Array.from({ length: o.kills }, () => ({ kind: 'kill -9' as const, atMs: at() })),
    ...Array.from({ length: o.shortPauses }, () => ({ kind: 'SIGSTOP < lease' as const, atMs: at(), pauseMs: Math.round(500 + rand() * 0.4 * leaseMs) })),
    ...Array.from({ length: o.longPauses }, () => ({ kind: 'SIGSTOP > lease' as const, atMs: at(), pauseMs: Math.round(leaseMs + 2_000 + rand() * 5_000) })),
    ...Array.from({ length: o.janitorSkips }, () => ({ kind: 'janitor run skipped' as const, atMs: at() })),
  ].sort((a, b) => a.atMs - b.atMs);
  return { videoIds, uploads, lost, processFaults };
}

/** A few distinct small JPEGs (the stats processor only decodes them). */
async function jpegs(count: number): Promise<Buffer[]> {
  return Promise.all(
    Array.from({ length: count }, (_, i) =>
      sharp({ create: { width: 64, height: 48, channels: 3, background: { r: (i * 53) % 256, g: (i * 97) % 256, b: (i * 31) % 256 } } })
        .jpeg()
        .toBuffer(),
    ),
  );
}

// ---------------------------------------------------------------------------------------
// Invariants

export interface InvariantResult {
  readonly name: string;
  /** Items checked (frames, records, summaries). */
  readonly checked: number;
  readonly violations: number;
  /** Up to 10 descriptions of violations, for the report. */
  readonly examples: readonly string[];
}

class Tally {
  checked = 0;
  violations = 0;
  readonly examples: string[] = [];
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  check(ok: boolean, what: () => string): void {
    this.checked++;
    if (ok) return;
    this.violations++;
    if (this.examples.length < 10) this.examples.push(what());
  }
  result(): InvariantResult {
    return { name: this.name, checked: this.checked, violations: this.violations, examples: this.examples };
  }
}

/** The video's state as the run left it. */
export interface VideoOutcome {
  readonly videoId: string;
  readonly uploaded: ReadonlySet<number>;
  /** Frames never uploaded (their record, if any, must be a gap). */
  readonly neverUploaded: ReadonlySet<number>;
  readonly records: readonly FrameResultItem[];
  readonly summary: VideoSummaryItem | undefined;
  readonly inS3: ReadonlySet<number>;
}

/** Checks the six invariants over every video's outcome. Pure: unit-testable on made-up records. */
export function checkInvariants(videos: readonly VideoOutcome[]): InvariantResult[] {
  const once = new Tally('every uploaded frame has exactly one record');
  const gapButExists = new Tally('no frame whose object exists ends as gap');
  const tokenAtWrite = new Tally("every record's token >= the token of the lease that held the video when it was written");
  const tenures = new Tally("no two owners' tenures overlap for a video");
  const summaries = new Tally('summaries equal the records they summarise');
  const tracks = new Tally("track IDs equal an uninterrupted run's on frames processed in order");
  for (const v of videos) {
    const perFrame = new Map<number, number>();
    for (const r of v.records) perFrame.set(r.frame, (perFrame.get(r.frame) ?? 0) + 1);
    for (const f of v.uploaded) once.check(perFrame.get(f) === 1, () => `${v.videoId}/${f}: ${perFrame.get(f) ?? 0} records`);
    for (const [f, n] of perFrame) {
      if (v.uploaded.has(f)) continue;
      const status = v.records.find((r) => r.frame === f)?.status;
      once.check(v.neverUploaded.has(f) && n === 1 && status === 'gap', () => `${v.videoId}/${f}: ${n} record(s) (${status}) for a frame never uploaded`);
    }

    const gaps = gapFrames(v.records);
    for (const f of v.inS3) gapButExists.check(!gaps.has(f), () => `${v.videoId}/${f}: object exists, record is gap`);

    const owners = [...(v.summary?.owners ?? [])];
    const historyComplete = (v.summary?.ownerChanges ?? 0) <= MAX_OWNER_HISTORY;
    const ownerTokens = new Set(owners.map((o) => o.token));
    const sortedRecords = [...v.records].sort((a, b) => a.frame - b.frame);
    for (const r of sortedRecords) {
      // The tenure covering frame r.frame: the last owner that took the video at or below it.
      let holder = owners[0];
      for (const o of owners) if ((o.fromFrame ?? Number.NEGATIVE_INFINITY) <= r.frame) holder = o;
      tokenAtWrite.check(
        holder !== undefined && r.token >= holder.token && (!historyComplete || ownerTokens.has(r.token)),
        () => `${v.videoId}/${r.frame} (${r.status}): token ${r.token} by ${r.worker}; lease holder for this frame: ${holder ? `${holder.worker} token ${holder.token} from frame ${holder.fromFrame}` : 'none'}`,
      );
    }

    const workerOfToken = new Map<number, string>();
    let prev: (typeof owners)[number] | undefined;
    for (const o of owners) {
      tenures.check(!prev || o.token > prev.token, () => `${v.videoId}: owner ${o.worker} token ${o.token} after ${prev!.worker} token ${prev!.token}`);
      tenures.check(!workerOfToken.has(o.token) || workerOfToken.get(o.token) === o.worker, () => `${v.videoId}: token ${o.token} held by ${workerOfToken.get(o.token)} and ${o.worker}`);
      workerOfToken.set(o.token, o.worker);
      prev = o;
    }
    let lastToken = Number.NEGATIVE_INFINITY;
    let lastFrame = 0;
    for (const r of sortedRecords) {
      const owner = workerOfToken.get(r.token);
      tenures.check(owner === undefined || owner === r.worker, () => `${v.videoId}/${r.frame}: token ${r.token} is ${owner}'s, record written by ${r.worker}`);
      if (owner === undefined) workerOfToken.set(r.token, r.worker);
      // A late record is written whenever its frame arrives, under the token of that moment.
      if (r.status === 'late') continue;
      tenures.check(r.token >= lastToken, () => `${v.videoId}/${r.frame}: in-order record under token ${r.token} after frame ${lastFrame} under token ${lastToken}`);
      lastToken = r.token;
      lastFrame = r.frame;
    }

    const count = (s: string) => v.records.filter((r) => String(r.status) === s).length;
    const s = v.summary;
    summaries.check(s !== undefined, () => `${v.videoId}: no summary`);
    if (s) {
      const got = { ok: s.framesOk, late: s.framesLate ?? 0, failed: s.framesFailed, gap: s.framesGap };
      const want = { ok: count('ok'), late: count('late'), failed: count('failed'), gap: gaps.size };
      summaries.check(JSON.stringify(got) === JSON.stringify(want), () => `${v.videoId}: summary ${JSON.stringify(got)}, records ${JSON.stringify(want)}`);
    }

    let k = 0;
    for (const r of sortedRecords) {
      if (r.status !== 'ok') continue;
      k++;
      const id = r.detections[0]?.trackId;
      tracks.check(id === k, () => `${v.videoId}/${r.frame}: track ID ${id}, an in-order run gives ${k} (token ${r.token}, ${r.worker})`);
    }
  }
  return [once, gapButExists, tokenAtWrite, tenures, summaries, tracks].map((t) => t.result());
}

// ---------------------------------------------------------------------------------------
// Run

/** Runs one chaos run, prints as it goes, writes the JSON report; returns it. */
export async function runChaos(o: ChaosOptions, say: (line?: string) => void = (l = '') => console.log(l)) {
  const t0 = Date.now();
  const clock = () => `${((Date.now() - t0) / 1000).toFixed(0).padStart(4)} s`;
  say(`chaos seed ${o.seed}  (replay: npx node bench/chaos.ts --seed ${o.seed})`);
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';

  const stateDir = resolve('.local/bench-chaos');
  rmSync(stateDir, { recursive: true, force: true });
  mkdirSync(stateDir, { recursive: true });
  const awsFaultLog = join(stateDir, 'aws-faults.log');
  const faultEnv = o.awsFaultRate > 0 ? JSON.stringify({ rate: o.awsFaultRate, seed: o.seed, log: awsFaultLog }) : undefined;
  // The router and janitor run in this process and build their clients from process.env.
  const savedFaultEnv = process.env.AWS_FAULT_INJECTION;
  if (faultEnv) process.env.AWS_FAULT_INJECTION = faultEnv;

  let notificationFaults = new Map<string, NotificationFault>();
  let janitorSkipsPending = 0;
  let janitorSkipped = 0;
  let janitorRuns = 0;
  // Wraps the real janitor (imported on first use: it reads its configuration from the
  // environment the stack sets) so that a scheduled run can be skipped. Task-stopped
  // events are never skipped: only the schedule is the fault.
  const janitorHandler: ScheduledHandler = async (event, context) => {
    if ((event as { 'detail-type'?: string })['detail-type'] === 'Scheduled Event') {
      if (janitorSkipsPending > 0) {
        janitorSkipsPending--;
        janitorSkipped++;
        return undefined;
      }
      janitorRuns++;
    }
    const { handler } = await import('../functions/janitor/handler.ts');
    return handler(event, context);
  };
  const stackLines: string[] = [];
  const workerTail: string[] = [];
  const [images, stack] = await Promise.all([
    jpegs(8),
    startLocalStack({
      quiet: true,
      stateDir,
      routerWaitTimeSeconds: 1,
      janitorIntervalMs: 1_000,
      janitorHandler,
      workerStopGraceMs: 5_000,
      // Videos spread over every slot (the router packs a slot up to videosPerSlot first),
      // so that every slot has a worker to kill or freeze.
      tunables: { ...FAST_TUNABLES, slotCount: o.slotCount, videosPerSlot: Math.max(1, Math.ceil(o.videos / o.slotCount)) },
      workerEnv: { FRAME_PROCESSOR: 'stats', ...(faultEnv ? { AWS_FAULT_INJECTION: faultEnv } : {}) },
      notificationFault: (key) => notificationFaults.get(key),
      log: (line) => stackLines.push(line),
      onWorkerLine: (line) => {
        workerTail.push(line);
        if (workerTail.length > 80) workerTail.shift();
      },
    }),
  ]);
  try {
    return await drive(stack);
  } catch (e) {
    say(`chaos run failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    say('worker output (last lines):');
    for (const l of workerTail) say(`  ${l}`);
    throw e;
  } finally {
    say(`${clock()}  stopping the stack...`);
    await stack.stop();
    if (savedFaultEnv === undefined) delete process.env.AWS_FAULT_INJECTION;
    else process.env.AWS_FAULT_INJECTION = savedFaultEnv;
  }

  async function drive(stack: LocalStack) {
    const t = stack.tunables;
    const leaseMs = t.slotLeaseTtlSeconds * 1000;
    const plan = makePlan(o, t.reorderWaitMs, leaseMs);
    notificationFaults = new Map(plan.uploads.filter((u) => u.notification).map((u) => [frameKey(u.videoId, u.frame), u.notification!]));
    const runtimeRand = rng(o.seed * 31 + 5);
    const planned = {
      'notification dropped': plan.uploads.filter((u) => u.notification?.kind === 'drop').length,
      'notification duplicated': plan.uploads.filter((u) => u.notification?.kind === 'duplicate').length,
      'notification delayed': plan.uploads.filter((u) => u.notification?.kind === 'delay').length,
      'upload shuffled': plan.uploads.filter((u) => u.shuffled).length,
      'upload late': plan.uploads.filter((u) => u.late).length,
      'frame corrupt': plan.uploads.filter((u) => u.body === 'corrupt').length,
      'frame zero-byte': plan.uploads.filter((u) => u.body === 'zero').length,
      'object unreadable (deleted)': plan.uploads.filter((u) => u.deleteAfterMs !== undefined).length,
      'frame never uploaded': [...plan.lost.values()].reduce((n, l) => n + l.size, 0),
    };
    say(
      `${clock()}  stack up: ${o.videos} videos x ${o.frames} frames at ${o.fps} fps, ${t.slotCount} slots, stats processor; ` +
        `lease ${t.slotLeaseTtlSeconds} s, reorderWaitMs ${t.reorderWaitMs}, slot-queue visibility ${t.slotQueueVisibilitySeconds} s; AWS fault rate ${o.awsFaultRate}`,
    );
    say(`${clock()}  planned: ${Object.entries(planned).map(([k, n]) => `${k} ${n}`).join(', ')}; ${plan.processFaults.map((f) => `${f.kind} @${(f.atMs / 1000).toFixed(1)} s`).join(', ')}`);

    const source = { ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable };
    const bucket = stack.wiring.bucket;
    const bodyOf = (u: PlannedUpload): Uint8Array => {
      if (u.body === 'zero') return new Uint8Array(0);
      if (u.body === 'corrupt') {
        const r = rng(o.seed + u.frame * 131 + u.videoId.length);
        return Uint8Array.from([0xff, 0xd8, 0xff, 0xe0, ...Array.from({ length: 600 }, () => Math.floor(r() * 256))]);
      }
      return images[(u.frame * 7 + u.videoId.charCodeAt(u.videoId.length - 1)) % images.length]!;
    };

    // Uploads: a pool of lanes takes the plan in due order.
    const uploadClock = Date.now();
    let stopUploads = false;
    const uploaded = new Map<string, Set<number>>(plan.videoIds.map((id) => [id, new Set<number>()]));
    const remaining = new Map(plan.videoIds.map((id) => [id, plan.uploads.filter((u) => u.videoId === id).length]));
    const deletions: Promise<unknown>[] = [];
    let next = 0;
    let uploadsDoneMs: number | undefined;
    let uploadError: unknown;
    const lane = async () => {
      while (!stopUploads && next < plan.uploads.length) {
        const u = plan.uploads[next++]!;
        for (let wait = uploadClock + u.dueMs - Date.now(); wait > 0 && !stopUploads; wait = uploadClock + u.dueMs - Date.now()) await sleep(Math.min(wait, 500));
        if (stopUploads) break;
        const key = frameKey(u.videoId, u.frame);
        await stack.clients.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: bodyOf(u), ContentType: 'image/jpeg' }));
        uploaded.get(u.videoId)!.add(u.frame);
        if (u.deleteAfterMs !== undefined) deletions.push(sleep(u.deleteAfterMs).then(() => stack.clients.s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))));
        const left = remaining.get(u.videoId)! - 1;
        remaining.set(u.videoId, left);
        if (left === 0) await stack.clients.s3.send(new PutObjectCommand({ Bucket: bucket, Key: endMarkerKey(u.videoId), Body: String(o.frames) }));
      }
    };
    const uploading = Promise.all(Array.from({ length: o.uploaders }, lane)).then(
      () => {
        uploadsDoneMs = Date.now();
      },
      (e: unknown) => {
        uploadError = e;
      },
    );

    // Process faults, on their planned times; the victim is drawn among live, running
    // workers, preferring one that owns an unfinished video.
    const done: { kind: ProcessFaultKind; atS: number; worker?: string; slot?: number; pid?: number; pauseMs?: number; skipped?: string }[] = [];
    const resumes: Promise<void>[] = [];
    let latestSummaries: (VideoSummaryItem | undefined)[] = [];
    const faulting = (async () => {
      for (const f of plan.processFaults) {
        for (let wait = uploadClock + f.atMs - Date.now(); wait > 0 && !stopUploads; wait = uploadClock + f.atMs - Date.now()) await sleep(Math.min(wait, 500));
        if (stopUploads) return;
        const atS = (Date.now() - uploadClock) / 1000;
        if (f.kind === 'janitor run skipped') {
          janitorSkipsPending++;
          done.push({ kind: f.kind, atS });
          say(`${clock()}  >>> skip the janitor's next scheduled run`);
          continue;
        }
        // Every worker may be dead or frozen by earlier faults: wait a little for a successor.
        let pool: ReturnType<LocalStack['launcher']['workers']> = [];
        for (let tries = 0; tries < 20 && !stopUploads; tries++) {
          const owners = new Set(latestSummaries.filter((s) => s && s.status !== 'complete').map((s) => s!.worker));
          const running = stack.launcher.workers().filter((w) => w.alive && !w.paused);
          const preferred = running.filter((w) => owners.has(w.workerId));
          pool = preferred.length ? preferred : running;
          if (pool.length > 0) break;
          await sleep(500);
        }
        if (pool.length === 0) {
          done.push({ kind: f.kind, atS, skipped: 'no running worker' });
          say(`${clock()}  >>> ${f.kind}: no running worker, fault not applied`);
          continue;
        }
        const w = pool[Math.floor(runtimeRand() * pool.length)]!;
        if (f.kind === 'kill -9') {
          stack.launcher.kill({ pid: w.pid }, 'SIGKILL');
          say(`${clock()}  >>> kill -9 ${w.workerId} (slot ${w.slot}, pid ${w.pid})`);
        } else {
          stack.launcher.kill({ pid: w.pid }, 'SIGSTOP');
          say(`${clock()}  >>> SIGSTOP ${w.workerId} (slot ${w.slot}, pid ${w.pid}) for ${(f.pauseMs! / 1000).toFixed(1)} s (lease ${t.slotLeaseTtlSeconds} s)`);
          resumes.push(
            sleep(f.pauseMs!).then(() => {
              stack.launcher.kill({ pid: w.pid }, 'SIGCONT');
              say(`${clock()}  >>> SIGCONT ${w.workerId} (pid ${w.pid})`);
            }),
          );
        }
        done.push({ kind: f.kind, atS, worker: w.workerId, slot: w.slot, pid: w.pid, ...(f.pauseMs ? { pauseMs: f.pauseMs } : {}) });
      }
    })();

    // Watch until every video is complete, nothing changes for quietMs, or the timeout.
    let outcome: 'complete' | 'quiet' | 'timeout' = 'timeout';
    let lastTotal = -1;
    let lastChangeMs = Date.now();
    let lastPrintMs = 0;
    const expected = plan.uploads.length;
    for (;;) {
      if (uploadError) throw uploadError;
      latestSummaries = await Promise.all(plan.videoIds.map((id) => getSummary(source, id).catch(() => undefined)));
      const total = latestSummaries.reduce((n, s) => n + (s ? s.framesOk + (s.framesLate ?? 0) + s.framesFailed + s.framesGap : 0), 0);
      if (total !== lastTotal) {
        lastTotal = total;
        lastChangeMs = Date.now();
      }
      const complete = latestSummaries.filter((s) => s?.status === 'complete').length;
      if (Date.now() - lastPrintMs >= 10_000) {
        lastPrintMs = Date.now();
        const ws = stack.launcher.workers();
        say(
          `${clock()}  uploaded ${[...uploaded.values()].reduce((n, s) => n + s.size, 0)}/${expected}  records ${total}  complete ${complete}/${o.videos}  ` +
            `workers alive ${ws.filter((w) => w.alive).length} (paused ${ws.filter((w) => w.alive && w.paused).length}, started ${ws.length})`,
        );
      }
      if (uploadsDoneMs !== undefined && complete === o.videos) {
        outcome = 'complete';
        break;
      }
      if (uploadsDoneMs !== undefined && Date.now() - Math.max(lastChangeMs, uploadsDoneMs) > o.quietMs) {
        outcome = 'quiet';
        break;
      }
      if (Date.now() - t0 > o.timeoutMs) break;
      await sleep(1_000);
    }
    const finishedS = (Date.now() - uploadClock) / 1000;
    stopUploads = true;
    await Promise.all([uploading, faulting, ...resumes]);
    await Promise.allSettled(deletions);
    say(`${clock()}  ${outcome}; letting delayed and duplicated notifications arrive (they must change nothing)...`);
    await Promise.race([stack.notifier.flush({ delayed: true }), sleep(4 * t.reorderWaitMs)]);
    await sleep(2 * t.reorderWaitMs);

    // Collect and check.
    const outcomes: VideoOutcome[] = [];
    for (const videoId of plan.videoIds) {
      outcomes.push({
        videoId,
        uploaded: uploaded.get(videoId)!,
        neverUploaded: plan.lost.get(videoId)!,
        records: await allResults(source, videoId),
        summary: await getSummary(source, videoId),
        inS3: await framesInS3(stack, videoId),
      });
    }
    const invariants = checkInvariants(outcomes);

    const awsFaults = new Map<string, number>();
    if (existsSync(awsFaultLog))
      for (const line of readFileSync(awsFaultLog, 'utf8').split('\n').filter(Boolean)) {
        const [role, service, , error] = line.split('\t');
        const k = `AWS ${service} ${error} (${role})`;
        awsFaults.set(k, (awsFaults.get(k) ?? 0) + 1);
      }
    const n = stack.notifier.counts;
    const applied = (k: ProcessFaultKind) => done.filter((d) => d.kind === k && !d.skipped).length;
    const faults: Record<string, number> = {
      'kill -9': applied('kill -9'),
      'SIGSTOP/SIGCONT < lease': applied('SIGSTOP < lease'),
      'SIGSTOP/SIGCONT > lease': applied('SIGSTOP > lease'),
      'janitor run skipped': janitorSkipped,
      'notification dropped': n.dropped,
      'notification duplicated': n.duplicated,
      'notification delayed': planned['notification delayed'],
      'upload shuffled': planned['upload shuffled'],
      'upload late': planned['upload late'],
      'frame corrupt': planned['frame corrupt'],
      'frame zero-byte': planned['frame zero-byte'],
      'object unreadable (deleted)': planned['object unreadable (deleted)'],
      'frame never uploaded': planned['frame never uploaded'],
      ...Object.fromEntries([...awsFaults.entries()].sort()),
    };
    const faultTotal = Object.values(faults).reduce((a, b) => a + b, 0);

    const statusOf = (u: PlannedUpload) => outcomes.find((x) => x.videoId === u.videoId)!.records.find((r) => r.frame === u.frame);
    const outcomeOf = (pred: (u: PlannedUpload) => boolean) => {
      const m = new Map<string, number>();
      for (const u of plan.uploads.filter(pred)) {
        const r = statusOf(u);
        const k = r ? `${r.status}${r.reason ? ` ${r.reason}` : ''}` : 'none';
        m.set(k, (m.get(k) ?? 0) + 1);
      }
      return Object.fromEntries(m);
    };
    const faultedFrames = {
      corrupt: outcomeOf((u) => u.body === 'corrupt'),
      zeroByte: outcomeOf((u) => u.body === 'zero'),
      unreadable: outcomeOf((u) => u.deleteAfterMs !== undefined),
      late: outcomeOf((u) => u.late === true),
      notificationDropped: outcomeOf((u) => u.notification?.kind === 'drop'),
      neverUploaded: Object.fromEntries(
        [...plan.lost.entries()].flatMap(([videoId, frames]) => [...frames].map((f) => outcomes.find((x) => x.videoId === videoId)!.records.find((r) => r.frame === f)?.status ?? 'none')).reduce((m, s) => m.set(s, (m.get(s) ?? 0) + 1), new Map<string, number>()),
      ),
    };
    const workers = stack.launcher.workers();
    const exits = new Map<string, number>();
    for (const w of workers) if (!w.alive) exits.set(w.exitSignal ?? `code ${w.exitCode}`, (exits.get(w.exitSignal ?? `code ${w.exitCode}`) ?? 0) + 1);
    const totals = { ok: 0, late: 0, failed: 0, gap: 0 };
    for (const v of outcomes) for (const r of v.records) totals[r.status as keyof typeof totals]++;

    say('');
    say(`outcome: ${outcome} ${finishedS.toFixed(1)} s after the first upload; records ok ${totals.ok}, late ${totals.late}, failed ${totals.failed}, gap ${totals.gap}`);
    say(`workers started ${workers.length}; exits: ${[...exits.entries()].map(([k, c]) => `${k} ${c}`).join(', ') || 'none'}; janitor scheduled runs ${janitorRuns}, skipped ${janitorSkipped}`);
    say('');
    say(`faults (${faultTotal} in all):`);
    for (const line of table(['fault', 'count'], Object.entries(faults).map(([k, c]) => [k, c]))) say(`  ${line}`);
    say('');
    say('faulted frames ended as:');
    for (const [k, m] of Object.entries(faultedFrames)) say(`  ${k}: ${Object.entries(m).map(([s, c]) => `${s} ${c}`).join(', ') || '-'}`);
    say('');
    say('invariants:');
    for (const line of table(['invariant', 'checked', 'violations'], invariants.map((i) => [i.name, i.checked, i.violations]))) say(`  ${line}`);
    for (const i of invariants) for (const e of i.examples) say(`  ! ${i.name}: ${e}`);
    const violations = invariants.reduce((a, i) => a + i.violations, 0);
    say(`violations: ${violations} (target 0); seed ${o.seed}`);

    const report = {
      command: `npx node bench/chaos.ts --seed ${o.seed}`,
      date: new Date().toISOString(),
      machine: { cpus: cpus().length, model: cpus()[0]?.model ?? '?' },
      seed: o.seed,
      options: { ...o, out: relative(process.cwd(), o.out) },
      tunables: t,
      outcome,
      firstUploadToOutcomeS: finishedS,
      runtimeS: (Date.now() - t0) / 1000,
      records: totals,
      faultTotal,
      faults,
      processFaults: done,
      notifications: n,
      faultedFrames,
      workers: { started: workers.length, exits: Object.fromEntries(exits) },
      janitor: { scheduledRuns: janitorRuns, skipped: janitorSkipped },
      invariants,
      violations,
      videos: outcomes.map((v) => ({
        videoId: v.videoId,
        uploaded: v.uploaded.size,
        records: v.records.length,
        summary: v.summary ? { status: v.summary.status, framesOk: v.summary.framesOk, framesLate: v.summary.framesLate, framesFailed: v.summary.framesFailed, framesGap: v.summary.framesGap, ownerChanges: v.summary.ownerChanges, owners: v.summary.owners } : null,
      })),
    };
    mkdirSync(dirname(o.out), { recursive: true });
    writeFileSync(o.out, `${JSON.stringify(report, null, 2)}\n`);
    say(`wrote ${relative(process.cwd(), o.out)}`);
    return report;
  }
}

if (import.meta.main) {
  const o = parseOptions(process.argv.slice(2));
  if (o) {
    const t0 = Date.now();
    const report = await runChaos(o);
    console.log(`done in ${formatDurationMs(Date.now() - t0)}`);
    process.exitCode = report.violations === 0 && report.outcome === 'complete' ? 0 : 1;
  }
}
