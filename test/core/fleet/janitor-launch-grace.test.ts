/**
 * The janitor's alarm signals, on the lease table's in-memory twin (the production lease
 * adapter over core/leases/memory/, so the launch grant rules are the DynamoDB ones): a slot whose task is still starting (inside
 * `taskStartGraceSeconds`) is not "with work and no owner"; a start that overran the
 * grace is counted when relaunched; slot DLQs are summed into one gauge, reading the DLQs
 * of recently owned slots and of the run's queue sweep (every slot up to 100 slots).
 */
import { describe, expect, it } from 'vitest';
import { Janitor, type JanitorTrigger } from '../../../core/fleet/janitor.ts';
import { DEFAULT_TUNABLES, type Tunables } from '../../../core/config.ts';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { emptySlotRecord, type SlotRecord } from '../../../core/leases/lease-logic.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import type { SlotQueue } from '../../../core/ingest/port.ts';
import { MemoryLeaseTable } from '../../../core/leases/memory/memory-lease-table.ts';
import type { LaunchRequest, LogSink, MetricSink, TaskLauncher } from '../../../core/ports.ts';

const NOW = 5_000_000_000;
const GRACE_MS = DEFAULT_TUNABLES.taskStartGraceSeconds * 1000;

interface World {
  /** The slots as the first run finds them (later runs find what earlier runs wrote). */
  slots: SlotRecord[];
  pinned: Map<number, string[]>;
  dlq: Map<number, number>;
  /** The lease table, seeded from `slots` and `pinned` by the first run. */
  table?: MemoryLeaseTable;
}

/** A lease table twin holding the world's slots and pins, as items the adapter wrote would be. */
async function seededTable(world: World): Promise<MemoryLeaseTable> {
  const table = new MemoryLeaseTable();
  const put = (item: Record<string, unknown>) => table.ddb.send(new PutCommand({ TableName: table.wiring.leasesTable, Item: item }));
  for (const s of world.slots) {
    if (s.owner === undefined && s.launchSeq === 0 && s.videoCount === 0 && s.heartbeatAtMs === 0) continue; // never written
    await put({ pk: `slot#${s.slot}`, ...s });
  }
  for (const [slot, videos] of world.pinned) for (const v of videos) await put({ pk: `video#${v}`, videoId: v, pinnedSlot: slot, token: 0, state: 'pinned' });
  return table;
}

/** Runs the janitor once; returns the gauges and counters it emitted, its launches and the DLQs it read. */
async function runJanitor(world: World, tunables: Partial<Tunables> = {}, trigger: JanitorTrigger = { kind: 'schedule' }) {
  const t: Tunables = { ...DEFAULT_TUNABLES, slotCount: world.slots.length, ...tunables };
  const metrics = new Map<string, number>();
  const launches: LaunchRequest[] = [];
  const dlqReads: number[] = [];
  world.table ??= await seededTable(world);
  const leases = world.table.leases();
  const queues: Pick<SlotQueue, 'depth' | 'dlqDepth'> = {
    depth: async () => ({ visible: 0, inFlight: 0 }),
    dlqDepth: async (slot: number) => {
      dlqReads.push(slot);
      const n = world.dlq.get(slot);
      if (n === undefined) throw new Error('AWS.SimpleQueueService.NonExistentQueue');
      return n;
    },
  };
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
