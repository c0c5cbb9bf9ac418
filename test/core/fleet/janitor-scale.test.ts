/**
 * The janitor's cost per run does not grow one call per slot (issue 10): on the lease
 * table's twin and the SQS FIFO model (the production adapters over them, every call
 * recorded as the SDK names it) with 250 slots (three sweep groups of at most 100), one BatchGetItem per
 * 100 slots, one Scan of the pinned-slot index, and at most 100 slot-queue reads per run;
 * every queue still read once every three periods, and work found wherever it is.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs';
import type { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import { SlotQueues } from '../../../core/ingest/sqs/slot-queues.ts';
import { SqsFifoModel } from '../../../core/ingest/memory/sqs-fifo-model.ts';
import { MemoryLeaseTable } from '../../../core/leases/memory/memory-lease-table.ts';
import { Janitor, QUEUE_SWEEP_SLOTS_PER_RUN, inQueueSweep } from '../../../core/fleet/janitor.ts';
import { DEFAULT_TUNABLES, type Tunables } from '../../../core/config.ts';
import { nullMetrics, type LaunchRequest, type LogSink, type TaskLauncher } from '../../../core/ports.ts';

const SLOTS = 250;
const GROUPS = Math.ceil(SLOTS / QUEUE_SWEEP_SLOTS_PER_RUN);
const tunables: Tunables = { ...DEFAULT_TUNABLES, slotCount: SLOTS };
const PERIOD_MS = tunables.janitorIntervalSeconds * 1000;
let store: LeaseStore;
let queues: SlotQueues;
let sqs: SQSClient;
/** Every call the janitor's clients made: `service command [queue url]`, the command as the SDK's low-level client names it. */
const calls: string[] = [];

beforeAll(() => {
  const table = new MemoryLeaseTable();
  table.db.intercept = (operation, _input, run) => {
    calls.push(`dynamodb ${operation}Command`);
    return run();
  };
  store = table.leases();
  const model = new SqsFifoModel();
  const slotQueueUrlPrefix = 'https://sqs.us-east-1.amazonaws.com/000000000000/JS-slot-';
  model.createSlotQueues(slotQueueUrlPrefix, SLOTS, { visibilityTimeoutSeconds: tunables.slotQueueVisibilitySeconds, maxReceiveCount: tunables.slotQueueMaxReceiveCount });
  const client = model.asClient();
  const send = (command: { input?: { QueueUrl?: string } }, ...rest: unknown[]) => {
    const url = command.input?.QueueUrl;
    calls.push(`sqs ${command.constructor.name}${url ? ` ${url}` : ''}`);
    return (client.send as (c: unknown, ...r: unknown[]) => Promise<unknown>)(command, ...rest);
  };
  sqs = new Proxy(client, { get: (target, prop, receiver) => (prop === 'send' ? send : Reflect.get(target, prop, receiver)) });
  queues = new SlotQueues(sqs, slotQueueUrlPrefix);
});

const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

function janitorAt(clock: { now: number }): { janitor: Janitor; launches: LaunchRequest[] } {
  const launches: LaunchRequest[] = [];
  const launcher: TaskLauncher = {
    launch: async (r) => {
      launches.push(r);
      return { launched: true, taskId: `task-${r.slot}-${r.launchSeq}` };
    },
  };
  return { janitor: new Janitor({ tunables, leases: store, queues, launcher: () => launcher, metrics: nullMetrics, log: quiet, now: () => clock.now }), launches };
}

const slotOfUrl = (line: string) => Number(/-slot-(\d+)\.fifo$/.exec(line)?.[1] ?? NaN);

describe('janitor calls per run at 250 slots', () => {
  it('reads slots in batches of 100, pins in one Scan, and at most 100 slot queues (and their DLQs) per run, each queue once every 3 periods', async () => {
    // Prepare: an idle fleet, at the start of a sweep cycle
    const clock = { now: Math.ceil(Date.now() / (GROUPS * PERIOD_MS)) * GROUPS * PERIOD_MS };
    const { janitor } = janitorAt(clock);
    const readCount = new Map<number, number>();

    // Act: one full cycle of periods
    const perRun: string[][] = [];
    for (let run = 0; run < GROUPS; run++) {
      calls.length = 0;
      const report = await janitor.run();
      perRun.push([...calls]);
      for (const slot of report.queuesChecked) readCount.set(slot, (readCount.get(slot) ?? 0) + 1);
      clock.now += PERIOD_MS;
    }

    // Assess
    for (const c of perRun) {
      expect(c.filter((l) => l === 'dynamodb BatchGetItemCommand')).toHaveLength(GROUPS);
      expect(c.filter((l) => l === 'dynamodb ScanCommand')).toHaveLength(1);
      expect(c.filter((l) => l.startsWith('dynamodb QueryCommand'))).toEqual([]);
      const depthReads = c.filter((l) => l.startsWith('sqs GetQueueAttributesCommand') && !l.endsWith('-dlq.fifo'));
      expect(depthReads.length).toBeLessThanOrEqual(QUEUE_SWEEP_SLOTS_PER_RUN);
      expect(depthReads.length).toBeGreaterThanOrEqual(Math.floor(SLOTS / GROUPS));
      // The SlotDlqMessages gauge reads the DLQs of the same sweep group (no slot is owned
      // here), so a message left in an idle slot's DLQ is counted once per cycle.
      const dlqReads = c.filter((l) => l.startsWith('sqs GetQueueAttributesCommand') && l.endsWith('-dlq.fifo'));
      expect(dlqReads.map((l) => Number(/-slot-(\d+)-dlq\.fifo$/.exec(l)?.[1])).sort((a, b) => a - b)).toEqual(depthReads.map(slotOfUrl).sort((a, b) => a - b));
      expect(c.length).toBe(GROUPS + 1 + depthReads.length + dlqReads.length);
    }
    expect([...readCount.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: SLOTS }, (_, i) => i));
    expect([...readCount.values()].every((n) => n === 1)).toBe(true);
  });

  it('launches a slot with pinned videos and no owner at once, without reading its queue, and repairs its count from the Scan', async () => {
    // Prepare: slot 7 has two pinned videos and nobody owns it; its count says 5
    const clock = { now: Date.now() };
    const slot = [7, 8, 9].find((s) => !inQueueSweep(s, clock.now, tunables))!;
    expect(await store.pinVideo('scale-a', slot, clock.now)).toBe('pinned');
    expect(await store.pinVideo('scale-b', slot, clock.now)).toBe('pinned');
    await store.setVideoCount(slot, 2, 5);
    const { janitor, launches } = janitorAt(clock);
    calls.length = 0;

    // Act
    const report = await janitor.run();

    // Assess
    expect(launches.map((l) => l.slot)).toEqual([slot]);
    expect(report.countsRepaired).toEqual([slot]);
    expect((await store.getSlot(slot)).videoCount).toBe(2);
    expect(report.pinnedVideos).toBe(2);
    expect(calls.filter((l) => l.startsWith('sqs') && slotOfUrl(l) === slot)).toEqual([]);
  });

  it('finds a queue holding messages for no pinned video (a stray) within one sweep cycle', async () => {
    // Prepare: a message in slot 200's queue, nothing pinned there, no owner
    const stray = 200;
    await sqs.send(new SendMessageCommand({ QueueUrl: queues.url(stray), MessageBody: '{}', MessageGroupId: 'stray', MessageDeduplicationId: `stray-${Date.now()}` }));
    const clock = { now: Date.now() };
    const { janitor, launches } = janitorAt(clock);

    // Act
    let runs = 0;
    while (!launches.some((l) => l.slot === stray) && runs < 2 * GROUPS) {
      await janitor.run();
      clock.now += PERIOD_MS;
      runs++;
    }

    // Assess
    expect(launches.map((l) => l.slot)).toContain(stray);
    expect(runs).toBeLessThanOrEqual(GROUPS);
  });
});

describe('inQueueSweep', () => {
  it('reads every queue at every run up to 100 slots', () => {
    // Act & Assess
    for (const now of [0, 60_000, 123_456_789]) {
      for (let slot = 0; slot < 100; slot++) expect(inQueueSweep(slot, now, { ...tunables, slotCount: 100 })).toBe(true);
    }
  });

  it('splits 1,000 slots into 10 groups of 100, one per janitor period, each slot once per 10 periods', () => {
    // Prepare
    const t = { slotCount: 1000, janitorIntervalSeconds: 60 };

    // Act
    const groups = Array.from({ length: 10 }, (_, period) => Array.from({ length: 1000 }, (_, s) => s).filter((s) => inQueueSweep(s, period * 60_000, t)));

    // Assess
    for (const g of groups) expect(g).toHaveLength(100);
    expect(groups.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: 1000 }, (_, s) => s));
    expect(inQueueSweep(3, 0, t)).toBe(inQueueSweep(3, 10 * 60_000, t));
  });
});
