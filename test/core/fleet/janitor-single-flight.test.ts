/**
 * Issue 35, item 1: the janitor's scheduled runs are single-flight without Lambda reserved
 * concurrency, through a run lock (core/fleet/dynamodb/janitor-run-lock.ts). A run that finds the
 * lock held skips; task-stopped runs never wait for it; a lock that fails does not stop
 * the run (overlapping runs are safe, every write being conditional).
 */
import { describe, expect, it } from 'vitest';
import { Janitor, type RunLock } from '../../../core/fleet/janitor.ts';
import { DEFAULT_TUNABLES } from '../../../core/config.ts';
import { emptySlotRecord } from '../../../core/leases/lease-logic.ts';
import type { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import type { SlotQueues } from '../../../core/ingest/sqs/slot-queues.ts';
import type { LogSink, MetricSink } from '../../../core/ports.ts';

const NOW = 5_000_000_000;

/** A janitor over one idle slot whose slot reads are counted and can be held open. */
function janitorWith(runLock: RunLock | undefined) {
  let reads = 0;
  let openRead: (() => void) | undefined;
  const gate = { hold: false };
  const leases = {
    getSlots: async () => {
      reads++;
      if (gate.hold) await new Promise<void>((resolve) => (openRead = resolve));
      return [emptySlotRecord(0)];
    },
    listPinnedBySlot: async () => new Map(),
    listPinned: async () => [],
    getSlot: async () => emptySlotRecord(0),
    setVideoCount: async () => {},
    expireStoppedOwner: async () => false,
  } as unknown as LeaseStore;
  const queues = { depth: async () => ({ visible: 0, inFlight: 0 }), dlqDepth: async () => 0 } as unknown as SlotQueues;
  const metrics: MetricSink = { count() {}, milliseconds() {} };
  const log: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
  const janitor = new Janitor({
    tunables: { ...DEFAULT_TUNABLES, slotCount: 1 },
    leases,
    queues,
    launcher: () => undefined,
    metrics,
    log,
    now: () => NOW,
    ...(runLock ? { runLock } : {}),
  });
  return { janitor, reads: () => reads, gate, release: () => openRead?.() };
}

/** An in-memory lock with the conditional-put rule of JanitorRunLock: taken unless held and unexpired. */
function memoryLock(holdMs = 60_000) {
  let held: { token: string; expiresAtMs: number } | undefined;
  let n = 0;
  const calls = { acquired: 0, refused: 0, released: 0 };
  const lock: RunLock = {
    acquire: async (nowMs) => {
      if (held && held.expiresAtMs > nowMs) {
        calls.refused++;
        return undefined;
      }
      held = { token: `t${++n}`, expiresAtMs: nowMs + holdMs };
      calls.acquired++;
      return held.token;
    },
    release: async (token) => {
      if (held?.token === token) held = undefined;
      calls.released++;
    },
  };
  return { lock, calls };
}

describe('janitor: single flight of scheduled runs (no reserved concurrency)', () => {
  it('skips a scheduled run while another holds the run lock, and runs again once it is given back', async () => {
    // Prepare: the first run is held inside its slot read
    const { lock, calls } = memoryLock();
    const j = janitorWith(lock);
    j.gate.hold = true;
    const first = j.janitor.run({ kind: 'schedule' });
    await new Promise((r) => setTimeout(r, 0));

    // Act
    const second = await j.janitor.run({ kind: 'schedule' });
    j.gate.hold = false;
    j.release();
    const firstReport = await first;
    const third = await j.janitor.run({ kind: 'schedule' });

    // Assess
    expect(second.skipped).toBe(true);
    expect(firstReport.skipped).toBeUndefined();
    expect(third.skipped).toBeUndefined();
    expect(j.reads()).toBe(2);
    expect(calls).toEqual({ acquired: 2, refused: 1, released: 2 });
  });

  it('never makes a task-stopped run wait for the lock', async () => {
    // Prepare: a lock that is always held
    const lock: RunLock = { acquire: async () => undefined, release: async () => {} };
    const j = janitorWith(lock);

    // Act
    const stopped = await j.janitor.run({ kind: 'task-stopped', slot: 0, stoppedAtMs: NOW - 1000 });

    // Assess
    expect(stopped.skipped).toBeUndefined();
  });

  it('runs without the lock when the lock cannot be taken (a DynamoDB error), and when there is none', async () => {
    // Prepare
    const broken: RunLock = { acquire: async () => Promise.reject(new Error('ProvisionedThroughputExceededException')), release: async () => {} };

    // Act
    const withBroken = janitorWith(broken);
    const report = await withBroken.janitor.run({ kind: 'schedule' });
    const without = janitorWith(undefined);
    await without.janitor.run({ kind: 'schedule' });

    // Assess
    expect(report.skipped).toBeUndefined();
    expect(withBroken.reads()).toBe(1);
    expect(without.reads()).toBe(1);
  });

  it('gives the lock back even when the run fails, so the next run is not skipped', async () => {
    // Prepare
    const { lock, calls } = memoryLock();
    const j = janitorWith(lock);
    const leases = (j.janitor as unknown as { d: { leases: { getSlots: () => Promise<unknown> } } }).d.leases;
    const working = leases.getSlots;
    leases.getSlots = async () => Promise.reject(new Error('boom'));

    // Act
    await expect(j.janitor.run({ kind: 'schedule' })).rejects.toThrow('boom');
    leases.getSlots = working;
    const next = await j.janitor.run({ kind: 'schedule' });

    // Assess
    expect(next.skipped).toBeUndefined();
    expect(calls).toEqual({ acquired: 2, refused: 0, released: 2 });
  });
});
