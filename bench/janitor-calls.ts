/**
 * The janitor's AWS calls per run at a large slot count, against the local stack
 * (DynamoDB Local + fauxqs, every slot queue created as in AWS). The janitor is the real
 * one (core/fleet/janitor.ts over the adapters functions/janitor builds, `functionContext`),
 * its calls logged by the AWS_CALL_LOG middleware (core/aws/clients.ts); its clock is
 * stepped one `janitorIntervalSeconds` per run, as the schedule would. The launcher
 * records requests instead of starting workers, and seeding (claims, heartbeats, pins)
 * goes through unlogged clients.
 *
 *   npx node bench/janitor-calls.ts [slots=1000] [runs=20]
 *
 * Scenarios:
 * - idle: no task, nothing pinned, every queue empty (a fleet scaled to zero);
 * - busy: every slot owned by a live task with 2 videos pinned (heartbeats renewed before
 *   each run), so every slot's DLQ is read for the SlotDlqMessages gauge;
 * - strays: idle, but 5 slots hold a message with no video pinned there: how many runs
 *   until the janitor has found them all and asked for their tasks.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import { Janitor } from '../core/fleet/janitor.ts';
import { LeaseStore } from '../core/leases/dynamodb/lease-store.ts';
import { nullMetrics, type LaunchRequest, type LogSink, type TaskLauncher } from '../core/ports.ts';
import { functionContext } from '../functions/shared/context.ts';
import { startLocalStack } from '../local/stack.ts';
import { freshCallLog, RESULTS_DIR, writeResult } from './harness/main.ts';

const slotCount = Number(process.argv[2] ?? 1000);
const runs = Number(process.argv[3] ?? 20);
const callLog = freshCallLog('janitor-calls');

const startedAt = performance.now();
const stack = await startLocalStack({
  quiet: true,
  stateDir: '.local/bench-janitor-calls',
  // No worker is started, so no model is needed.
  tunables: { slotCount, modelUri: 'unused.onnx' },
  routerHandler: false,
  janitorHandler: false,
});
const stackStartSeconds = (performance.now() - startedAt) / 1000;

const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
const launches: LaunchRequest[] = [];
const launcher: TaskLauncher = {
  launch: async (r) => {
    launches.push(r);
    return { launched: true, taskId: `bench-${r.slot}-${r.launchSeq}` };
  },
};
const ctx = functionContext('janitor');
const seed = LeaseStore.forWiring(stack.clients.ddb, stack.wiring, stack.tunables);
const intervalMs = stack.tunables.janitorIntervalSeconds * 1000;
let clock = Date.now();
const janitor = new Janitor({ tunables: ctx.tunables, leases: ctx.leases, queues: ctx.queues, launcher: () => launcher, metrics: nullMetrics, log: quiet, now: () => clock });

type Tally = Record<string, number>;
function callsSinceReset(): Tally {
  const t: Tally = {};
  for (const line of readFileSync(callLog, 'utf8').split('\n').filter(Boolean)) {
    const [role, service, op] = line.split('\t');
    if (role !== 'janitor') continue;
    const k = `${service}.${op!.replace(/Command$/, '')}`;
    t[k] = (t[k] ?? 0) + 1;
  }
  return t;
}
const total = (t: Tally) => Object.values(t).reduce((a, b) => a + b, 0);

/** Runs in parallel, `width` at a time. */
async function pool<T>(items: readonly T[], width: number, f: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await f(items[next++]!);
  }));
}

interface ScenarioResult {
  readonly runs: number;
  readonly callsPerRun: { readonly mean: number; readonly min: number; readonly max: number };
  readonly operationsPerRun: Record<string, number>;
  /** Slot queues whose depth a run read (the rest of GetQueueAttributes are slot-DLQ reads for the SlotDlqMessages gauge). */
  readonly slotQueueDepthReadsPerRun: number;
  readonly secondsPerRun: number;
}

async function measure(runCount: number, beforeEachRun: () => Promise<void> = async () => {}): Promise<ScenarioResult> {
  const perRun: number[] = [];
  const ops: Tally = {};
  let seconds = 0;
  let depthReads = 0;
  for (let i = 0; i < runCount; i++) {
    clock += intervalMs;
    await beforeEachRun();
    writeFileSync(callLog, '');
    const t0 = performance.now();
    const report = await janitor.run();
    seconds += (performance.now() - t0) / 1000;
    depthReads += report.queuesChecked.length;
    const t = callsSinceReset();
    perRun.push(total(t));
    for (const [k, v] of Object.entries(t)) ops[k] = (ops[k] ?? 0) + v;
  }
  const round = (x: number) => Math.round(x * 10) / 10;
  return {
    runs: runCount,
    callsPerRun: { mean: round(perRun.reduce((a, b) => a + b, 0) / runCount), min: Math.min(...perRun), max: Math.max(...perRun) },
    operationsPerRun: Object.fromEntries(Object.entries(ops).map(([k, v]) => [k, round(v / runCount)])),
    slotQueueDepthReadsPerRun: round(depthReads / runCount),
    secondsPerRun: Math.round((seconds / runCount) * 1000) / 1000,
  };
}

let report: Record<string, unknown>;
try {
  const slots = Array.from({ length: slotCount }, (_, i) => i);

  // Idle: a fleet scaled to zero.
  const idle = await measure(runs);

  // Strays: messages in 5 queues of slots with no owner and no pinned video.
  const straySlots = [1, Math.floor(slotCount / 3), Math.floor(slotCount / 2) + 1, slotCount - 2, slotCount - 1];
  for (const slot of straySlots) {
    await stack.clients.sqs.send(
      new SendMessageCommand({ QueueUrl: ctx.queues.url(slot), MessageBody: '{}', MessageGroupId: 'stray', MessageDeduplicationId: `stray-${slot}` }),
    );
  }
  launches.length = 0;
  let strayRuns = 0;
  while (straySlots.some((s) => !launches.some((l) => l.slot === s)) && strayRuns < 100) {
    clock += intervalMs;
    await janitor.run();
    strayRuns++;
  }
  const strayLaunched = straySlots.filter((s) => launches.some((l) => l.slot === s)).length;

  // Busy: every slot owned by a live task with two videos pinned.
  const owners = new Map<number, { workerId: string; epoch: number }>();
  await pool(slots, 16, async (slot) => {
    const workerId = `bench-worker-${slot}`;
    const claimed = await seed.claimSlot(slot, workerId, clock, 3_600_000);
    if (!claimed) throw new Error(`could not claim slot ${slot}`);
    owners.set(slot, { workerId, epoch: claimed.epoch });
    for (const v of [0, 1]) {
      if ((await seed.pinVideo(`bench-${slot}-${v}`, slot, clock)) !== 'pinned') throw new Error(`could not pin a video to slot ${slot}`);
    }
  });
  const heartbeatAll = () =>
    pool(slots, 16, async (slot) => {
      const o = owners.get(slot)!;
      if ((await seed.renewSlot({ slot, workerId: o.workerId, epoch: o.epoch }, clock, 3_600_000)) !== 'renewed') throw new Error(`lost slot ${slot}`);
    });
  launches.length = 0;
  const busy = await measure(Math.min(runs, 5), heartbeatAll);
  const busyLaunches = launches.length;

  report = {
    setup: {
      slotCount,
      stackStartSeconds: Math.round(stackStartSeconds * 10) / 10,
      note: 'local stack: DynamoDB Local + fauxqs; one janitor run per step of janitorIntervalSeconds on an injected clock',
    },
    idle,
    busy: { ...busy, pinnedVideos: 2 * slotCount, launchesRequested: busyLaunches },
    strays: { slotsWithStrayMessages: straySlots.length, found: strayLaunched, runsUntilAllFound: strayRuns },
  };
} finally {
  await stack.stop();
}
// The committed result is the default run's; another slot count writes a file of its own.
writeResult(join(RESULTS_DIR, slotCount === 1000 ? 'janitor-calls.json' : `janitor-calls-${slotCount}.json`), report);
console.log(JSON.stringify(report, null, 2));
