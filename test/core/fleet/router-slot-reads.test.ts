/**
 * The router's DynamoDB reads do not grow with `slotCount`: routing frames of pinned
 * videos reads only the slots they go to (for the launch check), cached like the full
 * view; only admitting a new video reads every slot.
 */
import { describe, expect, it } from 'vitest';
import { FrameRouter } from '../../../core/fleet/router.ts';
import { DEFAULT_TUNABLES, validateTunables } from '../../../core/config.ts';
import { emptySlotRecord, type SlotRecord } from '../../../core/leases/lease-logic.ts';
import type { LeaseTable } from '../../../core/leases/port.ts';
import type { SlotQueue } from '../../../core/ingest/port.ts';
import { nullMetrics, type LogSink, type TaskLauncher } from '../../../core/ports.ts';

const SLOTS = 1000;
const NOW = 1_000_000_000;

function harness(pins: Record<string, number>) {
  const reads = { full: 0, numbered: [] as number[][] };
  // Every slot live (heartbeat now), so nothing needs a launch.
  const slot = (n: number): SlotRecord => ({ ...emptySlotRecord(n), owner: `w${n}`, expiresAtMs: NOW + 60_000, heartbeatAtMs: NOW });
  const leases = {
    getPins: async (ids: readonly string[]) => new Map(ids.flatMap((id) => (pins[id] !== undefined ? [[id, { pinnedSlot: pins[id], token: 1 }] as const] : []))),
    getSlots: async (count: number) => {
      reads.full++;
      return Array.from({ length: count }, (_, n) => slot(n));
    },
    getSlotsNumbered: async (numbers: readonly number[]) => {
      reads.numbered.push([...numbers]);
      return numbers.map(slot);
    },
    pinVideo: async () => 'pinned',
  } as unknown as LeaseTable;
  const queues: Pick<SlotQueue, 'send'> = { send: async (_slot: number, messages: readonly unknown[]) => messages.map(() => ({ ok: true as const })) };
  const log: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
  const launcher: TaskLauncher = { launch: async () => ({ launched: true }) };
  let now = NOW;
  const router = new FrameRouter({
    bucket: 'bkt',
    tunables: validateTunables({ ...DEFAULT_TUNABLES, slotCount: SLOTS }),
    leases,
    queues,
    deadLetter: async (events) => events.map(() => true),
    launcher: () => launcher,
    metrics: nullMetrics,
    log,
    now: () => now,
  });
  return { router, reads, advance: (ms: number) => void (now += ms) };
}

const frame = (video: string, n: number) => ({
  id: `${video}-${n}`,
  body: JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bkt' }, object: { key: `frames/${video}/${n}.jpg`, size: 10 } } }] }),
});

describe('router slot reads at 1,000 slots', () => {
  it('reads only the target slots for pinned videos, once per cache period', async () => {
    // Prepare
    const { router, reads, advance } = harness({ a: 7, b: 912 });
    // Act: two batches within the cache period, one after it
    await router.route([frame('a', 0), frame('b', 0)]);
    await router.route([frame('a', 1), frame('b', 1)]);
    advance(DEFAULT_TUNABLES.routerSlotCacheSeconds * 1000 + 1);
    await router.route([frame('a', 2)]);
    // Assess: never the whole fleet; the two slots once, then slot 7 again after expiry
    expect(reads.full).toBe(0);
    expect(reads.numbered.map((r) => [...r].sort((x, y) => x - y))).toEqual([[7, 912], [7]]);
  });

  it('reads every slot only to admit a new video', async () => {
    const { router, reads } = harness({});
    await router.route([frame('new', 0)]);
    expect(reads.full).toBe(1);
    // The admission's full read also serves the launch check.
    expect(reads.numbered).toEqual([]);
  });
});
