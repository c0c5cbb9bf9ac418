import { afterEach, describe, expect, it, vi } from 'vitest';
import type { FrameStore } from '../../../core/ingest/s3/frame-store.ts';
import { nullMetrics, type LogSink } from '../../../core/ports.ts';
import type { ReceivedMessage } from '../../../core/ingest/sqs/slot-queues.ts';
import { createFrameSources } from '../../../gpu-worker/sources/frame-sources.ts';
import { SlotInbox } from '../../../gpu-worker/runtime/slot-inbox.ts';
import type { SlotQueue } from '../../../core/ingest/port.ts';

const quiet: LogSink = { debug() {}, info() {}, warn() {}, error() {} };
const VISIBILITY_SECONDS = 10;

/** The frame sources over `frames`: what the inbox shows its receives to. */
const sourcesOver = (frames: FrameStore, o: { now?: () => number; readAheadFrames?: number } = {}) =>
  createFrameSources({ frames, tunables: { maxFrameBytes: 1_000, ...(o.readAheadFrames !== undefined ? { readAheadFrames: o.readAheadFrames } : {}) }, metrics: nullMetrics, log: quiet, ...(o.now ? { now: o.now } : {}) });

/** The slot context the inbox reads: its fence's slot number, and the clock. */
const slotAt = (slot: number, now: () => number) => ({ fence: { slot, workerId: 'w', epoch: 1 }, now });

const frameBody = (videoId: string, frame: number) => JSON.stringify({ kind: 'frame', videoId, frame, bucket: 'b', key: `frames/${videoId}/${frame}.jpg`, sizeBytes: 3, eventTime: '2026-01-01T00:00:00Z' });

/** A slot queue stand-in that records every call, in order. */
function fakeQueues(toReceive: ReceivedMessage[][] = []) {
  const calls: string[] = [];
  let refuse = new Set<string>();
  let failDeadLetter = false;
  const queues = {
    receive: async () => toReceive.shift() ?? [],
    delete: async (_slot: number, handles: readonly string[]) => {
      calls.push(`delete ${handles.join(',')}`);
      return 0;
    },
    extendVisibility: async (_slot: number, handles: readonly string[], seconds: number) => {
      calls.push(`visibility ${seconds} ${handles.join(',')}`);
      return handles.filter((h) => refuse.has(h));
    },
    deadLetter: async (_slot: number, body: string) => {
      if (failDeadLetter) throw new Error('throttled');
      calls.push(`dead-letter ${body}`);
    },
    send: async () => [{ ok: true as const }],
  };
  return {
    queues,
    calls,
    refuse: (handles: string[]) => (refuse = new Set(handles)),
    failDeadLetter: (on: boolean) => (failDeadLetter = on),
  };
}

function inbox(q: ReturnType<typeof fakeQueues>, clock: { now: number }, gets: string[] = []) {
  const frames = { get: async (_b: string, key: string) => (gets.push(key), new Uint8Array([1])) } as unknown as FrameStore;
  return new SlotInbox({
    slot: slotAt(0, () => clock.now),
    queues: q.queues,
    tunables: { slotQueueVisibilitySeconds: VISIBILITY_SECONDS },
    sources: sourcesOver(frames, { now: () => clock.now }),
    metrics: nullMetrics,
    log: quiet,
  });
}

const msg = (handle: string, body = frameBody('v', 1)): ReceivedMessage => ({ receiptHandle: handle, body, messageId: handle, receiveCount: 1, groupId: 'v' });

afterEach(() => {
  vi.useRealTimers();
});

describe('SlotInbox', () => {
  it('remembers what the last receive brought, for the gather decision: when, how many, how long the oldest had waited', async () => {
    const q = fakeQueues([[{ ...msg('h1'), sentAtMs: 900 }, { ...msg('h2'), sentAtMs: 960 }], []]);
    const clock = { now: 1_000 };
    const box = inbox(q, clock);
    expect(box.lastReceive).toBeUndefined();
    await box.receive(0, () => false);
    expect(box.lastReceive).toEqual({ atMs: 1_000, count: 2, oldestAgeMs: 100 });
    clock.now = 1_500;
    await box.receive(0, () => false);
    expect(box.lastReceive).toEqual({ atMs: 1_500, count: 0, oldestAgeMs: undefined });
  });

  it('parses each message once, on arrival, and holds its handle', async () => {
    const q = fakeQueues([[msg('h1'), msg('h2', 'not json')]]);
    const box = inbox(q, { now: 0 });
    const got = await box.receive(0, () => false);
    expect(got.map((m) => [m.handle, m.msg?.kind])).toEqual([
      ['h1', 'frame'],
      ['h2', undefined],
    ]);
    expect(box.heldCount).toBe(2);
  });

  it('extends a held handle only when its visibility is about to run out, for as long as it is held', async () => {
    vi.useFakeTimers();
    const clock = { now: 0 };
    const q = fakeQueues([[msg('h1')]]);
    const box = inbox(q, clock);
    await box.receive(0, () => false);
    box.startKeeper();
    // Fresh: nothing to extend (the normal path pays no call).
    clock.now = 4_000;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(q.calls).toEqual([]);
    // Half the timeout left: extended, again and again while held (a backing-off video, an outage).
    for (let i = 0; i < 6; i++) {
      clock.now += 5_000;
      await vi.advanceTimersByTimeAsync(1_000);
    }
    expect(q.calls.filter((c) => c.startsWith('visibility 10')).length).toBeGreaterThanOrEqual(5);
    await box.delete(['h1']);
    const before = q.calls.length;
    clock.now += 60_000;
    await vi.advanceTimersByTimeAsync(2_000);
    expect(q.calls.slice(before)).toEqual([]);
    await box.stopKeeper();
  });

  it('drops a handle SQS refuses to extend', async () => {
    vi.useFakeTimers();
    const clock = { now: 0 };
    const q = fakeQueues([[msg('h1'), msg('h2')]]);
    const box = inbox(q, clock);
    await box.receive(0, () => false);
    q.refuse(['h2']);
    box.startKeeper();
    clock.now = 6_000;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(box.holds('h1')).toBe(true);
    expect(box.holds('h2')).toBe(false);
    await box.stopKeeper();
  });

  it('stops extending before it hands back, so no extension lands after a hand-back', async () => {
    const clock = { now: 0 };
    const q = fakeQueues([[msg('h1')]]);
    const box = inbox(q, clock);
    await box.receive(0, () => false);
    await box.stopKeeper();
    await box.giveBackAll();
    expect(q.calls).toEqual(['visibility 0 h1']);
    expect(box.heldCount).toBe(0);
  });

  it('keeps a message it could not dead-letter (it retries), and deletes it once parked', async () => {
    const q = fakeQueues([[msg('h1', 'junk')]]);
    const box = inbox(q, { now: 0 });
    const [m] = await box.receive(0, () => false);
    q.failDeadLetter(true);
    expect(await box.deadLetter(m!, 'malformed-message', 'malformed')).toBe(false);
    expect(box.holds('h1')).toBe(true);
    q.failDeadLetter(false);
    expect(await box.deadLetter(m!, 'malformed-message', 'malformed')).toBe(true);
    expect(q.calls).toEqual(['dead-letter junk', 'delete h1']);
    expect(box.heldCount).toBe(0);
  });

  it('decodes ahead only the frames the worker says it will run', async () => {
    const gets: string[] = [];
    const q = fakeQueues([[msg('h1', frameBody('mine', 3)), msg('h2', frameBody('other-slot', 1)), msg('h3', frameBody('mine', 0))]]);
    const box = inbox(q, { now: 0 }, gets);
    box.receiveAhead(Promise.resolve(), () => false, (m) => m.videoId === 'mine' && m.frame > 0);
    const ahead = await box.takeAhead()!;
    expect(ahead.map((m) => m.handle)).toEqual(['h1', 'h2', 'h3']);
    expect(gets).toEqual(['frames/mine/3.jpg']);
  });

  it('receives nothing ahead once the loop is ending (a fenced commit, a drain)', async () => {
    const q = fakeQueues([[msg('h1')]]);
    const box = inbox(q, { now: 0 });
    box.receiveAhead(Promise.resolve(), () => true, () => true);
    expect(await box.takeAhead()).toEqual([]);
    expect(box.heldCount).toBe(0);
  });
});

describe('SlotInbox fan-out (decision 30)', () => {
  const page = (video: string, n: number, from = 0) => Array.from({ length: n }, (_, i) => msg(`${video}-${from + i}`, frameBody(video, from + i)));

  function fanInbox(pages: ReceivedMessage[][], idleVideos: ((received: ReadonlySet<string>) => number | undefined) | undefined, receiveConcurrency = 4, ownedVideos?: () => number) {
    const waits: number[] = [];
    const q = fakeQueues();
    const receive = async (_slot: number, _max: number, wait: number) => {
      waits.push(wait);
      return pages.shift() ?? [];
    };
    q.queues.receive = receive as unknown as typeof q.queues.receive;
    const frames = { get: async () => new Uint8Array([1]) } as unknown as FrameStore;
    const box = new SlotInbox({
      slot: slotAt(0, () => 0),
      queues: q.queues,
      tunables: { slotQueueVisibilitySeconds: VISIBILITY_SECONDS, receiveConcurrency },
      sources: sourcesOver(frames, { now: () => 0 }),
      metrics: nullMetrics,
      log: quiet,
      ...(idleVideos ? { idleVideos } : {}),
      ...(ownedVideos ? { ownedVideos } : {}),
    });
    return { box, waits };
  }

  it('a receive ahead (made only behind a backlog) sends its fan-out at once: one receive per idle video, within the cohort', async () => {
    const { box, waits } = fanInbox([page('a', 10), page('b', 10), page('c', 10), page('d', 10), page('e', 10)], () => 6, 16, () => 8);
    box.receiveAhead(Promise.resolve(), () => false, () => true);
    const got = await box.takeAhead()!;
    // 8 owned: 4 per round (half); all four sent before any came back.
    expect(waits).toEqual([0, 0, 0, 0]);
    expect(got).toHaveLength(40);
  });

  it('a receive ahead with fewer idle videos than the cohort sends one receive per idle video', async () => {
    const { box, waits } = fanInbox([page('a', 10), page('b', 10)], () => 2, 16, () => 16);
    box.receiveAhead(Promise.resolve(), () => false, () => true);
    await box.takeAhead();
    expect(waits).toEqual([0, 0]);
  });

  it('the receives of one round bring at most half the owned videos (two cohorts, decision 38)', async () => {
    const { box, waits } = fanInbox([page('a', 10), page('b', 10), page('c', 10), page('d', 10)], () => 3, 8, () => 4);
    const got = await box.receive(20, () => false);
    // 4 owned, 3 idle: the first receive and one more, not three more.
    expect(waits).toEqual([20, 0]);
    expect(got).toHaveLength(20);
  });

  it('a full receive is joined by one receive per idle video, without waiting; every handle is held', async () => {
    const seen: string[][] = [];
    const { box, waits } = fanInbox([page('a', 10), page('b', 10), page('c', 4)], (received) => (seen.push([...received]), 2));
    const got = await box.receive(20, () => false);
    expect(got.map((m) => m.handle)).toEqual([...page('a', 10), ...page('b', 10), ...page('c', 4)].map((m) => m.receiptHandle));
    expect(waits).toEqual([20, 0, 0]);
    expect(seen).toEqual([['a']]);
    expect(box.heldCount).toBe(24);
  });

  it('a receive that was not full sends no more', async () => {
    const { box, waits } = fanInbox([page('a', 9), page('b', 10)], () => 5);
    expect(await box.receive(20, () => false)).toHaveLength(9);
    expect(waits).toEqual([20]);
  });

  it('caps the receives in flight at receiveConcurrency, and sends all of them before any video is owned', async () => {
    const { box, waits } = fanInbox([page('a', 10), page('b', 10), page('c', 10), page('d', 10), page('e', 10)], () => undefined, 3);
    expect(await box.receive(1, () => false)).toHaveLength(30);
    expect(waits).toEqual([1, 0, 0]);
  });

  it('without an idleVideos callback there is no fan-out (the worker before decision 30)', async () => {
    const { box, waits } = fanInbox([page('a', 10), page('b', 10)], undefined);
    expect(await box.receive(20, () => false)).toHaveLength(10);
    expect(waits).toEqual([20]);
  });
});

describe('SlotInbox read ahead (decision 39)', () => {
  const taggedBody = (videoId: string, frame: number, eTag?: string) =>
    JSON.stringify({ ...JSON.parse(frameBody(videoId, frame)), key: `frames/${videoId}/${String(frame).padStart(6, '0')}.jpg`, ...(eTag ? { eTag } : {}) });
  const batch = (videoId: string, from: number, n: number, eTag?: string) =>
    Array.from({ length: n }, (_, i) => msg(`${videoId}${from + i}`, taggedBody(videoId, from + i, eTag)));

  function readAheadInbox(q: ReturnType<typeof fakeQueues>, readAheadFrames: number) {
    const reads: string[] = [];
    const frames = {
      get: async (_b: string, key: string) => (reads.push(`get ${key}`), new Uint8Array([1])),
      getVersion: async (_b: string, key: string) => (reads.push(key), { bytes: new Uint8Array([1]), eTag: 'e' }),
    } as unknown as FrameStore;
    const box = new SlotInbox({
      slot: slotAt(0, () => 0),
      queues: q.queues,
      tunables: { slotQueueVisibilitySeconds: VISIBILITY_SECONDS },
      sources: sourcesOver(frames, { readAheadFrames }),
      metrics: nullMetrics,
      log: quiet,
    });
    return { box, reads };
  }
  const settle = async () => {
    for (let i = 0; i < 3; i++) await new Promise((r) => setTimeout(r, 0));
  };

  const cases = [
    { name: 'a full receive of 10 consecutive frames with ETags reads the next frames ahead', received: batch('v', 0, 10, 'e'), readAheadFrames: 3, want: ['frames/v/000012.jpg', 'frames/v/000010.jpg', 'frames/v/000011.jpg'] },
    { name: 'messages without an ETag cannot vouch for bytes read ahead: nothing is read', received: batch('v', 0, 10), readAheadFrames: 3, want: [] },
    { name: 'a receive that was not full reads nothing ahead', received: batch('v', 0, 9, 'e'), readAheadFrames: 3, want: [] },
    { name: 'readAheadFrames 0 turns it off', received: batch('v', 0, 10, 'e'), readAheadFrames: 0, want: [] },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const { box, reads } = readAheadInbox(fakeQueues([c.received]), c.readAheadFrames);
      await box.receive(0, () => false);
      await settle();
      expect(reads).toEqual(c.want);
    });
  }

  it("the next receive confirms what was read ahead: the runner's take finds the bytes without another GET", async () => {
    const q = fakeQueues([batch('v', 0, 10, 'e'), batch('v', 10, 10, 'e')]);
    const frames = {
      get: async () => {
        throw new Error('no GET expected');
      },
      getVersion: async () => ({ bytes: new Uint8Array([7]), eTag: 'e' }),
    } as unknown as FrameStore;
    const sources = sourcesOver(frames, { readAheadFrames: 10 });
    const box = new SlotInbox({ slot: slotAt(0, () => 0), queues: q.queues, tunables: { slotQueueVisibilitySeconds: VISIBILITY_SECONDS }, sources, metrics: nullMetrics, log: quiet });
    await box.receive(0, () => false);
    await settle();
    await box.receive(0, () => false);
    expect((await sources.early('v', { frame: 15, bucket: 'b', key: 'frames/v/000015.jpg', sizeBytes: 3 }))?.image).toEqual(new Uint8Array([7]));
    expect(sources.fetchedAhead.readAhead.used).toBe(10); // all ten confirmed under their messages' ETag
  });
});

describe('the slot it serves', () => {
  it('receives, deletes, extends and dead-letters on the queue of its context\'s fence', async () => {
    const slots: string[] = [];
    const queues = {
      receive: async (slot: number) => (slots.push(`receive ${slot}`), [msg('h1')]),
      delete: async (slot: number) => (slots.push(`delete ${slot}`), 0),
      extendVisibility: async (slot: number) => (slots.push(`visibility ${slot}`), []),
      deadLetter: async (slot: number) => void slots.push(`dead-letter ${slot}`),
      send: async () => undefined,
    } as unknown as Pick<SlotQueue, 'receive' | 'delete' | 'extendVisibility' | 'deadLetter' | 'send'>;
    const frames = { get: async () => new Uint8Array([1]) } as unknown as FrameStore;
    const box = new SlotInbox({ slot: slotAt(7, () => 0), queues, tunables: { slotQueueVisibilitySeconds: VISIBILITY_SECONDS }, sources: sourcesOver(frames, { now: () => 0 }), metrics: nullMetrics, log: quiet });
    const [m] = await box.receive(0, () => false);
    await box.delete([m!.handle]);
    await box.deadLetter({ handle: 'h2', body: 'x' }, 'malformed-message', 'malformed');
    expect(slots).toEqual(['receive 7', 'delete 7', 'dead-letter 7', 'delete 7']);
  });
});
