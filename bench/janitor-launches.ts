/**
 * Janitor time per run when every slot needs a launch at once (issue 23): a cold fleet of
 * `slots` slots, each with 2 videos pinned and no task (every task gone at once, or the
 * first deploy under load). The janitor is the real one (core/fleet/janitor.ts over the
 * adapters functions/janitor builds) against DynamoDB Local; its clock steps one
 * `janitorIntervalSeconds` per run. The launcher answers after `runTaskMs` (ECS answers
 * RunTask in a few hundred ms), as RunTask would, and records its concurrency.
 *
 *   npx node bench/janitor-launches.ts [slots=1000] [runTaskMs=200]
 *
 * Runs: (1) the default budget, `maxProvisioningTasks` 500: half the slots launched, half
 * deferred; (2) the next period, the first half still starting: the other half launched;
 * (3) a fresh fleet with the budget raised to the slot count: every slot in one run.
 *
 * A cold fleet has no recent owner, so no slot DLQ is read, and pinned slots need no queue
 * depth: the local stack is started with 4 slot queues only (creating 1,000 queues on
 * fauxqs is what bench/janitor-calls.ts measures), and the janitor reads `slots` slots.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { Janitor } from '../core/fleet/janitor.ts';
import { LeaseStore } from '../core/leases/dynamodb/lease-store.ts';
import type { Tunables } from '../core/config.ts';
import { nullMetrics, type LogSink, type TaskLauncher } from '../core/ports.ts';
import { functionContext } from '../functions/shared/context.ts';
import { startLocalStack } from '../local/stack.ts';

const slotCount = Number(process.argv[2] ?? 1000);
const runTaskMs = Number(process.argv[3] ?? 200);

const stack = await startLocalStack({
  quiet: true,
  stateDir: '.local/bench-janitor-launches',
  tunables: { slotCount: 4, modelUri: 'unused.onnx' },
  routerHandler: false,
  janitorHandler: false,
});

const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
let inFlight = 0;
let maxInFlight = 0;
let calls = 0;
const launcher: TaskLauncher = {
  launch: async (r) => {
    calls++;
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    await new Promise((res) => setTimeout(res, runTaskMs));
    inFlight--;
    return { launched: true, taskId: `bench-${r.slot}-${r.launchSeq}` };
  },
  // Every launched task is still PROVISIONING.
  describe: async (ids) => new Map(ids.map((id) => [id, { state: 'coming' as const }])),
};
const ctx = functionContext('janitor');
const seed = LeaseStore.forWiring(stack.clients.ddb, stack.wiring, stack.tunables);
let clock = Date.now();

async function pool<T>(items: readonly T[], width: number, f: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) await f(items[next++]!);
  }));
}

async function coldFleet(firstSlot: number): Promise<number[]> {
  const slots = Array.from({ length: slotCount }, (_, i) => firstSlot + i);
  await pool(slots, 16, async (slot) => {
    for (const v of [0, 1]) if ((await seed.pinVideo(`bench-${slot}-${v}`, slot, clock)) !== 'pinned') throw new Error(`could not pin to slot ${slot}`);
  });
  return slots;
}

async function timedRun(t: Tunables) {
  const janitor = new Janitor({ tunables: t, leases: ctx.leases, queues: ctx.queues, launcher: () => launcher, metrics: nullMetrics, log: quiet, now: () => clock });
  calls = 0;
  maxInFlight = 0;
  const t0 = performance.now();
  const r = await janitor.run();
  return {
    seconds: Math.round(((performance.now() - t0) / 1000) * 100) / 100,
    launched: r.launched.length,
    deferred: r.launchesDeferred.length,
    runTaskCalls: calls,
    maxRunTasksInFlight: maxInFlight,
  };
}

let report: Record<string, unknown>;
try {
  await coldFleet(0);
  const t: Tunables = { ...ctx.tunables, slotCount };
  clock += t.janitorIntervalSeconds * 1000;
  const first = await timedRun(t);
  clock += t.janitorIntervalSeconds * 1000;
  const second = await timedRun(t);
  // A second fleet in the same table (slots slotCount..2*slotCount-1), read as its own.
  await coldFleet(slotCount);
  clock += t.janitorIntervalSeconds * 1000;
  const wide = new Proxy(ctx.leases, {
    get(target, prop, receiver) {
      if (prop === 'getSlots') return async (n: number) => target.getSlotsNumbered(Array.from({ length: n }, (_, i) => slotCount + i));
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const everySlot = await (async () => {
    const janitor = new Janitor({ tunables: { ...t, maxProvisioningTasks: slotCount }, leases: wide, queues: ctx.queues, launcher: () => launcher, metrics: nullMetrics, log: quiet, now: () => clock });
    calls = 0;
    maxInFlight = 0;
    const t0 = performance.now();
    const r = await janitor.run();
    return { seconds: Math.round(((performance.now() - t0) / 1000) * 100) / 100, launched: r.launched.length, deferred: r.launchesDeferred.length, runTaskCalls: calls, maxRunTasksInFlight: maxInFlight };
  })();
  report = {
    setup: { slotCount, runTaskMs, janitorLaunchConcurrency: t.janitorLaunchConcurrency, maxProvisioningTasks: t.maxProvisioningTasks, note: 'DynamoDB Local; RunTask simulated' },
    defaultBudgetFirstRun: first,
    defaultBudgetNextPeriod: second,
    budgetOfEverySlot: everySlot,
  };
} finally {
  await stack.stop();
}
mkdirSync('bench/results', { recursive: true });
writeFileSync(`bench/results/janitor-launches-${slotCount}.json`, `${JSON.stringify(report, null, 2)}\n`);
console.log(JSON.stringify(report, null, 2));
