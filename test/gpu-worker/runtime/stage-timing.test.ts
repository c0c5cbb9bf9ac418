/** timeStages (gpu-worker/runtime/stage-timing.ts): the worker's dependencies timed, their own behaviour untouched. */
import { describe, expect, it } from 'vitest';
import type { FrameStore } from '../../../core/ingest/s3/frame-store.ts';
import type { LeaseStore } from '../../../core/leases/dynamodb/lease-store.ts';
import type { SlotQueues } from '../../../core/ingest/sqs/slot-queues.ts';
import type { FrameProcessor } from '../../../core/ports.ts';
import { StageClock } from '../../../gpu-worker/runtime/stage-clock.ts';
import { timeStages } from '../../../gpu-worker/runtime/stage-timing.ts';

/** Private fields and a getter, as the real adapters and processors have. */
class Queues {
  #received = [{ receiptHandle: 'h1' }, { receiptHandle: 'h2' }];
  get depth() {
    return this.#received.length;
  }
  async receive() {
    return this.#received;
  }
  async delete(_slot: number, handles: readonly string[]) {
    return handles.length - 2;
  }
}

class Processor {
  #fatal: string | undefined = 'broken';
  get fatal() {
    return this.#fatal;
  }
  async process(frames: readonly unknown[]) {
    return frames.map(() => ({ status: 'ok' }));
  }
}

describe('timeStages', () => {
  it('times receive, delete, fetch, commit and the processor, and keeps getters and private fields working', async () => {
    const clock = new StageClock();
    const frames = { get: async () => new Uint8Array([1]) } as unknown as FrameStore;
    const leases = { commit: async () => ({ kind: 'settled' }) } as unknown as LeaseStore;
    const t = timeStages({ queues: new Queues() as unknown as SlotQueues, frames, leases, processor: new Processor() as unknown as FrameProcessor }, clock);
    expect(await t.queues.receive(0, 10, 0)).toHaveLength(2);
    expect(await t.queues.delete(0, ['a', 'b', 'c'])).toBe(1);
    expect((t.queues as unknown as Queues).depth).toBe(2);
    await t.frames.get('b', 'k');
    await t.leases.commit({} as never, [{}, {}] as never, 0);
    expect(t.processor.fatal).toBe('broken');
    await t.processor.process([{}, {}, {}] as never);
    const s = clock.report().stages;
    expect([s.receive.items, s.delete.items, s.fetch.items, s.commit.items, s.infer.items]).toEqual([2, 3, 1, 2, 3]);
  });

  it('a failed call counts as an operation of no items and still throws', async () => {
    const clock = new StageClock();
    const frames = { get: async () => Promise.reject(new Error('NoSuchKey')) } as unknown as FrameStore;
    const t = timeStages({ queues: new Queues() as unknown as SlotQueues, frames, leases: {} as LeaseStore, processor: new Processor() as unknown as FrameProcessor }, clock);
    await expect(t.frames.get('b', 'k')).rejects.toThrow('NoSuchKey');
    expect(clock.report().stages.fetch).toMatchObject({ ops: 1, items: 0 });
  });
});
