/**
 * Failover time at default settings (slot TTL 15 s, heartbeat 5 s, slot-queue visibility
 * 5 s), on the local stack with real worker processes.
 *
 *  - kill -9 of the worker that owns a video mid-stream: the janitor, run at once on the
 *    worker's exit (as on an ECS task-stopped event), expires its slot lease and launches
 *    the replacement, which claims at once. Target: median ≤ 5 s, max ≤ 8 s.
 *  - SIGSTOP (alive but silent): nothing reports it, so the lease must run out; the
 *    replacement takes over after the TTL plus the clock-skew tolerance (decision 27: a
 *    silent owner's lease is claimed only `clockSkewToleranceMs` after it ran out by the
 *    claimer's clock). Target: ≤ TTL + tolerance + 3 s (23 s at the defaults); the lease
 *    runs out 10-15 s after the pause, by where the heartbeat cycle stood. The paused
 *    worker is then resumed: it must write nothing more (fenced) and exit with code 3.
 *
 * Measured: from the signal to the first result committed by the new owner (its
 * `committedAtMs`), and per run frames lost (an uploaded frame without an `ok` result)
 * and frames doubled (a frame that went through the video's state twice: the stats
 * processor's counter, `trackId`, runs ahead of the number of frames). A breakdown per
 * run: exit noticed, replacement spawned, slot claimed, first result.
 *
 *   npx node bench/failover.ts [kills=10] [pauses=3]
 */
import { endMarkerKey, frameKey } from '../core/ingest/keys.ts';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { allResults } from '../core/commit/dynamodb/results-reader.ts';
import type { FrameResultItem } from '../core/commit/results.ts';
import sharp from 'sharp';
import { join } from 'node:path';
import { benchMain, createBench, freshStateDir, RESULTS_DIR, sleep, writeResult, type Bench } from './harness/main.ts';
import { startBenchStack, withStack } from './harness/stack.ts';
import { putObject } from './harness/uploader.ts';

const framesPerVideo = 60;
const perBatchDelayMs = 100;

interface Run {
  readonly kind: 'kill -9' | 'SIGSTOP';
  readonly run: number;
  readonly slot: number;
  /** Signal to the first result committed by the new owner. */
  readonly failoverSeconds: number;
  readonly lost: number;
  readonly doubled: number;
  /** Milliseconds after the signal. */
  readonly breakdown: {
    /**
     * The victim's last committed batch (its `committedAtMs`, taken when that batch began;
     * negative: before the signal). The frames it received next, and their FIFO group, stay
     * hidden until about this + batch time + visibility timeout.
     */
    readonly victimLastBatchMs: number | null;
    /** When the victim's lease would have run out on its own. */
    readonly oldLeaseExpiresMs: number;
    readonly exitNoticedMs: number | null;
    readonly replacementSpawnedMs: number | null;
    readonly slotClaimedMs: number;
    readonly firstResultMs: number;
  };
  /** SIGSTOP only: the paused worker's exit code after SIGCONT, and results it wrote after the pause. */
  readonly pausedExitCode?: number | null;
  readonly writesAfterPause?: number;
}

function lostAndDoubled(r: readonly FrameResultItem[]): { lost: number; doubled: number } {
  const ok = r.filter((x) => x.status === 'ok').sort((a, b) => a.frame - b.frame);
  const okFrames = new Set(ok.map((x) => x.frame));
  let lost = 0;
  for (let f = 0; f < framesPerVideo; f++) if (!okFrames.has(f)) lost++;
  // Each frame advances the video's counter once: a counter ahead of the frames means a frame went through twice.
  const lastCounter = Number(ok.at(-1)?.detections[0]?.trackId ?? 0);
  const doubled = Math.max(0, lastCounter - ok.length) + (r.length - new Set(r.map((x) => x.frame)).size);
  return { lost, doubled };
}

function stats(xs: readonly number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  return { runs: s.length, minSeconds: s[0], medianSeconds: Number(median.toFixed(3)), maxSeconds: s.at(-1) };
}

/** Runs `kills` kill -9 and `pauses` SIGSTOP failovers one after another, prints each, writes bench/results/failover.json. */
export async function runFailover(o: { kills: number; pauses: number }, bench: Bench = createBench()) {
  const { kills, pauses } = o;
  const started = await startBenchStack({
    stateDir: freshStateDir('failover'),
    // Default tunables: no overrides.
    workerEnv: { FRAME_PROCESSOR: 'stats', STATS_PROCESSOR_DELAY_MS: String(perBatchDelayMs) },
  });
  const t = started.stack.tunables;
  const image = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 90, g: 90, b: 200 } } }).jpeg().toBuffer();
  const runs = await withStack(started, bench, async (stack) => {
    const rows = (videoId: string) => allResults({ ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable }, videoId);
    const getItem = async (pk: string) =>
      (await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk }, ConsistentRead: true }))).Item ?? {};

    async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs: number, everyMs = 50): Promise<T> {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const v = await fn();
        if (v !== undefined) return v;
        if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
        await sleep(everyMs);
      }
    }

    async function uploadVideo(videoId: string): Promise<void> {
      for (let f = 0; f < framesPerVideo; f++) await putObject(stack, frameKey(videoId, f), image);
      await putObject(stack, endMarkerKey(videoId), String(framesPerVideo - 1));
    }

    async function one(kind: Run['kind'], run: number): Promise<Run> {
      const videoId = `failover-${kind === 'kill -9' ? 'kill' : 'stop'}-${run}-${Date.now()}`;
      await uploadVideo(videoId);
      await waitFor('10 results', async () => ((await rows(videoId)).length >= 10 ? true : undefined), 120_000, 100);
      const lease = await getItem(`video#${videoId}`);
      const owner = lease.owner as string;
      const slot = Number(lease.pinnedSlot);
      const victim = stack.launcher.workers().find((w) => w.alive && w.workerId === owner);
      if (!victim) throw new Error(`owner ${owner} of ${videoId} is not a live local worker`);
      const before = await getItem(`slot#${slot}`);
      if (before.owner !== owner) throw new Error(`slot ${slot} is owned by ${String(before.owner)}, not ${owner}`);
      const signalAtMs = Date.now();
      stack.launcher.kill({ pid: victim.pid }, kind === 'kill -9' ? 'SIGKILL' : 'SIGSTOP');
      const first = await waitFor(
        'a result from the new owner',
        async () => (await rows(videoId)).filter((x) => x.worker !== owner).sort((a, b) => a.committedAtMs - b.committedAtMs)[0],
        120_000,
      );
      const after = await getItem(`slot#${slot}`);
      let pausedExitCode: number | null | undefined;
      let writesAfterPause: number | undefined;
      if (kind === 'SIGSTOP') {
        // Its last renewal may still have been in flight when it froze: read the lease it ended with.
        stack.launcher.kill({ pid: victim.pid }, 'SIGCONT');
        pausedExitCode = (await stack.launcher.waitForExit(victim.pid))?.exitCode;
      }
      await waitFor('every frame', async () => ((await rows(videoId)).length >= framesPerVideo ? true : undefined), 120_000, 200);
      await sleep(300);
      const r = await rows(videoId);
      if (kind === 'SIGSTOP') {
        // Nothing it held may be written after the successor began: all its frames come before the successor's first.
        const firstNewFrame = Math.min(...r.filter((x) => x.worker !== owner).map((x) => x.frame));
        writesAfterPause = r.filter((x) => x.worker === owner && x.frame >= firstNewFrame).length;
      }
      const successor = stack.launcher.workers().find((w) => w.workerId === first.worker);
      const victimInfo = stack.launcher.workers().find((w) => w.pid === victim.pid);
      const victimCommits = r.filter((x) => x.worker === owner && x.committedAtMs <= signalAtMs).map((x) => x.committedAtMs);
      const rel = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : ms - signalAtMs);
      const { lost, doubled } = lostAndDoubled(r);
      return {
        kind,
        run,
        slot,
        failoverSeconds: (first.committedAtMs - signalAtMs) / 1000,
        lost,
        doubled,
        breakdown: {
          victimLastBatchMs: victimCommits.length > 0 ? Math.max(...victimCommits) - signalAtMs : null,
          oldLeaseExpiresMs: Number(before.expiresAtMs) - signalAtMs,
          exitNoticedMs: kind === 'kill -9' ? rel(victimInfo?.exitedAtMs) : null,
          replacementSpawnedMs: rel(successor?.startedAtMs),
          slotClaimedMs: Number(after.claimedAtMs) - signalAtMs,
          firstResultMs: first.committedAtMs - signalAtMs,
        },
        ...(kind === 'SIGSTOP' ? { pausedExitCode, writesAfterPause } : {}),
      };
    }

    const runs: Run[] = [];
    const print = (m: Run) => {
      const b = m.breakdown;
      const f = (x: number | null) => (x === null ? '-' : (x / 1000).toFixed(2));
      bench.say(
        `${m.kind} ${m.run}: failover ${m.failoverSeconds.toFixed(2)} s, lost ${m.lost}, doubled ${m.doubled}` +
          ` | victim's last batch ${f(b.victimLastBatchMs)}, old lease ends ${f(b.oldLeaseExpiresMs)}, exit ${f(b.exitNoticedMs)},` +
          ` spawned ${f(b.replacementSpawnedMs)}, claimed ${f(b.slotClaimedMs)}, first result ${f(b.firstResultMs)}` +
          (m.kind === 'SIGSTOP' ? ` | paused worker: exit ${m.pausedExitCode}, writes after pause ${m.writesAfterPause}` : ''),
      );
    };
    for (let k = 1; k <= kills; k++) {
      runs.push(await one('kill -9', k));
      print(runs.at(-1)!);
    }
    for (let p = 1; p <= pauses; p++) {
      runs.push(await one('SIGSTOP', p));
      print(runs.at(-1)!);
    }
    return runs;
  });
  const killRuns = runs.filter((m) => m.kind === 'kill -9');
  const stopRuns = runs.filter((m) => m.kind === 'SIGSTOP');
  const kill = stats(killRuns.map((m) => m.failoverSeconds));
  const stop = stats(stopRuns.map((m) => m.failoverSeconds));
  // A silent owner's lease is claimed the skew tolerance after it ran out (decision 27).
  const sigstopTargetSeconds = t.slotLeaseTtlSeconds + t.clockSkewToleranceMs / 1000 + 3;
  const summary = {
    settings: {
      slotLeaseTtlSeconds: t.slotLeaseTtlSeconds,
      heartbeatIntervalSeconds: t.heartbeatIntervalSeconds,
      slotQueueVisibilitySeconds: t.slotQueueVisibilitySeconds,
      clockSkewToleranceMs: t.clockSkewToleranceMs,
      reorderWaitMs: t.reorderWaitMs,
      processor: `stats, ${perBatchDelayMs} ms per batch`,
      framesPerVideo,
    },
    kill9: {
      ...kill,
      target: 'median <= 5 s, max <= 8 s',
      withinTarget: kill.runs > 0 && kill.medianSeconds <= 5 && kill.maxSeconds! <= 8,
      framesLost: killRuns.reduce((a, m) => a + m.lost, 0),
      framesDoubled: killRuns.reduce((a, m) => a + m.doubled, 0),
    },
    sigstop: {
      ...stop,
      targetSeconds: sigstopTargetSeconds,
      withinTarget: stopRuns.every((m) => m.failoverSeconds <= sigstopTargetSeconds),
      framesLost: stopRuns.reduce((a, m) => a + m.lost, 0),
      framesDoubled: stopRuns.reduce((a, m) => a + m.doubled, 0),
      writesAfterPause: stopRuns.reduce((a, m) => a + (m.writesAfterPause ?? 0), 0),
      pausedExitCodes: stopRuns.map((m) => m.pausedExitCode),
    },
    runs,
  };
  writeResult(join(RESULTS_DIR, 'failover.json'), summary, bench.say);
    bench.say(JSON.stringify({ ...summary, runs: undefined }, null, 2));
    return summary;
}

if (import.meta.main) {
  const kills = Number(process.argv[2] ?? 10);
  const pauses = Number(process.argv[3] ?? 3);
  await benchMain('failover', async (bench) => {
    await runFailover({ kills, pauses }, bench);
    return 0;
  });
}
