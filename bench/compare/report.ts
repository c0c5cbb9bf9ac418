/**
 * The comparison's report: what one run of either design measured (latency, wasted
 * receives, AWS calls, lost / unfinished / doubled frames, tracking, the failover stall),
 * from the records and the logs it left, and the side-by-side table.
 */
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs';
import { allResults, getSummary } from '../../core/commit/dynamodb/results-reader.ts';
import { failoverSeconds } from '../../cli/demo-lib.ts';
import { table } from '../../cli/format.ts';
import { evaluateMot, type MotFrame } from '../../gpu-worker/vision/eval/mot.ts';
import type { LocalStack } from '../../local/stack.ts';
import { earlyEmptyReceives, type readEvents } from '../baseline/fleet.ts';
import { summaryRecords, type ResultsSource } from '../harness/collect.ts';
import type { Kill } from '../harness/watch.ts';
import { percentile } from '../support.ts';
import { tallyCallLog, type SyntheticVideo } from '../workload.ts';

export type Design = 'baseline' | 'ours';
export type Scenario = 'kill' | 'calm';

/** What one run measured. */
export interface RunReport {
  readonly design: Design;
  readonly scenario: Scenario;
  readonly outcome: 'complete' | 'cap';
  readonly framesUploaded: number;
  readonly framesRecorded: number;
  readonly latencyMs: { p50: number; p99: number; max: number; frames: number };
  readonly wastedReceives: number;
  readonly wastedDetail: Record<string, number>;
  /** Calls as SQS would have seen them (see {@link earlyEmptyReceives}); `awsCallsRaw` as logged. */
  readonly awsCalls: number;
  readonly awsCallsRaw: number;
  /** Calls over the whole run / frames uploaded. */
  readonly awsCallsPerFrame: number;
  /** Calls over the whole run / frames with a record (what each frame that got through cost). */
  readonly awsCallsPerRecordedFrame: number;
  readonly awsCallsByOperation: Record<string, number>;
  /** First upload to the last frame's record; null when frames were still missing at the cap. */
  readonly timeToFinishS: number | null;
  /** First upload to the end of the run (complete or cap). */
  readonly runS: number;
  readonly uploadsS: number;
  /** Uploaded, no record at the end, and no longer queued: dropped. */
  readonly framesLost: number;
  /** Uploaded, no record at the end, message still queued (the baseline's FIFO queue): the cap came first. */
  readonly framesUnfinished: number;
  readonly framesDoubled: number;
  readonly idSwitches: number;
  readonly idf1Mean: number;
  readonly kill: null | {
    readonly atS: number;
    readonly workerId: string;
    readonly videos: readonly string[];
    /** Longest stall over the killed worker's videos; null when one never resumed before the end. */
    readonly failoverStallS: number | null;
    /** Kill to the end of the run: the stall is longer than this when `failoverStallS` is null. */
    readonly untilEndS: number;
    readonly perVideoS: Record<string, number | null>;
  };
  readonly ownerChanges: number;
}

/** What a run left to measure. */
export interface RunFacts {
  readonly stack: LocalStack;
  readonly design: Design;
  readonly scenario: Scenario;
  readonly frames: number;
  readonly videoIds: readonly string[];
  readonly videos: readonly SyntheticVideo[];
  readonly source: ResultsSource;
  readonly putDone: ReadonlyMap<string, number>;
  readonly uploadClock: number;
  readonly uploadsDoneMs: number | undefined;
  readonly endMs: number;
  readonly outcome: RunReport['outcome'];
  readonly kill: Kill | undefined;
  /** The baseline workers' event log (empty for ours). */
  readonly events: ReturnType<typeof readEvents>;
  readonly callLog: string;
  readonly producerSends: number;
  /** Ours: frames forwarded and duplicates dropped, from the workers' EMF lines. */
  readonly oursWaste: { readonly FramesForwarded: number; readonly FramesDuplicate: number };
  /** The baseline's shared queue. */
  readonly baselineQueueUrl?: string;
}

/** Measures one run from what it left. */
export async function measureRun(run: RunFacts): Promise<RunReport> {
  const { design, scenario, outcome, videoIds, source, putDone, uploadClock, uploadsDoneMs, endMs, kill, events, producerSends } = run;
  const perVideo = await Promise.all(videoIds.map((id) => allResults(source, id)));
  const latency: number[] = [];
  let lost = 0;
  let recorded = 0;
  let lastCommit = 0;
  let idSwitches = 0;
  let idf1Sum = 0;
  let ownerChanges = 0;
  for (const [i, id] of videoIds.entries()) {
    const results = perVideo[i]!.filter((r) => r.frame >= 1);
    const byFrame = new Map(results.map((r) => [r.frame, r]));
    for (let f = 1; f <= run.frames; f++) {
      const r = byFrame.get(f);
      if (!r || String(r.status) === 'gap') {
        lost++;
        continue;
      }
      recorded++;
      lastCommit = Math.max(lastCommit, r.committedAtMs);
      if (String(r.status) === 'ok') latency.push(r.committedAtMs - putDone.get(`${id}:${f}`)!);
    }
    const gt: MotFrame[] = run.videos[i]!.groundTruth.filter((g) => g.frame <= run.frames).map((g) => ({ frame: g.frame, objects: g.objects.map((o) => ({ id: o.id, box: o.box })) }));
    const predictions: MotFrame[] = results
      .filter((r) => String(r.status) === 'ok' || String(r.status) === 'late')
      .map((r) => ({ frame: r.frame, objects: r.detections.filter((d) => d.trackId !== 0).map((d) => ({ id: d.trackId, box: d.box })) }));
    const mot = evaluateMot(gt, predictions);
    idSwitches += mot.idSwitches;
    idf1Sum += mot.idf1;
    const sorted = [...results].sort((a, b) => a.frame - b.frame);
    for (let k = 1; k < sorted.length; k++) if (sorted[k]!.worker !== sorted[k - 1]!.worker) ownerChanges++;
  }
  let doubled = 0;
  if (design === 'baseline') {
    const commits = new Map<string, number>();
    for (const e of events) if (e.e === 'commit') commits.set(`${e.v}:${e.f}`, (commits.get(`${e.v}:${e.f}`) ?? 0) + 1);
    for (const n of commits.values()) if (n > 1) doubled += n - 1;
  } else {
    for (const [i, id] of videoIds.entries()) {
      const counted = summaryRecords(await getSummary(source, id));
      doubled += Math.max(0, counted - perVideo[i]!.filter((r) => r.frame >= 1).length);
    }
  }
  // Frames without a record whose message is still in the baseline's queue are unfinished, not lost.
  let unfinished = 0;
  if (design === 'baseline' && lost > 0) {
    const a = await run.stack.clients.sqs.send(
      new GetQueueAttributesCommand({ QueueUrl: run.baselineQueueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
    );
    unfinished = Math.min(lost, Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0));
  }
  const calls = tallyCallLog(run.callLog);
  // The baseline's empty receives that fauxqs answered early are counted as the long polls SQS would have held.
  const emulatorEarly = design === 'baseline' ? earlyEmptyReceives(events) : { early: 0, asLongPolls: 0 };
  const awsCallsRaw = calls.total + producerSends;
  const awsCalls = awsCallsRaw - emulatorEarly.early + emulatorEarly.asLongPolls;
  const byOperation = { ...calls.byOperation, ...(design === 'baseline' ? { 'producer.sqs.SendMessageCommand': producerSends } : {}) };
  const wastedDetail: Record<string, number> = design === 'baseline' ? { skippedForLock: events.filter((e) => e.e === 'skip').length } : { framesForwarded: run.oursWaste.FramesForwarded, framesDuplicate: run.oursWaste.FramesDuplicate };
  let killReport: RunReport['kill'] = null;
  if (kill) {
    const perVideoS: Record<string, number | null> = {};
    for (const [i, id] of videoIds.entries()) {
      if (!kill.videos.includes(id)) continue;
      perVideoS[id] = failoverSeconds(perVideo[i]!, kill.atMs, kill.workerId) ?? null;
    }
    const stalls = Object.values(perVideoS);
    killReport = {
      atS: (kill.atMs - uploadClock) / 1000,
      workerId: kill.workerId,
      videos: kill.videos,
      failoverStallS: stalls.length > 0 && stalls.every((x) => x !== null) ? Math.max(...(stalls as number[])) : null,
      untilEndS: (endMs - kill.atMs) / 1000,
      perVideoS,
    };
  }
  const report: RunReport = {
    design,
    scenario,
    outcome,
    framesUploaded: putDone.size,
    framesRecorded: recorded,
    latencyMs: { p50: percentile(latency, 50), p99: percentile(latency, 99), max: latency.length ? Math.max(...latency) : Number.NaN, frames: latency.length },
    wastedReceives: Object.values(wastedDetail).reduce((a, b) => a + b, 0),
    wastedDetail,
    awsCalls,
    awsCallsRaw,
    awsCallsPerFrame: Math.round((awsCalls / putDone.size) * 1000) / 1000,
    awsCallsPerRecordedFrame: recorded > 0 ? Math.round((awsCalls / recorded) * 1000) / 1000 : Number.NaN,
    awsCallsByOperation: byOperation,
    timeToFinishS: lost === 0 ? (lastCommit - uploadClock) / 1000 : null,
    runS: (endMs - uploadClock) / 1000,
    uploadsS: ((uploadsDoneMs ?? endMs) - uploadClock) / 1000,
    framesLost: lost - unfinished,
    framesUnfinished: unfinished,
    framesDoubled: doubled,
    idSwitches,
    idf1Mean: idf1Sum / videoIds.length,
    kill: killReport,
    ownerChanges,
  };
  return report;
}

/** One line on a run that ended. */
export function runLine(r: RunReport, total: number): string {
  return (
    `${r.design} / ${r.scenario}: ${r.outcome}, ${r.framesRecorded}/${total} recorded, latency p50 ${Math.round(r.latencyMs.p50)} ms p99 ${Math.round(r.latencyMs.p99)} ms, ` +
    `wasted receives ${r.wastedReceives}, ${r.awsCallsPerFrame} AWS calls/frame, ID switches ${r.idSwitches}` +
    (r.kill ? `, failover stall ${r.kill.failoverStallS ?? `> ${r.kill.untilEndS.toFixed(0)}`} s` : '')
  );
}

/** The side-by-side table, kill first. */
export function printTable(rs: readonly RunReport[], say: (line?: string) => void): void {
  const fmtS = (v: number | null, bound?: number) => (v !== null ? `${v.toFixed(1)} s` : bound !== undefined ? `> ${bound.toFixed(0)} s` : '-');
  const ratio = (o: number | null, b: number | null, oBound?: number, bBound?: number): string => {
    if (o === null && b === null) return '-';
    if (b === null) return bBound !== undefined && o !== null ? `< ${(o / bBound).toFixed(2)}` : '-';
    if (o === null) return oBound !== undefined && b !== 0 ? `> ${(oBound / b).toFixed(2)}` : '-';
    if (b === 0) return o === 0 ? '-' : 'inf';
    const x = o / b;
    return x === 0 || x >= 0.1 ? x.toFixed(2) : x.toPrecision(2);
  };
  const rows: (string | number)[][] = [];
  for (const scenario of ['kill', 'calm'] as const) {
    const b = rs.find((r) => r.design === 'baseline' && r.scenario === scenario);
    const o = rs.find((r) => r.design === 'ours' && r.scenario === scenario);
    const label = scenario === 'kill' ? 'kill -9' : 'no fault';
    const line = (metric: string, get: (r: RunReport) => number | null, fmt: (r: RunReport) => string, bound?: (r: RunReport) => number | undefined) =>
      rows.push([
        label,
        metric,
        b ? fmt(b) : '-',
        o ? fmt(o) : '-',
        b && o ? ratio(get(o), get(b), bound?.(o), bound?.(b)) : '-',
      ]);
    const msOf = (v: number) => (Number.isFinite(v) ? `${Math.round(v)} ms` : '-');
    line('latency p50', (r) => r.latencyMs.p50, (r) => msOf(r.latencyMs.p50));
    line('latency p99', (r) => r.latencyMs.p99, (r) => msOf(r.latencyMs.p99));
    line('wasted receives', (r) => r.wastedReceives, (r) => String(r.wastedReceives));
    line('AWS calls / uploaded frame', (r) => r.awsCallsPerFrame, (r) => r.awsCallsPerFrame.toFixed(2));
    line('AWS calls / recorded frame', (r) => r.awsCallsPerRecordedFrame, (r) => r.awsCallsPerRecordedFrame.toFixed(2));
    line('time to finish', (r) => r.timeToFinishS, (r) => fmtS(r.timeToFinishS, r.runS), (r) => r.runS);
    line('frames lost', (r) => r.framesLost, (r) => `${r.framesLost}/${r.framesUploaded}`);
    line('frames unfinished at the cap', (r) => r.framesUnfinished, (r) => `${r.framesUnfinished}/${r.framesUploaded}`);
    line('frames doubled', (r) => r.framesDoubled, (r) => String(r.framesDoubled));
    line('ID switches', (r) => r.idSwitches, (r) => String(r.idSwitches));
    line('IDF1 (mean)', (r) => r.idf1Mean, (r) => r.idf1Mean.toFixed(3));
    if (scenario === 'kill')
      line(
        'failover stall',
        (r) => r.kill?.failoverStallS ?? null,
        (r) => (r.kill ? fmtS(r.kill.failoverStallS, r.kill.untilEndS) : '-'),
        (r) => r.kill?.untilEndS,
      );
  }
  say('');
  for (const l of table(['scenario', 'metric', 'baseline (seed 000)', 'ours', 'ours/baseline'], rows)) say(`  ${l}`);
  say('');
}
