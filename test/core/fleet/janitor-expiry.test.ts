/**
 * The janitor's expiry of a stopped task's slot lease, on the lease table's twin (the
 * production lease adapter; its conditions are checked against DynamoDB Local by
 * test/core/leases/contract.int.test.ts) and the SQS FIFO model: when a
 * worker task is reported stopped, its lease ends at once (so the replacement claims
 * without waiting for the TTL), but only if that task still held the slot: its owner
 * claimed before the stop (and is the stopped worker, when the report names it).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { SlotQueues } from '../../../core/ingest/sqs/slot-queues.ts';
import { SqsFifoModel } from '../../../core/ingest/memory/sqs-fifo-model.ts';
import { MemoryLeaseTable } from '../../../core/leases/memory/memory-lease-table.ts';
import { Janitor, stoppedSlotOf, type JanitorTrigger } from '../../../core/fleet/janitor.ts';
import { DEFAULT_TUNABLES, WORKER_ENV, type Tunables } from '../../../core/config.ts';
import { nullMetrics, type LaunchRequest, type LogSink, type TaskLauncher } from '../../../core/ports.ts';

const SLOTS = 6;
const TTL_MS = 15_000;
const tunables: Tunables = { ...DEFAULT_TUNABLES, slotCount: SLOTS };
let store: LeaseStore;
let queues: SlotQueues;

beforeAll(() => {
  store = new MemoryLeaseTable().leases();
  const model = new SqsFifoModel();
  const slotQueueUrlPrefix = 'https://sqs.us-east-1.amazonaws.com/000000000000/JE-slot-';
  model.createSlotQueues(slotQueueUrlPrefix, SLOTS, { visibilityTimeoutSeconds: tunables.slotQueueVisibilitySeconds, maxReceiveCount: tunables.slotQueueMaxReceiveCount });
  queues = new SlotQueues(model.asClient(), slotQueueUrlPrefix);
});

const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

/** A janitor whose launcher records what it was asked to start. */
function janitor(): { janitor: Janitor; launches: LaunchRequest[] } {
  const launches: LaunchRequest[] = [];
  const launcher: TaskLauncher = {
    launch: async (r) => {
      launches.push(r);
      return { launched: true, taskId: `task-${r.slot}-${r.launchSeq}` };
    },
  };
  return { janitor: new Janitor({ tunables, leases: store, queues, launcher: () => launcher, metrics: nullMetrics, log: quiet }), launches };
}

const stopped = (slot: number, stoppedAtMs: number, extra: { workerId?: string; exitCode?: number } = {}): JanitorTrigger => ({ kind: 'task-stopped', slot, stoppedAtMs, ...extra });

/** A slot with work (one pinned video), owned by `owner` since `claimedAtMs`. */
async function ownedSlot(slot: number, owner: string, claimedAtMs: number): Promise<number> {
  const claimed = await store.claimSlot(slot, owner, claimedAtMs, TTL_MS);
  if (!claimed) throw new Error(`slot ${slot} could not be claimed`);
  expect(await store.pinVideo(`video-of-slot-${slot}`, slot, claimedAtMs)).toBe('pinned');
  return claimed.epoch;
}

describe('janitor on a task-stopped report', () => {
  it('expires the lease of an owner that claimed before the stop, launches a replacement, which claims at once', async () => {
    // Prepare: A claimed 3 s ago, its lease runs another 12 s
    const now = Date.now();
    const epochA = await ownedSlot(0, 'A', now - 3_000);
    const { janitor: j, launches } = janitor();
    // Act: A's task is reported stopped 1 s ago
    const report = await j.run(stopped(0, now - 1_000, { workerId: 'A', exitCode: 137 }));
    // Assess: the lease ended no later than the stop, a replacement was launched, and it claims now
    const slot = await store.getSlot(0);
    expect(slot.owner).toBe('A');
    expect(slot.expiresAtMs).toBeLessThanOrEqual(now - 1_000);
    expect(report.launched).toEqual([0]);
    expect(launches.map((l) => l.slot)).toEqual([0]);
    const b = await store.claimSlot(0, 'B', Date.now(), TTL_MS);
    expect(b?.epoch).toBe(epochA + 1);
    expect(await store.renewSlot({ slot: 0, workerId: 'A', epoch: epochA }, Date.now(), TTL_MS)).toBe('lost');
  });

  it('without a worker id in the report, still requires the owner to have claimed before the stop', async () => {
    const now = Date.now();
    await ownedSlot(1, 'A', now - 3_000);
    const { janitor: j } = janitor();
    await j.run(stopped(1, now - 500, { exitCode: 1 }));
    expect((await store.getSlot(1)).expiresAtMs).toBeLessThanOrEqual(now);
    expect(await store.claimSlot(1, 'B', Date.now(), TTL_MS)).toBeDefined();
  });

  it('does nothing when a newer owner claimed the slot after the task stopped', async () => {
    // Prepare: A's lease ran out long ago; B claimed 1 s ago; the report of A's stop (2 s ago) comes late
    const now = Date.now();
    await store.claimSlot(2, 'A', now - 60_000, TTL_MS);
    const epochB = await ownedSlot(2, 'B', now - 1_000);
    const before = await store.getSlot(2);
    const { janitor: j, launches } = janitor();
    // Act
    const report = await j.run(stopped(2, now - 2_000));
    // Assess: B keeps its lease, nobody else can claim, nothing launched
    const after = await store.getSlot(2);
    expect(after).toEqual(before);
    expect(after.owner).toBe('B');
    expect(after.epoch).toBe(epochB);
    expect(report.launched).toEqual([]);
    expect(launches).toEqual([]);
    expect(await store.claimSlot(2, 'C', Date.now(), TTL_MS)).toBeUndefined();
  });

  it('does nothing when the stopped worker is not the owner, even if the owner claimed before the stop', async () => {
    // A zombie (A) paused past its lease; B took over; A resumed, found its lease lost and exited.
    const now = Date.now();
    await store.claimSlot(3, 'A', now - 60_000, TTL_MS);
    await ownedSlot(3, 'B', now - 5_000);
    const before = await store.getSlot(3);
    const { janitor: j, launches } = janitor();
    await j.run(stopped(3, now - 100, { workerId: 'A', exitCode: 137 }));
    expect(await store.getSlot(3)).toEqual(before);
    // Without the worker id, its exit code (3: lease lost) says it held nothing.
    await j.run(stopped(3, now - 100, { exitCode: 3 }));
    expect(await store.getSlot(3)).toEqual(before);
    // Drained workers (exit 0) released their slot themselves.
    await j.run(stopped(3, now - 100, { exitCode: 0 }));
    expect(await store.getSlot(3)).toEqual(before);
    expect(launches).toEqual([]);
    expect(await store.claimSlot(3, 'C', Date.now(), TTL_MS)).toBeUndefined();
  });

  it('leaves released and already expired leases alone', async () => {
    const now = Date.now();
    const epoch = await ownedSlot(4, 'A', now - 3_000);
    expect(await store.releaseSlot({ slot: 4, workerId: 'A', epoch }, now - 2_000)).toBe(true);
    expect(await store.expireStoppedOwner(4, now - 1_000, now)).toBe(false);
    await store.claimSlot(5, 'A', now - 60_000, TTL_MS);
    expect(await store.expireStoppedOwner(5, now - 1_000, now, 'A')).toBe(false);
  });
});

describe('stoppedSlotOf', () => {
  const base = { version: '0', 'detail-type': 'ECS Task State Change', source: 'aws.ecs', time: '2026-11-20T10:00:05Z' };

  it('reads slot, stop time, exit code and worker id from an ECS task-stopped event', () => {
    const event = {
      ...base,
      detail: {
        lastStatus: 'STOPPED',
        startedBy: 'slot-3',
        executionStoppedAt: '2026-11-20T10:00:01Z',
        stoppedAt: '2026-11-20T10:00:04Z',
        containers: [{ name: 'worker', exitCode: 137 }],
        overrides: { containerOverrides: [{ name: 'worker', environment: [{ name: 'SLOT_ID', value: '3' }, { name: WORKER_ENV.workerId, value: 'w-3' }] }] },
      },
    };
    expect(stoppedSlotOf(event)).toEqual({ slot: 3, stoppedAtMs: Date.parse('2026-11-20T10:00:01Z'), exitCode: 137, workerId: 'w-3' });
  });

  it('falls back to stoppedAt, then the event time; omits what the event does not say', () => {
    expect(stoppedSlotOf({ ...base, detail: { lastStatus: 'STOPPED', startedBy: 'slot-0', stoppedAt: '2026-11-20T10:00:04Z' } })).toEqual({
      slot: 0,
      stoppedAtMs: Date.parse('2026-11-20T10:00:04Z'),
    });
    expect(stoppedSlotOf({ ...base, detail: { lastStatus: 'STOPPED', startedBy: 'slot-1' } })).toEqual({ slot: 1, stoppedAtMs: Date.parse(base.time) });
  });

  it('ignores other events', () => {
    expect(stoppedSlotOf({ ...base, detail: { lastStatus: 'RUNNING', startedBy: 'slot-1' } })).toBeUndefined();
    expect(stoppedSlotOf({ ...base, detail: { lastStatus: 'STOPPED', startedBy: 'ecs-svc/123' } })).toBeUndefined();
    expect(stoppedSlotOf({ 'detail-type': 'Scheduled Event' })).toBeUndefined();
  });
});
