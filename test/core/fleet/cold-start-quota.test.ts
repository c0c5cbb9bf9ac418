/**
 * A 1,000-slot cold start within the ECS PROVISIONING quota (issue 43, item 5): the router
 * and the janitor on the lease table's twin, with a fake clock and the launcher modelled
 * (core/fleet/memory/provisioning-quota-launcher.ts: tasks wait in PROVISIONING for three
 * minutes while instances boot, at most 500 at once, RunTask over that refused as ECS
 * refuses it). 1,000 new videos arrive at once; every slot must get its worker, with no
 * launch failed for the quota: the launches over the budget are queued (LaunchesDeferred)
 * and the janitor starts them as the first tasks leave PROVISIONING.
 *
 * The twins, not the local stack: the local stack spawns a worker process per slot, and
 * 1,000 of them do not fit this machine's 2 cores; the launcher is where the quota lives,
 * and the twin models it.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_TUNABLES, validateTunables, type Tunables } from '../../../core/config.ts';
import { Janitor } from '../../../core/fleet/janitor.ts';
import { ProvisioningQuotaLauncher } from '../../../core/fleet/memory/provisioning-quota-launcher.ts';
import { FrameRouter } from '../../../core/fleet/router.ts';
import { isSlotLive } from '../../../core/leases/lease-logic.ts';
import { MemoryLeaseTable } from '../../../core/leases/memory/memory-lease-table.ts';
import type { SlotFence } from '../../../core/leases/port.ts';
import type { SlotQueue } from '../../../core/ingest/port.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import type { LogSink, MetricSink } from '../../../core/ports.ts';

const SLOTS = 1_000;
const QUOTA = 500;
const PROVISIONING_MS = 3 * 60_000;
const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

function recorder(): MetricSink & { total(name: string, dims?: Record<string, string>): number } {
  const counts: { name: string; value: number; dims: Record<string, string> }[] = [];
  return {
    count: (name, value = 1, dims = {}) => void counts.push({ name, value, dims }),
    milliseconds() {},
    total: (name, dims = {}) => counts.filter((c) => c.name === name && Object.entries(dims).every(([k, v]) => c.dims[k] === v)).reduce((n, c) => n + c.value, 0),
  };
}

const frame = (video: string) => ({
  id: `${video}-0`,
  body: JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bkt' }, object: { key: `frames/${video}/0.jpg`, size: 10 } } }] }),
});

/** The fleet on the twins: lease table, launcher with the quota, running workers that heartbeat. */
function fleet(tunables: Tunables, quota = QUOTA) {
  const clock = { now: 1_800_000_000_000 };
  const table = new MemoryLeaseTable();
  const leases = table.leases();
  const running: SlotFence[] = [];
  const launcher = new ProvisioningQuotaLauncher({
    quota,
    provisioningMs: PROVISIONING_MS,
    now: () => clock.now,
    onRunning: async ({ slot, taskId }) => {
      const claim = await leases.claimSlot(slot, taskId, clock.now, tunables.slotLeaseTtlSeconds * 1000);
      if (claim) running.push({ slot, workerId: taskId, epoch: claim.epoch });
    },
  });
  // One per service: router and janitor metrics share names, told apart by the service dimension in EMF.
  const metrics = recorder();
  const janitorMetrics = recorder();
  const queues = {
    send: async (_slot: number, messages: readonly unknown[]) => messages.map(() => ({ ok: true as const })),
    depth: async () => ({ visible: 0, inFlight: 0 }),
    dlqDepth: async () => 0,
  } as unknown as SlotQueue;
  const router = () => new FrameRouter({ bucket: 'bkt', tunables, leases, queues, deadLetter: async (e) => e.map(() => true), launcher: () => launcher, metrics, log: quiet, now: () => clock.now });
  const janitor = new Janitor({ tunables, leases, queues, launcher: () => launcher, metrics: janitorMetrics, log: quiet, now: () => clock.now });
  /** One janitor period: tasks that finished provisioning start, every worker heartbeats, the janitor runs. */
  const period = async () => {
    clock.now += tunables.janitorIntervalSeconds * 1000;
    await launcher.advance();
    for (const f of running) await leases.renewSlot(f, clock.now, tunables.slotLeaseTtlSeconds * 1000);
    return janitor.run();
  };
  const liveSlots = async () => (await leases.getSlots(tunables.slotCount)).filter((s) => isSlotLive(s, clock.now)).length;
  return { clock, leases, launcher, metrics, janitorMetrics, router, period, liveSlots, running };
}

// Workers heartbeat once a janitor period here (a 3-minute lease), so that a period is one step of the simulation.
const tunables = validateTunables({ ...DEFAULT_TUNABLES, slotCount: SLOTS, videosPerSlot: 1, maxProvisioningTasks: QUOTA, slotLeaseTtlSeconds: 180, heartbeatIntervalSeconds: 60 });

describe('1,000-slot cold start within the PROVISIONING quota (twins, launcher modelled)', () => {
  it('one router: launches beyond the budget are left to the janitor; every slot gets its worker, no launch fails, at most 500 provisioning', async () => {
    // Prepare
    const f = fleet(tunables);
    const router = f.router();

    // Act: 1,000 new videos in batches of 10, then janitor periods until the fleet is up
    for (let b = 0; b < SLOTS / 10; b++) await router.route(Array.from({ length: 10 }, (_, i) => frame(`v${b * 10 + i}`)));
    let periods = 0;
    while ((await f.liveSlots()) < SLOTS && periods < 20) {
      await f.period();
      periods++;
    }

    // Assess
    expect(await f.liveSlots()).toBe(SLOTS);
    expect(new Set(f.launcher.launchedSlots).size).toBe(SLOTS);
    expect(f.launcher.launchedSlots).toHaveLength(SLOTS); // one task per slot: nothing launched twice
    expect(f.launcher.maxProvisioning).toBe(QUOTA);
    expect(f.launcher.refused).toBe(0);
    expect(f.metrics.total(METRIC_NAMES.router.taskLaunchFailures)).toBe(0);
    expect(f.janitorMetrics.total(METRIC_NAMES.janitor.taskLaunchFailures)).toBe(0);
    expect(f.metrics.total(METRIC_NAMES.router.launchesDeferred)).toBe(SLOTS - QUOTA);
    expect(f.janitorMetrics.total(METRIC_NAMES.janitor.tasksRelaunched)).toBe(SLOTS - QUOTA);
    // The janitor held them while the first 500 were in PROVISIONING (two periods), then launched them.
    expect(f.janitorMetrics.total(METRIC_NAMES.janitor.launchesDeferred)).toBeGreaterThanOrEqual(SLOTS - QUOTA);
    // The second half starts once the first leaves PROVISIONING: 3 minutes, then 3 more.
    expect(periods).toBeLessThanOrEqual(Math.ceil((2 * PROVISIONING_MS) / (tunables.janitorIntervalSeconds * 1000)) + 1);
  });

  it('two routers on stale views overshoot the budget: ECS refuses, and the refusals are queued, not failed; every slot still gets one worker', async () => {
    // Prepare: 200 slots and a quota of 100 (the same rule as 1,000 and 500, at a fifth of the time)
    const slots = 200;
    const quota = 100;
    const f = fleet(validateTunables({ ...tunables, slotCount: slots, maxProvisioningTasks: quota }), quota);
    const [a, b] = [f.router(), f.router()];

    // Act: both route 100 new videos at once (batches of 10), each seeing no launch starting
    await Promise.all(
      [a, b].map(async (router, r) => {
        for (let n = 0; n < slots / 2 / 10; n++) await router.route(Array.from({ length: 10 }, (_, i) => frame(`r${r}-v${n * 10 + i}`)));
      }),
    );
    const refusedAtStart = f.launcher.refused;
    let periods = 0;
    while ((await f.liveSlots()) < slots && periods < 20) {
      await f.period();
      periods++;
    }

    // Assess
    expect(await f.liveSlots()).toBe(slots);
    expect(f.launcher.launchedSlots).toHaveLength(slots);
    expect(f.launcher.maxProvisioning).toBeLessThanOrEqual(quota);
    expect(f.metrics.total(METRIC_NAMES.router.taskLaunchFailures)).toBe(0);
    expect(f.metrics.total(METRIC_NAMES.router.taskLaunchFailures, { Reason: 'provisioning-quota' })).toBe(0);
    expect(f.janitorMetrics.total(METRIC_NAMES.janitor.taskLaunchFailures)).toBe(0);
    // The routers did overshoot (the case being tested), and what ECS refused was queued.
    expect(refusedAtStart).toBeGreaterThan(0);
    expect(f.metrics.total(METRIC_NAMES.router.launchesDeferred)).toBeGreaterThanOrEqual(refusedAtStart);
  });
});
