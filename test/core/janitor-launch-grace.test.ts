/**
 * The janitor's alarm signals, on an in-memory lease store that applies the same launch
 * grant rules as the DynamoDB one: a slot whose task is still starting (inside
 * `taskStartGraceSeconds`) is not "with work and no owner"; a start that overran the
 * grace is counted when relaunched; slot DLQs are summed into one gauge, reading the DLQs
 * of recently owned slots and of the run's queue sweep (every slot up to 100 slots).
 */
import { describe, expect, it } from 'vitest';
import { Janitor, type JanitorTrigger } from '../../core/janitor.ts';
import { DEFAULT_TUNABLES, type Tunables } from '../../core/config.ts';
import { emptySlotRecord, type LivenessOptions, type SlotRecord } from '../../core/lease-logic.ts';
import { METRIC_NAMES } from '../../core/metric-names.ts';
import type { LeaseStore } from '../../core/aws/lease-store.ts';
import type { SlotQueues } from '../../core/aws/slot-queues.ts';
import type { LaunchRequest, LogSink, MetricSink, TaskLauncher } from '../../core/ports.ts';

const NOW = 5_000_000_000;
const GRACE_MS = DEFAULT_TUNABLES.taskStartGraceSeconds * 1000;

interface World {
  slots: SlotRecord[];
  pinned: Map<number, string[]>;
  dlq: Map<number, number>;
}

/** Runs the janitor once; returns the gauges and counters it emitted, its launches and the DLQs it read. */
async function runJanitor(world: World, tunables: Partial<Tunables> = {}, trigger: JanitorTrigger = { kind: 'schedule' }) {
  const t: Tunables = { ...DEFAULT_TUNABLES, slotCount: world.slots.length, ...tunables };
  const metrics = new Map<string, number>();
  const launches: LaunchRequest[] = [];
  const dlqReads: number[] = [];
  const leases = {
    getSlots: async () => world.slots.map((s) => ({ ...s })),
    listPinnedBySlot: async () => new Map(world.pinned),
    listPinned: async (slot: number) => world.pinned.get(slot) ?? [],
    setVideoCount: async () => {},
    expireStoppedOwner: async () => false,
    // The grant rules of SlotLeaseStore.requestLaunch, in memory.
    requestLaunch: async (slot: number, nowMs: number, o: LivenessOptions, mode: 'if-dead' | 'force') => {
      const s = world.slots[slot]!;
      const graceOver = s.launchRequestedAtMs === 0 || s.launchRequestedAtMs < nowMs - o.taskStartGraceSeconds * 1000 || s.launchRequestedAtMs < s.heartbeatAtMs;
      const dead = s.owner === undefined || s.expiresAtMs <= nowMs || s.heartbeatAtMs < nowMs - 2 * o.heartbeatIntervalSeconds * 1000;
      if (!graceOver || (mode === 'if-dead' && !dead)) return undefined;
      world.slots[slot] = { ...s, launchRequestedAtMs: nowMs, launchSeq: s.launchSeq + 1 };
      return s.launchSeq + 1;
    },
    withdrawLaunch: async () => true,
    recordLaunchedTask: async () => true,
  } as unknown as LeaseStore;
  const queues = {
    depth: async () => ({ visible: 0, inFlight: 0 }),
    dlqDepth: async (slot: number) => {
      dlqReads.push(slot);
      const n = world.dlq.get(slot);
      if (n === undefined) throw new Error('AWS.SimpleQueueService.NonExistentQueue');
      return n;
    },
  } as unknown as SlotQueues;
  const sink: MetricSink = { count: (name, value = 1) => void metrics.set(name, (metrics.get(name) ?? 0) + value), milliseconds() {} };
  const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
  const launcher: TaskLauncher = {
    launch: async (r) => {
      launches.push(r);
      return { launched: true };
    },
  };
  const janitor = new Janitor({ tunables: t, leases, queues, launcher: () => launcher, metrics: sink, log: quiet, now: () => NOW });
  const report = await janitor.run(trigger);
  const metric = (name: string) => metrics.get(name) ?? 0;
  return { report, launches, dlqReads, metric };
}

/** A slot with one pinned video (work) and no owner, launched `launchedAgoMs` ago (its task recorded; the launcher cannot describe it), last heartbeat `heartbeatAgoMs` ago. */
function waitingSlot(launchedAgoMs: number, heartbeatAgoMs?: number): World {
  const heartbeatAtMs = heartbeatAgoMs === undefined ? 0 : NOW - heartbeatAgoMs;
  const slot: SlotRecord = { ...emptySlotRecord(0), videoCount: 1, launchSeq: 1, launchRequestedAtMs: NOW - launchedAgoMs, launchTaskId: 'task-1', heartbeatAtMs, expiresAtMs: heartbeatAtMs };
  return { slots: [slot], pinned: new Map([[0, ['v']]]), dlq: new Map([[0, 0]]) };
}

describe('janitor: work and no owner, cold-start aware', () => {
  it('leaves out a slot whose task is still starting from cold (10 minutes after its launch, under the default grace)', async () => {
    // Act
    const { report, launches, metric } = await runJanitor(waitingSlot(10 * 60_000));

    // Assess
    expect(report.slotsWithWorkNoOwner).toEqual([]);
    expect(metric(METRIC_NAMES.janitor.slotsWithWorkNoOwner)).toBe(0);
    expect(launches).toEqual([]);
    expect(metric(METRIC_NAMES.janitor.taskStartTimeouts)).toBe(0);
  });

  it('counts the slot once the start overran the grace, relaunches it and counts a start timeout', async () => {
    // Act
    const { report, launches, metric } = await runJanitor(waitingSlot(GRACE_MS + 1_000));

    // Assess
    expect(report.slotsWithWorkNoOwner).toEqual([0]);
    expect(metric(METRIC_NAMES.janitor.slotsWithWorkNoOwner)).toBe(1);
    expect(launches.map((l) => [l.slot, l.launchSeq])).toEqual([[0, 2]]);
    expect(metric(METRIC_NAMES.janitor.taskStartTimeouts)).toBe(1);
  });

  it('relaunches a slot whose running worker died without counting a start timeout', async () => {
    // Prepare: launched an hour ago, heartbeated until 30 s ago, lease run out
    const world = waitingSlot(3_600_000, 30_000);
    world.slots[0] = { ...world.slots[0]!, owner: 'w1', expiresAtMs: NOW - 15_000 };

    // Act
    const { report, launches, metric } = await runJanitor(world);

    // Assess
    expect(report.slotsWithWorkNoOwner).toEqual([0]);
    expect(launches.map((l) => l.slot)).toEqual([0]);
    expect(metric(METRIC_NAMES.janitor.taskStartTimeouts)).toBe(0);
  });

  it('keeps leaving the slot out while the relaunch is inside its own grace', async () => {
    // Prepare: the overrun start above, relaunched by this run
    const world = waitingSlot(GRACE_MS + 1_000);
    await runJanitor(world);

    // Act: the next run
    const { report, launches, metric } = await runJanitor(world);

    // Assess
    expect(report.slotsWithWorkNoOwner).toEqual([]);
    expect(launches).toEqual([]);
    expect(metric(METRIC_NAMES.janitor.taskStartTimeouts)).toBe(0);
  });
});

describe('janitor: one gauge for every slot DLQ', () => {
  it('sums the DLQs of every slot, idle or not (up to 100 slots every DLQ is read each run), so the alarm stays up while any message is there', async () => {
    // Prepare: slot 0 owned now, slot 1 released 60 s ago, slot 2 idle for an hour, slot 3 never used
    const t = DEFAULT_TUNABLES;
    const owned = (slot: number, heartbeatAgoMs: number): SlotRecord => ({
      ...emptySlotRecord(slot),
      owner: 'w',
      heartbeatAtMs: NOW - heartbeatAgoMs,
      expiresAtMs: NOW - heartbeatAgoMs + t.slotLeaseTtlSeconds * 1000,
    });
    const world: World = {
      slots: [owned(0, 1_000), owned(1, 60_000), owned(2, 3_600_000), emptySlotRecord(3)],
      pinned: new Map(),
      dlq: new Map([
        [0, 2],
        [1, 3],
        [2, 7],
        [3, 11],
      ]),
    };

    // Act
    const { dlqReads, metric } = await runJanitor(world);

    // Assess
    expect(metric(METRIC_NAMES.janitor.slotDlqMessages)).toBe(2 + 3 + 7 + 11);
    expect(dlqReads.sort()).toEqual([0, 1, 2, 3]);
  });

  it('beyond 100 slots, reads the DLQs of recently owned slots and of this run\'s sweep group only', async () => {
    // Prepare: 250 slots (3 sweep groups), each DLQ holding one message; slot 1 owned now
    const slots = Array.from({ length: 250 }, (_, slot) => emptySlotRecord(slot));
    slots[1] = { ...slots[1]!, owner: 'w', heartbeatAtMs: NOW - 1_000, expiresAtMs: NOW + 14_000 };
    const world: World = { slots, pinned: new Map(), dlq: new Map(slots.map((s) => [s.slot, 1])) };

    // Act
    const { dlqReads, metric } = await runJanitor(world);

    // Assess
    const group = Math.floor(NOW / (DEFAULT_TUNABLES.janitorIntervalSeconds * 1000)) % 3;
    const expected = slots.map((s) => s.slot).filter((n) => n % 3 === group || n === 1);
    expect(dlqReads.sort((a, b) => a - b)).toEqual(expected);
    expect(metric(METRIC_NAMES.janitor.slotDlqMessages)).toBe(expected.length);
  });

  it('counts a DLQ it cannot read as 0 and still reports the others', async () => {
    // Prepare: two active slots, the DLQ of slot 1 is missing
    const active = (slot: number): SlotRecord => ({ ...emptySlotRecord(slot), owner: 'w', heartbeatAtMs: NOW - 1_000, expiresAtMs: NOW + 14_000 });
    const world: World = { slots: [active(0), active(1)], pinned: new Map(), dlq: new Map([[0, 4]]) };

    // Act
    const { metric } = await runJanitor(world);

    // Assess
    expect(metric(METRIC_NAMES.janitor.slotDlqMessages)).toBe(4);
  });
});
