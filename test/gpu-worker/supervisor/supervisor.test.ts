import { describe, expect, it } from 'vitest';
import { Supervisor, type SupervisedChild } from '../../../gpu-worker/supervisor/supervisor.ts';
import { HeldHandles, mirroredQueue } from '../../../gpu-worker/supervisor/held-handles.ts';
import type { SlotFence } from '../../../core/leases/port.ts';
import type { ReceivedMessage, SlotQueue } from '../../../core/ingest/port.ts';
import { MAX_PRIMARY_DEATHS } from '../../../core/fleet/hot-spare.ts';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** A supervisor over fake children and fake stores, with a log of what each did, in order. */
function rig(o: { endLease?: 'ended' | 'not-held' | 'throws' } = {}) {
  const events: string[] = [];
  let now = 1_000;
  const children = new Map<string, SupervisedChild>();
  let seq = 0;
  const exits: number[] = [];
  const s = new Supervisor({
    leases: {
      endDeadOwner: async (fence: SlotFence, stoppedAtMs: number) => {
        events.push(`endDeadOwner ${fence.workerId} epoch ${fence.epoch} at ${stoppedAtMs}`);
        if (o.endLease === 'throws') throw new Error('throttled');
        return o.endLease ?? 'ended';
      },
    },
    queues: {
      extendVisibility: async (slot: number, handles: readonly string[], seconds: number) => {
        events.push(`visibility ${seconds} slot ${slot}: ${[...handles].sort().join(',')}`);
        return [];
      },
    },
    newWorkerId: () => `task/${++seq}`,
    spawn: (role, id) => {
      events.push(`spawn ${role} ${id}`);
      const c: SupervisedChild = { id, kill: () => events.push(`kill ${id}`), stop: () => events.push(`stop ${id}`), promote: () => events.push(`promote ${id}`) };
      children.set(id, c);
      return c;
    },
    onTaskExit: (code) => exits.push(code),
    metrics: { count() {}, milliseconds() {} },
    log: silent,
    now: () => now,
  });
  return { s, events, exits, advance: (ms: number) => (now += ms), at: () => now };
}

describe('the supervisor (decision 75)', () => {
  it('on the primary\'s death: ends its lease fenced by its claim, promotes the spare, starts another, and hands back what it still held', async () => {
    const { s, events } = rig();
    s.start();
    s.claimed('task/1', { slot: 2, workerId: 'task/1', epoch: 7 }, 16_000);
    const sink = s.sinkFor('task/1');
    sink.held(2, ['h1', 'h2', 'h3']);
    sink.released(2, ['h2']);
    const verdict = await s.exited('task/1', null, 'SIGKILL');
    expect(verdict).toEqual({ kind: 'failover' });
    // The hand-back starts first and runs beside the release; the promotion waits for the release only.
    expect(events).toEqual([
      'spawn primary task/1',
      'spawn spare task/2',
      'visibility 0 slot 2: h1,h3',
      'endDeadOwner task/1 epoch 7 at 1000',
      'promote task/2',
      'spawn spare task/3',
    ]);
    expect(s.primary?.id).toBe('task/2');
    expect(s.spare?.id).toBe('task/3');
  });

  it('promotes the spare even when the lease could not be ended (its claim then waits for the lease to run out)', async () => {
    const { s, events } = rig({ endLease: 'throws' });
    s.start();
    s.claimed('task/1', { slot: 0, workerId: 'task/1', epoch: 1 }, 16_000);
    await s.exited('task/1', 1, null);
    expect(events.filter((e) => e.startsWith('endDeadOwner'))).toHaveLength(3);
    expect(events).toContain('promote task/2');
  });

  it('a primary that never claimed: nothing to end, the spare is promoted', async () => {
    const { s, events } = rig();
    s.start();
    await s.exited('task/1', 1, null);
    expect(events.some((e) => e.startsWith('endDeadOwner'))).toBe(false);
    expect(events).toContain('promote task/2');
  });

  it('ends the task with the primary\'s own code when it drained, idled out or lost its lease, and takes the spare with it', async () => {
    for (const code of [0, 3]) {
      const { s, events, exits } = rig();
      s.start();
      expect(await s.exited('task/1', code, null)).toEqual({ kind: 'exit', code });
      expect(events).toContain('kill task/2');
      expect(exits).toEqual([code]);
    }
  });

  it('kills a primary frozen past the lease it last confirmed, and only then', () => {
    const { s, events, advance } = rig();
    s.start();
    s.claimed('task/1', { slot: 0, workerId: 'task/1', epoch: 1 }, 4_000);
    s.heartbeat('task/1', 9_000);
    advance(7_999);
    s.checkFrozen();
    expect(events).not.toContain('kill task/1');
    advance(1);
    s.checkFrozen();
    s.checkFrozen();
    expect(events.filter((e) => e === 'kill task/1')).toHaveLength(1);
  });

  it('replaces a spare that died, and gives up on the primary after too many deaths in a row', async () => {
    const { s, events, exits, advance } = rig();
    s.start();
    expect(await s.exited('task/2', 1, null)).toEqual({ kind: 'replace-spare' });
    expect(events).toContain('spawn spare task/3');
    for (let i = 0; i < MAX_PRIMARY_DEATHS - 1; i++) {
      advance(1_000);
      expect((await s.exited(s.primary!.id, null, 'SIGKILL'))?.kind).toBe('failover');
    }
    advance(1_000);
    expect(await s.exited(s.primary!.id, null, 'SIGKILL')).toEqual({ kind: 'give-up', code: 1 });
    expect(exits).toEqual([1]);
  });

  it('on SIGTERM: the primary drains and the spare leaves; the task ends with the primary\'s exit', async () => {
    const { s, events, exits } = rig();
    s.start();
    s.stop();
    expect(events.slice(-2)).toEqual(['stop task/1', 'stop task/2']);
    await s.exited('task/2', 0, null);
    expect(exits).toEqual([]);
    await s.exited('task/1', 0, null);
    expect(exits).toEqual([0]);
  });
});

describe('the worker\'s receipt handles, mirrored (decision 75)', () => {
  const received = (handles: string[]): ReceivedMessage[] => handles.map((h) => ({ messageId: h, receiptHandle: h, body: '{}', receiveCount: 1, groupId: 'v' }));
  function queue(o: { deleteFails?: number; refused?: string[] } = {}): SlotQueue {
    return {
      send: async () => [],
      receive: async () => received(['a', 'b', 'c']),
      delete: async () => o.deleteFails ?? 0,
      extendVisibility: async () => o.refused ?? [],
      deadLetter: async () => undefined,
      dlqDepth: async () => 0,
      depth: async () => ({ visible: 0, inFlight: 0 }),
    };
  }

  it.each([
    { what: 'a receive reports its handles', act: async (q: SlotQueue) => void (await q.receive(0, 10, 0)), held: ['a', 'b', 'c'] },
    { what: 'a delete that succeeded lets them go', act: async (q: SlotQueue) => void (await q.receive(0, 10, 0), await q.delete(0, ['a'])), held: ['b', 'c'] },
    { what: 'an extension keeps them', act: async (q: SlotQueue) => void (await q.receive(0, 10, 0), await q.extendVisibility(0, ['a'], 5)), held: ['a', 'b', 'c'] },
    { what: 'a hand-back (visibility 0) lets them go', act: async (q: SlotQueue) => void (await q.receive(0, 10, 0), await q.extendVisibility(0, ['a', 'b'], 0)), held: ['c'] },
  ])('$what', async ({ act, held }) => {
    const mirror = new HeldHandles();
    await act(mirroredQueue(queue(), mirror));
    expect(mirror.take().get(0) ?? []).toEqual(held);
    expect(mirror.size).toBe(0);
  });

  it('keeps every handle of a delete that partly failed, and a hand-back SQS refused', async () => {
    const mirror = new HeldHandles();
    const q = mirroredQueue(queue({ deleteFails: 1, refused: ['b'] }), mirror);
    await q.receive(0, 10, 0);
    await q.delete(0, ['a', 'c']);
    await q.extendVisibility(0, ['b'], 0);
    expect(mirror.take().get(0)).toEqual(['a', 'b', 'c']);
  });
});
