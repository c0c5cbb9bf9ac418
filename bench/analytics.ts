/**
 * Figures for issue 22 (rules and events), written to bench/results/analytics.json:
 * - checkpoint bytes of the rule state with 10 rules (5 lines, 5 zones) and 50 live tracks;
 * - the outbox's cost: events are Puts inside the frame's existing TransactWriteItems, so
 *   +0 calls per frame; the write units each event adds (transactional writes cost 2 WCU
 *   per started KB of item);
 * - counts on a synthetic clip against its ground truth (the same rules run on the truth
 *   tracks), with and without a kill -9 of the owning worker mid-clip, and whether the
 *   two runs' rule events are the same set (ids and contents).
 *
 *   npx node bench/analytics.ts            # all of it (starts the local stack with the vision pipeline)
 *   npx node bench/analytics.ts --pure     # the first two only
 */
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { join } from 'node:path';
import { emptyAnalytics, runRules, withRules, type RuleTotals, type TrackedFrame } from '../core/analytics/rule-engine.ts';
import { validateRules, type RulesDocument } from '../core/analytics/rules.ts';
import { eventId, type EventItem } from '../core/analytics/event-schema.ts';
import { estimatedBytes } from '../core/commit/commit-packing.ts';
import { allEvents } from '../core/analytics/dynamodb/events-reader.ts';
import { allResults, getSummary } from '../core/commit/dynamodb/results-reader.ts';
import { DEFAULT_RULES_KEY } from '../core/analytics/s3/rules-store.ts';
import { frameKey } from '../core/ingest/keys.ts';
import type { Detection } from '../core/ports.ts';
import { ensureDemoModel, generateClip } from '../gpu-worker/vision/index.ts';
import { benchMain, commandLine, createBench, freshStateDir, machine, RESULTS_DIR, sleep, writeResult, type Bench } from './harness/main.ts';
import { startBenchStack, withStack } from './harness/stack.ts';
import { putObject } from './harness/uploader.ts';

function rulesOf(doc: unknown): RulesDocument {
  const r = validateRules(doc);
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.rules;
}

/** 10 rules over a 1280x720 image: 5 slanted lines, 5 overlapping zones with dwell. */
const TEN_RULES = rulesOf({
  fps: 25,
  lines: Array.from({ length: 5 }, (_, i) => ({ id: `line-${i}`, a: [0, 120 * (i + 1)], b: [1280, 100 * (i + 1)], classes: ['person', 'car'] })),
  zones: Array.from({ length: 5 }, (_, i) => ({ id: `zone-${i}`, polygon: [[200 * i, 0], [200 * i + 400, 0], [200 * i + 400, 720], [200 * i, 720]], dwellSeconds: 2 })),
});

/** 50 tracks wandering over the image for `frames` frames (seeded). */
function wander(tracks: number, frames: number): TrackedFrame[] {
  let s = 2026;
  const rnd = () => ((s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const p = Array.from({ length: tracks }, () => [rnd() * 1280, rnd() * 720, (rnd() - 0.5) * 10, (rnd() - 0.5) * 10]);
  return Array.from({ length: frames }, (_, frame) => ({
    frame,
    detections: p.map((q, i): Detection => {
      q[0] = Math.min(1270, Math.max(10, q[0]! + q[2]!));
      q[1] = Math.min(710, Math.max(30, q[1]! + q[3]!));
      return { trackId: 1000 + i, label: i % 2 ? 'person' : 'car', score: 0.9, box: [q[0]! - 10, q[1]! - 30, q[0]! + 10, q[1]!] };
    }),
  }));
}

function pureFigures() {
  const run = runRules(withRules(emptyAnalytics(), 'video:"0123456789abcdef0123456789abcdef"', TEN_RULES), wander(50, 500));
  const state = run.state;
  // The worst case: every track on a side of every line, inside every zone, every dwell raised.
  const worst = structuredClone(state) as typeof state;
  for (const t of Object.values(worst.tracks)) {
    t.s = Object.fromEntries(TEN_RULES.lines.map((l) => [l.id, 1 as const]));
    t.z = Object.fromEntries(TEN_RULES.zones.map((z) => [z.id, 123_456]));
    t.d = TEN_RULES.zones.map((z) => z.id);
  }
  const event: EventItem = {
    videoId: 'camera-entrance-0001',
    eventId: eventId({ frame: 123_456, kind: 'zone.dwell', ruleId: 'zone-3', trackId: 1042 }),
    kind: 'zone.dwell',
    frame: 123_456,
    ruleId: 'zone-3',
    trackId: 1042,
    label: 'person',
    detail: { seconds: 2.04, enteredFrame: 123_405 },
    token: 17,
    atMs: Date.now(),
  };
  const eventBytes = estimatedBytes(event);
  return {
    checkpoint: {
      rules: 10,
      tracks: Object.keys(state.tracks).length,
      analyticsStateBytes: estimatedBytes(state),
      rulesDocumentBytes: estimatedBytes(state.rules),
      worstCaseStateBytes: estimatedBytes(worst),
      shareOfMaxCheckpointBytes: Number((estimatedBytes(worst) / 300_000).toFixed(4)),
      eventsIn500Frames: run.events.length,
    },
    outbox: {
      addedCallsPerFrame: 0,
      why: 'each event is one Put in the TransactWriteItems that commits its frame (core/leases/dynamodb/video-commit.ts); rules re-checks are 1-2 conditional GETs per video per rulesRefreshSeconds, not per frame',
      eventItemBytes: eventBytes,
      writeUnitsPerEvent: 2 * Math.ceil(eventBytes / 1024),
      transactionItemsPerEvent: 1,
    },
  };
}

function totalsOf(frames: readonly TrackedFrame[], rules: RulesDocument): RuleTotals {
  return runRules(withRules(emptyAnalytics(), 'truth', rules), frames).state.totals;
}

/** JSON with object keys sorted, for comparing totals whatever order their classes first appeared in. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => (x && typeof x === 'object' && !Array.isArray(x) ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b))) : x));
}

const CLIP_RULES = rulesOf({
  fps: 10,
  lines: [{ id: 'middle', a: [160, 0], b: [160, 240] }],
  zones: [{ id: 'left', polygon: [[0, 0], [160, 0], [160, 240], [0, 240]], dwellSeconds: 1 }],
});

async function clipFigures(bench: Bench, clips: number) {
  const modelUri = await ensureDemoModel();
  const started = await startBenchStack({ stateDir: freshStateDir('analytics'), tunables: { slotCount: 2, videosPerSlot: 1, modelUri }, workerEnv: { FRAME_PROCESSOR: 'vision' } });
  return withStack(started, bench, async (stack) => {
    await putObject(stack, DEFAULT_RULES_KEY, JSON.stringify(CLIP_RULES));
    const rows: unknown[] = [];
    for (let seed = 1; seed <= clips; seed++) {
      const clip = await generateClip({ seed, frames: 80, objects: 6, crossings: false, format: 'png' });
      const truth = totalsOf(clip.groundTruth.map((g) => ({ frame: g.frame, detections: g.objects.map((o) => ({ trackId: o.id, label: o.label, score: 1, box: o.box })) })), CLIP_RULES);
      const ids = [`an-${seed}-steady-${Date.now()}`, `an-${seed}-killed-${Date.now()}`];
      for (const v of ids) {
        for (const f of clip.frames) await putObject(stack, frameKey(v, f.frame, 'png'), f.image);
        await putObject(stack, `frames/${v}/_end`, String(clip.frames.length - 1));
      }
      const source = { ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable };
      for (;;) {
        if ((await allResults(source, ids[1]!)).length >= 20) break;
        await sleep(50);
      }
      const lease = await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: `video#${ids[1]}` }, ConsistentRead: true }));
      const victim = stack.launcher.workers().find((w) => w.alive && w.workerId === lease.Item?.owner);
      if (victim) stack.launcher.kill({ pid: victim.pid }, 'SIGKILL');
      for (const v of ids) {
        for (let i = 0; (await getSummary(source, v))?.status !== 'complete'; i++) {
          if (i > 2400) throw new Error(`${v} did not complete`);
          await sleep(100);
        }
      }
      const [steady, killed] = await Promise.all(ids.map(async (v) => ({ summary: await getSummary(source, v), events: await allEvents(stack.clients.ddb, stack.wiring.eventsTable, v) })));
      const ruleEvents = (es: readonly EventItem[]) => JSON.stringify(es.filter((e) => e.kind.startsWith('line.') || e.kind.startsWith('zone.')).map(({ eventId: id, detail, label, trackId }) => ({ id, detail, label, trackId })));
      const row = {
        seed,
        truth,
        uninterrupted: steady!.summary?.ruleTotals ?? null,
        killed: killed!.summary?.ruleTotals ?? null,
        killedWorkerFound: victim !== undefined,
        ownerChangesKilled: killed!.summary?.ownerChanges,
        ruleEventsUninterrupted: steady!.events.filter((e) => e.kind.startsWith('line.') || e.kind.startsWith('zone.')).length,
        eventSetsEqual: ruleEvents(steady!.events) === ruleEvents(killed!.events),
        totalsEqual: canonical(steady!.summary?.ruleTotals) === canonical(killed!.summary?.ruleTotals),
        uninterruptedMatchesTruth: canonical(steady!.summary?.ruleTotals ?? { lines: {}, zones: {} }) === canonical(truth),
        killedMatchesTruth: canonical(killed!.summary?.ruleTotals ?? { lines: {}, zones: {} }) === canonical(truth),
      };
      bench.say(`${bench.clock()}  clip ${seed}: ${JSON.stringify(row)}`);
      rows.push(row);
    }
    return rows;
  });
}

export async function runAnalytics(o: { pure: boolean; clips: number }, bench: Bench = createBench()) {
  const pure = pureFigures();
  bench.say(JSON.stringify(pure, null, 2));
  const clips = o.pure ? undefined : await clipFigures(bench, o.clips);
  const result = { command: commandLine('analytics.ts'), machine: machine(), ...pure, ...(clips ? { clips } : {}) };
  writeResult(join(RESULTS_DIR, o.pure ? 'analytics-pure.json' : 'analytics.json'), result, bench.say);
  return result;
}

if (import.meta.main) {
  const pure = process.argv.includes('--pure');
  const clipsArg = process.argv.indexOf('--clips');
  const clips = clipsArg > 0 ? Number(process.argv[clipsArg + 1]) : 3;
  await benchMain('analytics', async (bench) => {
    await runAnalytics({ pure, clips }, bench);
    return 0;
  });
}
