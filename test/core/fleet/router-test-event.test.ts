/**
 * The router acknowledges S3's `s3:TestEvent` (sent when the bucket notification is
 * configured) instead of dead-lettering it, so the ingest-DLQ alarm is quiet after a
 * deploy; and it counts a launch that replaces a start that never came up.
 */
import { describe, expect, it } from 'vitest';
import { FrameRouter, type RejectedEvent } from '../../../core/fleet/router.ts';
import { DEFAULT_TUNABLES } from '../../../core/config.ts';
import { emptySlotRecord, type SlotRecord } from '../../../core/leases/lease-logic.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import type { LeaseTable } from '../../../core/leases/port.ts';
import type { SlotQueue } from '../../../core/ingest/port.ts';
import type { LaunchRequest, LogSink, MetricSink, TaskLauncher } from '../../../core/ports.ts';

interface Recorded {
  readonly deadLettered: RejectedEvent[];
  readonly counted: string[];
  readonly info: string[];
  readonly launches: LaunchRequest[];
}

function harness(opts: { slots?: SlotRecord[]; now?: number } = {}): { router: FrameRouter; rec: Recorded } {
  const rec: Recorded = { deadLettered: [], counted: [], info: [], launches: [] };
  const slots = opts.slots ?? [emptySlotRecord(0)];
  const leases = {
    getPins: async (ids: readonly string[]) => new Map(ids.map((id) => [id, { pinnedSlot: 0, token: 1 }])),
    getSlots: async () => slots,
    getSlotsNumbered: async (numbers: readonly number[]) => numbers.map((n) => slots[n]!),
    requestLaunch: async (slot: number) => slots[slot]!.launchSeq + 1,
  } as unknown as LeaseTable;
  const queues: Pick<SlotQueue, 'send'> = { send: async (_slot: number, messages: readonly unknown[]) => messages.map(() => ({ ok: true as const })) };
  const metrics: MetricSink = { count: (name, value = 1) => void rec.counted.push(...Array<string>(value).fill(name)), milliseconds() {} };
  const log: LogSink = { debug() {}, info: (m) => void rec.info.push(m), warn() {}, error() {} };
  const launcher: TaskLauncher = {
    launch: async (r) => {
      rec.launches.push(r);
      return { launched: true };
    },
  };
  const router = new FrameRouter({
    bucket: 'bkt',
    tunables: DEFAULT_TUNABLES,
    leases,
    queues,
    deadLetter: async (events) => {
      rec.deadLettered.push(...events);
      return events.map(() => true);
    },
    launcher: () => launcher,
    metrics,
    log,
    now: () => opts.now ?? 1_000_000_000,
  });
  return { router, rec };
}

const testEvent = JSON.stringify({ Service: 'Amazon S3', Event: 's3:TestEvent', Time: '2026-11-01T00:00:00.000Z', Bucket: 'bkt', RequestId: 'R', HostId: 'H' });
const frameEvent = (key: string) => JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bkt' }, object: { key, size: 10 } } }] });

describe('router and the s3:TestEvent', () => {
  it('acknowledges the test event (no DLQ, no retry), counts it and logs it at INFO, while bad input still goes to the DLQ', async () => {
    // Prepare
    const { router, rec } = harness();

    // Act
    const outcomes = await router.route([
      { id: 'test', body: testEvent },
      { id: 'bad', body: frameEvent('frames/v/abc.jpg') },
    ]);

    // Assess: both records succeed (deleted from the ingest queue); only the bad key is dead-lettered
    expect(outcomes.get('test')).toBeUndefined();
    expect(outcomes.get('bad')).toBeUndefined();
    expect(rec.deadLettered.map((e) => e.reason)).toEqual(['bad-frame-name']);
    expect(rec.counted.filter((n) => n === METRIC_NAMES.router.s3TestEvents)).toHaveLength(1);
    expect(rec.counted).toContain(METRIC_NAMES.router.eventsRejected);
    expect(rec.info).toContain('s3 test event acknowledged');
  });

  it('routes the frames that share a batch with a test event', async () => {
    // Prepare
    const { router, rec } = harness();

    // Act
    const outcomes = await router.route([
      { id: 'test', body: testEvent },
      { id: 'f', body: frameEvent('frames/v/000001.jpg') },
    ]);

    // Assess
    expect([...outcomes.values()]).toEqual([undefined, undefined]);
    expect(rec.deadLettered).toEqual([]);
    expect(rec.counted).toContain(METRIC_NAMES.router.framesRouted);
  });
});

describe('router launches and start timeouts', () => {
  const now = 1_000_000_000;
  const grace = DEFAULT_TUNABLES.taskStartGraceSeconds * 1000;

  it('counts a start timeout when it relaunches a slot whose previous task never heartbeated within the grace', async () => {
    // Prepare: launched just over a grace ago, last heartbeat long before that
    const slot: SlotRecord = { ...emptySlotRecord(0), launchSeq: 1, launchRequestedAtMs: now - grace - 1_000, heartbeatAtMs: now - 3_600_000 };
    const { router, rec } = harness({ slots: [slot], now });

    // Act
    await router.route([{ id: 'f', body: frameEvent('frames/v/000001.jpg') }]);

    // Assess
    expect(rec.launches.map((l) => l.slot)).toEqual([0]);
    expect(rec.counted).toContain(METRIC_NAMES.router.taskStartTimeouts);
  });

  it('does not count one when the slot\'s previous task ran (heartbeated after its launch) and is gone', async () => {
    // Prepare: a worker that started, heartbeated, then crashed or exited when idle
    const slot: SlotRecord = { ...emptySlotRecord(0), launchSeq: 1, launchRequestedAtMs: now - 3_600_000, heartbeatAtMs: now - 60_000, expiresAtMs: now - 45_000 };
    const { router, rec } = harness({ slots: [slot], now });

    // Act
    await router.route([{ id: 'f', body: frameEvent('frames/v/000001.jpg') }]);

    // Assess
    expect(rec.launches.map((l) => l.slot)).toEqual([0]);
    expect(rec.counted).not.toContain(METRIC_NAMES.router.taskStartTimeouts);
  });

  it('does not relaunch a slot whose task is still inside its start grace (a cold start)', async () => {
    // Prepare: launched 10 minutes ago (a slow cold start from zero), no heartbeat yet
    const slot: SlotRecord = { ...emptySlotRecord(0), launchSeq: 1, launchRequestedAtMs: now - 600_000, heartbeatAtMs: 0 };
    const { router, rec } = harness({ slots: [slot], now });

    // Act
    await router.route([{ id: 'f', body: frameEvent('frames/v/000001.jpg') }]);

    // Assess
    expect(rec.launches).toEqual([]);
    expect(rec.counted).not.toContain(METRIC_NAMES.router.taskStartTimeouts);
  });
});
