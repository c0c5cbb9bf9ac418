/**
 * Runs one plan in the simulated world and checks it (lab/sim/): the deterministic
 * simulation of the whole pipeline. `runSeed(seed)` draws the plan from the seed;
 * `runPlan(plan)` runs a given (e.g. shrunk) plan. The same seed gives the same trace,
 * event for event.
 *
 * The oracle (bench/harness/invariants.ts, the chaos run's, checked at quiescence):
 * every due frame has exactly one record; no frame that exists ends as a gap; tokens
 * grow and no two tenures overlap; summaries equal their records; track IDs equal an
 * uninterrupted run's; every video with an end marker completes; no message ends in a
 * DLQ; each segment's frames are ok where its bytes decode and failed with the decoder's
 * reason past that. The lease twin's own check (a token or epoch that went down) is a
 * violation too.
 */
import { createHash } from 'node:crypto';
import { emptyAnalytics, runRules, withRules, type TrackedFrame } from '../../core/analytics/rule-engine.ts';
import { validateRules } from '../../core/analytics/rules.ts';
import { allEvents } from '../../core/analytics/dynamodb/events-reader.ts';
import { SIM_RULES } from './media.ts';
import { allResults, getSummary } from '../../core/commit/dynamodb/results-reader.ts';
import { rng } from '../../core/random.ts';
import { parseSourceKey } from '../../core/ingest/segment-keys.ts';
import { checkInvariants, type InvariantResult, type VideoOutcome } from '../../bench/harness/invariants.ts';
import { SimClock } from './clock.ts';
import { runOperator } from './operator.ts';
import { makePlan, type PlanOptions, type SimEvent, type SimPlan, type SimWorldOptions } from './plan.ts';
import type { Tunables } from '../../core/config.ts';
import { SimWorld, type SimLatencies, type TraceLine } from './world.ts';

export interface SimResult {
  readonly seed: number;
  readonly plan: SimPlan;
  readonly violations: readonly InvariantResult[];
  readonly trace: readonly TraceLine[];
  /** Why the run ended: all settled, or its simulated deadline. */
  readonly ended: 'settled' | 'deadline' | 'quiescent';
  readonly simulatedMs: number;
  readonly steps: number;
  /** Fault kinds the plan applied, by label. */
  readonly faults: Readonly<Record<string, number>>;
  /** A digest of the final records, summaries and trace: equal digests, equal runs. */
  readonly digest: string;
}

export interface SimRunOptions extends PlanOptions {
  /** Simulated time allowed after the last planned event for everything to settle. @default 15 min */
  readonly settleMs?: number;
  /** What AWS's own steps take (bench/failover-aws.ts: an AWS timeline). @default DEFAULT_LATENCIES */
  readonly latencies?: SimLatencies;
  /** Simulated time each worker's batch takes (lab/sim/media.ts SimProcessor). @default 0 */
  readonly processBatchMs?: number;
  /** Tunables over the simulation's (a bench's lease and heartbeat). */
  readonly tunables?: Partial<Tunables>;
  /** The fleet's failover options, over the plan's (a bench's hot spare or standbys). */
  readonly world?: SimWorldOptions;
  /** Called once the world exists, on the simulated clock (a bench schedules its own faults here). */
  readonly onWorld?: (world: SimWorld) => void;
  /** Called after the oracle's verdict, before the clock goes back (a bench reads the records here). */
  readonly inspect?: (world: SimWorld) => Promise<void>;
}

export async function runSeed(seed: number, o: SimRunOptions = {}): Promise<SimResult> {
  return runPlan(makePlan(seed, rng(seed), o), o);
}

export async function runPlan(plan: SimPlan, o: SimRunOptions = {}): Promise<SimResult> {
  const clock = SimClock.install(plan.seed);
  try {
    return await simulate(plan, clock, o);
  } finally {
    clock.uninstall();
  }
}

async function simulate(plan: SimPlan, clock: SimClock, o: SimRunOptions): Promise<SimResult> {
  const worldDraw = rng(plan.seed * 31 + 7);
  const fleet = { ...plan.world, ...o.world };
  const world = new SimWorld({
    draw: worldDraw,
    slots: plan.slots,
    tunables: { firstFrameNumber: 0, ...o.tunables },
    ...(fleet.hotSpare ? { hotSpare: true } : {}),
    ...(fleet.standbys ? { standbys: fleet.standbys } : {}),
    faults: plan.aws,
    faultDraw: rng(plan.seed * 17 + 3),
    latencyDraw: rng(plan.seed * 13 + 11),
    ...(o.latencies ? { latencies: o.latencies } : {}),
    ...(o.processBatchMs ? { processBatchMs: o.processBatchMs } : {}),
    ...(plan.doubtWindows ? { doubtWindows: plan.doubtWindows } : {}),
  });
  world.startJanitor();
  o.onWorld?.(world);
  const faults: Record<string, number> = {};
  // The fleet's options count as kinds of the seed's coverage.
  if (fleet.hotSpare) faults['hot-spare'] = 1;
  if (fleet.standbys) faults.standby = fleet.standbys;
  let fired = 0;
  let applying = 0;
  // Events not fired yet, by their timer: a reactive fault fires one early (at most once).
  const waiting = new Map<SimEvent, ReturnType<typeof setTimeout>>();
  const fire = (e: SimEvent, note?: string) => {
    const timer = waiting.get(e);
    if (timer === undefined) return;
    clearTimeout(timer);
    waiting.delete(e);
    if (note) world.note(note);
    fired++;
    for (const f of e.faults) faults[f] = (faults[f] ?? 0) + 1;
    // An event is done when what it started has returned (an operator's command takes many calls).
    applying++;
    void apply(world, e, { race: raceReplay }).finally(() => applying--);
  };
  for (const e of plan.events) waiting.set(e, setTimeout(() => fire(e), e.atMs));
  // A doubt window opened: its withheld upload is put now, so its message comes while the commit is in doubt.
  world.onDoubtOpened = (w) => {
    const e = plan.events.find((x): x is Extract<SimEvent, { kind: 'upload' }> => x.kind === 'upload' && x.onDoubt === true && x.videoId === w.videoId && firstFrameOf(x.key) === w.frame);
    faults['doubt-window-struck'] = (faults['doubt-window-struck'] ?? 0) + 1;
    if (e) fire(e, `doubt window: ${e.key} put now`);
  };
  // A racing replay, before its first delete: the video's camera uploads its next object now
  // (or S3 notifies its last one again), and the replay waits until a worker has taken it.
  const raceReplay = async (videoId: string): Promise<void> => {
    faults['replay-race-reached'] = (faults['replay-race-reached'] ?? 0) + 1;
    // The object withheld for the race, else the video's next one still to come.
    const pending = plan.events.filter((x): x is Extract<SimEvent, { kind: 'upload' }> => x.kind === 'upload' && x.videoId === videoId && waiting.has(x)).sort((a, b) => firstFrameOf(a.key) - firstFrameOf(b.key));
    const next = pending.find((x) => x.onRace) ?? pending[0];
    let key: string;
    if (next) {
      key = next.key;
      fire(next, `replay race: ${key} uploaded before the replay's first delete`);
    } else {
      const last = world.s3.keys(world.bucket).filter((k) => firstFrameOf(k) >= 0 && k.startsWith(`frames/${videoId}/`)).sort((a, b) => firstFrameOf(a) - firstFrameOf(b)).at(-1);
      if (!last) return;
      key = last;
      const head = world.s3.head(world.bucket, key);
      world.note(`replay race: S3 notifies ${key} again before the replay's first delete`);
      world.notify(key, head?.eTag ?? '', head?.size ?? 1);
    }
    // Until the new owner's position passes the object (it has met what stands below it), or 30 s.
    const frame = firstFrameOf(key);
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, 250));
      const lease = await world.leases.getVideo(videoId).catch(() => undefined);
      if ((lease?.checkpoint.sequencer.nextFrame ?? -1) > frame) {
        faults['replay-race-met'] = (faults['replay-race-met'] ?? 0) + 1;
        return;
      }
    }
    if (process.env.SIM_DEBUG === '1') process.stderr.write(`race not met: ${JSON.stringify(await world.leases.getVideo(videoId))}\n`.slice(0, 1500));
  };

  // Settled: every event fired, the ingest queue empty, every end-marked video complete,
  // every other one with as many records as frames due, and no slot message waiting.
  // Checked every 5 s of simulated time.
  let settled = false;
  const checker = setInterval(() => {
    void (async () => {
      if (fired < plan.events.length || applying > 0 || world.ingest.length > 0 || world.notificationsInFlight > 0) return;
      const summaries = await Promise.all(plan.videos.map((v) => getSummary({ ddb: world.leasesTwin.ddb, resultsTable: world.wiring.resultsTable }, v.videoId)));
      const records = (s: (typeof summaries)[number]) => (s ? s.framesOk + (s.framesLate ?? 0) + s.framesFailed + s.framesGap : 0);
      if (!plan.videos.every((v, i) => (v.endMarked ? summaries[i]?.status === 'complete' : records(summaries[i]) >= v.lastFrame + 1))) return;
      const depths = await Promise.all(Array.from({ length: plan.slots }, (_, s) => world.queues.depth(s).catch(() => ({ visible: 1, inFlight: 0 }))));
      if (depths.some((d) => d.visible + d.inFlight > 0)) return;
      settled = true;
    })().catch(() => undefined);
  }, 5_000);
  const deadline = Date.now() + plan.lastEventMs + (o.settleMs ?? 15 * 60_000);
  const why = await clock.runUntil(() => settled, deadline);
  clearInterval(checker);
  await clock.drive(world.stop());
  // Let running workers drain (a minute of simulated time at most; a killed one never ends).
  await clock.runUntil(() => world.runningTasks().every((t) => t.worker === undefined), Date.now() + 60_000);

  const violations = await clock.drive(judge(world, plan));
  if (o.inspect) await clock.drive(o.inspect(world));
  if (process.env.SIM_DUMP === '1') {
    const source = { ddb: world.leasesTwin.ddb, resultsTable: world.wiring.resultsTable };
    for (const v of plan.videos) {
      const recs = await clock.drive(allResults(source, v.videoId));
      process.stderr.write(`${v.videoId}: ${recs.map((r) => `${r.frame}:${r.status}${r.reason ? `(${r.reason})` : ''}/t${r.token}`).join(' ')}\n`);
      process.stderr.write(`${v.videoId} summary: ${JSON.stringify(await clock.drive(getSummary(source, v.videoId)))}\n`);
      process.stderr.write(`${v.videoId} lease: ${JSON.stringify(await clock.drive(world.leases.getVideo(v.videoId)))}\n`.slice(0, 3000));
    }
    for (const [k, n] of world.warnings) process.stderr.write(`${n}x ${k}\n`);
  }
  const digestOf = await clock.drive(digest(world, plan));
  if (process.env.SIM_DEBUG === '1') process.stderr.write(`sim: seed ${plan.seed} ended ${why} at ${world.elapsedMs} ms\n`);
  return {
    seed: plan.seed,
    plan,
    violations: violations.filter((v) => v.violations > 0),
    trace: world.trace,
    ended: why === 'done' ? 'settled' : why,
    simulatedMs: world.elapsedMs,
    steps: clock.steps,
    faults,
    digest: digestOf,
  };
}

/** The first frame a source key covers (-1 for any other key). */
function firstFrameOf(key: string): number {
  const p = parseSourceKey(key);
  return p.kind === 'source' ? p.firstFrame : -1;
}

async function apply(world: SimWorld, e: SimEvent, hooks: { race: (videoId: string) => Promise<void> }): Promise<void> {
  switch (e.kind) {
    case 'upload': {
      const { eTag, size } = world.put(e.key, Buffer.from(e.body, 'latin1'), e.metadata);
      if (e.notify === 'lost') world.note(`notification of ${e.key} lost`);
      else world.notify(e.key, eTag, size, e.notify === 'late' ? { delayMs: 5_000 + Math.floor(Math.random() * 85_000) } : {});
      if (e.notify === 'duplicated') world.notify(e.key, eTag, size);
      return;
    }
    case 'end': {
      const key = `frames/${e.videoId}/_end`;
      const { eTag, size } = world.put(key, String(e.lastFrame));
      if (e.notify === 'lost') world.note(`notification of ${key} lost`);
      else world.notify(key, eTag, size, e.notify === 'late' ? { delayMs: 5_000 + Math.floor(Math.random() * 85_000) } : {});
      if (e.notify === 'duplicated') world.notify(key, eTag, size);
      return;
    }
    case 'kill':
    case 'pause': {
      // A standby can be lost too (a kill takes its whole task); it is replaced (decision 75).
      const running = e.kind === 'kill' ? [...world.runningTasks(), ...world.runningStandbys()] : world.runningTasks();
      if (running.length === 0) {
        world.note(`${e.kind}: no task running`);
        return;
      }
      const task = running[Math.floor(e.pick * running.length)]!;
      if (e.kind === 'kill') world.kill(task);
      else world.pause(task, e.forMs ?? 5_000);
      return;
    }
    case 'redrive': {
      world.note('operator: redrive');
      const out = await runOperator(world, { kind: 'redrive' });
      world.note(`operator: redrive: ${out.said.slice(0, 300)}`);
      return;
    }
    default: {
      world.note(`operator: ${e.kind} ${e.videoId}${e.kind === 'replay' ? ` --from ${e.fromFrame}` : ''}`);
      const out = await runOperator(world, e.kind === 'replay' ? { kind: 'replay', videoId: e.videoId, fromFrame: e.fromFrame, ...(e.race ? { beforeFirstDelete: () => hooks.race(e.videoId) } : {}) } : { kind: e.kind, videoId: e.videoId });
      if (out.replayedFrom !== undefined) world.replayedBelow.set(e.videoId, Math.min(world.replayedBelow.get(e.videoId) ?? Infinity, out.replayedFrom));
      world.note(`operator: ${e.kind} ${e.videoId}: ${out.said.slice(0, 300)}`);
    }
  }
}

async function judge(world: SimWorld, plan: SimPlan): Promise<InvariantResult[]> {
  const source = { ddb: world.leasesTwin.ddb, resultsTable: world.wiring.resultsTable };
  const keys = world.s3.keys(world.bucket);
  const outcomes: VideoOutcome[] = [];
  for (const v of plan.videos) {
    const uploaded = new Set<number>();
    const inS3 = new Set<number>();
    for (const key of keys) {
      const p = parseSourceKey(key);
      if (p.kind !== 'source' || p.videoId !== v.videoId) continue;
      inS3.add(p.firstFrame);
    }
    if (v.kind === 'jpeg') {
      for (const f of inS3) uploaded.add(f);
    } else {
      for (const s of v.segments) {
        if (!inS3.has(s.firstFrame)) continue;
        for (let f = s.firstFrame; f < s.firstFrame + s.frames; f++) {
          uploaded.add(f);
          inS3.add(f);
        }
      }
    }
    const neverUploaded = new Set<number>();
    for (let f = 0; f <= Math.max(v.lastFrame, v.plannedLastFrame ?? v.lastFrame); f++) if (!uploaded.has(f)) neverUploaded.add(f);
    outcomes.push({
      videoId: v.videoId,
      uploaded,
      neverUploaded,
      records: await allResults(source, v.videoId),
      summary: await getSummary(source, v.videoId),
      inS3,
      endMarked: v.endMarked,
      segments: v.segments.filter((s) => inS3.has(s.firstFrame)),
      ...(v.endMovedFrom !== undefined ? { endMovedFrom: v.endMovedFrom } : {}),
      arrivedLate: arrivedLate(plan, v),
      ...(world.replayedBelow.has(v.videoId) ? { keptByReplayBelow: world.replayedBelow.get(v.videoId)! } : {}),
    });
  }
  const dlq: Record<string, number> = { ingest: world.ingestDlq.length };
  for (let s = 0; s < plan.slots; s++) dlq[`slot-${s}`] = await world.queues.dlqDepth(s);
  const results = checkInvariants(outcomes, dlq);
  results.push(...(await rulesInvariants(world, outcomes.filter((o) => !replayedPastAnEarlierEnd(world, plan, o.videoId)))));
  const twin = world.leasesTwin.violations;
  results.push({ name: 'tokens and epochs only grow (the lease twin)', checked: 1, violations: twin.length, examples: twin.slice(0, 10) });
  return results;
}

/**
 * Rule events and totals equal an uninterrupted run's: the rules (lab/sim/media.ts
 * SIM_RULES) run over the video's `ok` records in frame order (what an in-order run's
 * tracker fed them) give exactly the rule events the events table holds, and the totals the
 * summary holds. Late frames run no rules; failed frames and gaps have no detections.
 */
/**
 * A video whose end marker moved below frames already recorded `ok`, and which an operator
 * replayed: the replay rebuilds the rules from the frames the marker admits (frames past it
 * are rejected, so never re-run), while the `ok` records past it stay and an in-order run over
 * them counts them. The contract says so (README, results contract): its rule totals and events
 * are not compared; every other invariant holds for it.
 */
function replayedPastAnEarlierEnd(world: SimWorld, plan: SimPlan, videoId: string): boolean {
  const v = plan.videos.find((x) => x.videoId === videoId);
  return v !== undefined && world.replayedBelow.has(videoId) && v.lastFrame < (v.plannedLastFrame ?? v.lastFrame);
}

async function rulesInvariants(world: SimWorld, outcomes: readonly VideoOutcome[]): Promise<InvariantResult[]> {
  const eventsEqual = { name: "rule events equal an uninterrupted run's", checked: 0, violations: 0, examples: [] as string[] };
  const totalsEqual = { name: "rule totals equal an uninterrupted run's", checked: 0, violations: 0, examples: [] as string[] };
  const rules = validateRules(SIM_RULES);
  if (!rules.ok) throw new Error(`the simulation's rules are invalid: ${rules.errors.join('; ')}`);
  for (const v of outcomes) {
    const frames: TrackedFrame[] = [...v.records].filter((r) => r.status === 'ok').sort((a, b) => a.frame - b.frame).map((r) => ({ frame: r.frame, detections: r.detections, ...(r.ptsMs !== undefined ? { ptsMs: r.ptsMs } : {}) }));
    const want = runRules(withRules(emptyAnalytics(), 'sim', rules.rules), frames);
    const key = (e: { kind: string; frame: number; ruleId?: string; trackId?: number; detail?: Readonly<Record<string, unknown>> }) => `${e.kind} ${e.ruleId} frame ${e.frame} track ${e.trackId}${e.detail?.direction ? ` ${String(e.detail.direction)}` : ''}`;
    const stored = (await allEvents(world.leasesTwin.ddb, world.wiring.eventsTable, v.videoId)).filter((e) => RULE_KINDS.has(e.kind)).map(key).sort();
    const expected = want.events.map(key).sort();
    eventsEqual.checked++;
    if (process.env.SIM_DUMP === '1') process.stderr.write(`${v.videoId}: ${stored.length} rule events stored, ${expected.length} expected; totals ${JSON.stringify(v.summary?.ruleTotals)}\n`);
    if (JSON.stringify(stored) !== JSON.stringify(expected)) {
      eventsEqual.violations++;
      const missing = expected.filter((e) => !stored.includes(e));
      const extra = stored.filter((e) => !expected.includes(e));
      if (eventsEqual.examples.length < 10) eventsEqual.examples.push(`${v.videoId}: ${stored.length} rule events, an in-order run gives ${expected.length}; missing ${missing.slice(0, 3).join(', ') || 'none'}; extra ${extra.slice(0, 3).join(', ') || 'none'}`);
    }
    totalsEqual.checked++;
    const got = JSON.stringify(v.summary?.ruleTotals ?? { lines: {}, zones: {} });
    const wantTotals = JSON.stringify(want.state.totals);
    if (got !== wantTotals) {
      totalsEqual.violations++;
      if (totalsEqual.examples.length < 10) totalsEqual.examples.push(`${v.videoId}: summary ${got}, an in-order run gives ${wantTotals}`);
    }
  }
  return [eventsEqual, totalsEqual];
}

const RULE_KINDS = new Set<string>(['line.crossed', 'zone.entered', 'zone.exited', 'zone.dwell']);

/** The frames of `v` whose upload or notification the plan made late (a segment's: all it covers). */
function arrivedLate(plan: SimPlan, v: SimPlan['videos'][number]): Set<number> {
  const out = new Set<number>();
  for (const e of plan.events) {
    if (e.kind !== 'upload' || e.videoId !== v.videoId) continue;
    if (!e.faults.includes('upload-late') && !e.faults.includes('doubt-window') && !e.faults.includes('replay-race-withheld') && e.notify !== 'late') continue;
    const p = parseSourceKey(e.key);
    if (p.kind !== 'source') continue;
    const seg = v.segments.find((s) => s.firstFrame === p.firstFrame);
    for (let f = p.firstFrame; f < p.firstFrame + (seg?.frames ?? 1); f++) out.add(f);
  }
  return out;
}

async function digest(world: SimWorld, plan: SimPlan): Promise<string> {

  const h = createHash('sha256');
  const source = { ddb: world.leasesTwin.ddb, resultsTable: world.wiring.resultsTable };
  for (const v of plan.videos) h.update(JSON.stringify(await allResults(source, v.videoId)));
  for (const t of world.trace) h.update(`${t.atMs} ${t.what}\n`);
  return h.digest('hex').slice(0, 16);
}
