/**
 * New videos of one batch are admitted first come, first served on one view of the fleet,
 * pins of different slots in parallel and pins of one slot in order (decision 33); a pin
 * overtaken by another router falls back to the one-by-one admission.
 */
import { describe, expect, it } from 'vitest';
import { FrameRouter } from '../../../core/fleet/router.ts';
import { DEFAULT_TUNABLES, validateTunables } from '../../../core/config.ts';
import { emptySlotRecord, type SlotRecord } from '../../../core/leases/lease-logic.ts';
import type { LeaseTable } from '../../../core/leases/port.ts';
import type { SlotQueue } from '../../../core/ingest/port.ts';
import { nullMetrics, type LogSink } from '../../../core/ports.ts';
import { sleep } from '../../../core/async.ts';

const NOW = 1_000_000_000;
const log: LogSink = { debug() {}, info() {}, warn() {}, error() {} };

function harness(slotCount: number, videosPerSlot: number, fullOnFirstTry: ReadonlySet<number> = new Set()) {
  const counts = new Map<number, number>();
  const pins = new Map<string, number>();
  const pinOrder: string[] = [];
  const inFlight = new Map<number, number>();
  let maxPerSlot = 0;
  let maxOverall = 0;
  let overall = 0;
  const refused = new Set<number>();
  const slot = (n: number): SlotRecord => ({ ...emptySlotRecord(n), owner: `w${n}`, expiresAtMs: NOW + 60_000, heartbeatAtMs: NOW, videoCount: counts.get(n) ?? 0 });
  const leases = {
    getPins: async (ids: readonly string[]) => new Map(ids.flatMap((id) => (pins.has(id) ? [[id, { pinnedSlot: pins.get(id)!, token: 0 }] as const] : []))),
    getSlots: async (count: number) => Array.from({ length: count }, (_, n) => slot(n)),
    getSlotsNumbered: async (numbers: readonly number[]) => numbers.map(slot),
    pinVideo: async (videoId: string, s: number, _now: number, cap?: number) => {
      inFlight.set(s, (inFlight.get(s) ?? 0) + 1);
      overall++;
      maxPerSlot = Math.max(maxPerSlot, inFlight.get(s)!);
      maxOverall = Math.max(maxOverall, overall);
      await sleep(2);
      inFlight.set(s, inFlight.get(s)! - 1);
      overall--;
      if (fullOnFirstTry.has(s) && !refused.has(s)) {
        // Another router filled the slot meanwhile.
        refused.add(s);
        counts.set(s, videosPerSlot);
        return 'slot-full';
      }
      if (cap !== undefined && (counts.get(s) ?? 0) >= cap) return 'slot-full';
      counts.set(s, (counts.get(s) ?? 0) + 1);
      pins.set(videoId, s);
      pinOrder.push(videoId);
      return 'pinned';
    },
  } as unknown as LeaseTable;
  const queues: Pick<SlotQueue, 'send'> = { send: async (_s: number, messages: readonly unknown[]) => messages.map(() => ({ ok: true as const })) };
  const router = new FrameRouter({
    bucket: 'bkt',
    tunables: validateTunables({ ...DEFAULT_TUNABLES, slotCount, videosPerSlot }),
    leases,
    queues,
    deadLetter: async (events) => events.map(() => true),
    launcher: () => undefined,
    metrics: nullMetrics,
    log,
    now: () => NOW,
  });
  return { router, pins, counts, stats: () => ({ maxPerSlot, maxOverall }) };
}

const frame = (video: string) => ({
  id: `${video}-0`,
  body: JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', s3: { bucket: { name: 'bkt' }, object: { key: `frames/${video}/0.jpg`, size: 10 } } }] }),
});

describe('admitting the new videos of one batch', () => {
  it('spreads them over the slots in arrival order, slots in parallel, one slot in order', async () => {
    const { router, pins, counts, stats } = harness(4, 8);
    const videos = Array.from({ length: 20 }, (_, i) => `v${String(i).padStart(2, '0')}`);
    const outcomes = await router.route(videos.map(frame));
    expect([...outcomes.values()].filter(Boolean)).toEqual([]);
    expect(pins.size).toBe(20);
    expect([...counts.values()].sort()).toEqual([5, 5, 5, 5]);
    // Least loaded first, ties by slot number: arrival order decides who goes where.
    expect(videos.slice(0, 4).map((v) => pins.get(v))).toEqual([0, 1, 2, 3]);
    expect(stats().maxPerSlot).toBe(1);
    expect(stats().maxOverall).toBeGreaterThan(1);
  });

  it('admits first comers while there is room and the rest over capacity, none refused', async () => {
    const { router, pins, counts } = harness(2, 2);
    await router.route(['a', 'b', 'c', 'd', 'e', 'f'].map(frame));
    expect(['a', 'b', 'c', 'd'].map((v) => pins.get(v)).sort()).toEqual([0, 0, 1, 1]);
    expect(pins.size).toBe(6);
    expect((counts.get(0) ?? 0) + (counts.get(1) ?? 0)).toBe(6);
  });

  it('falls back to choosing again when another router filled the planned slot', async () => {
    const { router, pins } = harness(4, 8, new Set([0]));
    const videos = ['a', 'b', 'c', 'd', 'e'];
    const outcomes = await router.route(videos.map(frame));
    expect([...outcomes.values()].filter(Boolean)).toEqual([]);
    expect(pins.size).toBe(5);
    // Slot 0 is full now; whoever was planned there went elsewhere.
    expect(videos.map((v) => pins.get(v)).filter((s) => s === 0)).toEqual([]);
  });
});
