/**
 * The vision processor when its inference thread dies for real (gpu-worker/vision/index.ts
 * onThreadDeath): every call in flight and every later one rejects (no frame is turned
 * into a `failed` record for it), `InferenceThreadDied{Reason}` counts it once, and the
 * processor reports itself broken for good (`fatal`, `onFatal`) so the worker exits and
 * another task takes the slot, instead of heartbeating while every round fails.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import type { FrameInput, MetricSink } from '../../../core/ports.ts';
import { InferenceThreadDiedError, createVisionProcessor } from '../../../gpu-worker/vision/index.ts';
import type { InferenceThreadFault } from '../../../gpu-worker/vision/inference-thread.ts';

class RecordingMetrics implements MetricSink {
  readonly counts: { name: string; value: number; dimensions?: Record<string, string> }[] = [];
  count(name: string, value = 1, dimensions?: Record<string, string>): void {
    this.counts.push({ name, value, ...(dimensions ? { dimensions } : {}) });
  }
  milliseconds(): void {}
}

async function frames(videoId: string, count: number): Promise<FrameInput[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, frame) => ({
      videoId,
      frame,
      image: new Uint8Array(await sharp({ create: { width: 160, height: 120, channels: 3, background: { r: 20 * frame, g: 90, b: 160 } } }).png().toBuffer()),
    })),
  );
}

describe('vision processor whose inference thread dies', () => {
  it.each([
    { kind: 'exit', reason: 'thread-exit' },
    { kind: 'throw', reason: 'thread-error' },
    { kind: 'oom', reason: 'out-of-memory' },
  ] as const)('by $kind: rejects the round in flight and every later call, counts it once, and reports itself broken', async ({ kind, reason }) => {
    // Prepare: run 1 is the warm-up, so the thread dies on the first real batch.
    const metrics = new RecordingMetrics();
    const fatalCalls: string[] = [];
    const fault: InferenceThreadFault = { kind, onRun: 2 };
    const processor = createVisionProcessor({
      batchSize: 4,
      maxBatchWaitMs: 5,
      scoreThreshold: 0.25,
      preferCuda: false,
      metrics,
      onFatal: (why) => fatalCalls.push(why),
      inferenceThread: { fault, ...(kind === 'oom' ? { resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8 } } : {}) },
    });
    await processor.start();
    processor.openVideo('a', undefined);
    processor.openVideo('b', undefined);
    const [a, b] = await Promise.all([frames('a', 3), frames('b', 3)]);
    const healthyBefore = processor.fatal;
    // Act: two videos' frames share the batch that kills the thread.
    const inFlight = await Promise.all([processor.process(a).catch((e: unknown) => e), processor.process(b).catch((e: unknown) => e)]);
    const later = await processor.process(await frames('a', 1)).catch((e: unknown) => e);
    const laterLate = await processor.processLate([{ ...(await frames('b', 1))[0]!, frame: 0 }]).catch((e: unknown) => e);
    processor.prepareAhead!(a[0]!.image);
    // Assess
    expect(healthyBefore).toBeUndefined();
    for (const e of [...inFlight, later, laterLate]) {
      expect(e).toBeInstanceOf(InferenceThreadDiedError);
      expect((e as InferenceThreadDiedError).death.reason).toBe(reason);
    }
    expect(metrics.counts.filter((c) => c.name === METRIC_NAMES.worker.inferenceThreadDied)).toEqual([
      { name: 'InferenceThreadDied', value: 1, dimensions: { Reason: reason } },
    ]);
    expect(processor.fatal).toMatch(new RegExp(`^inference thread died \\(${reason}\\)`));
    expect(fatalCalls).toEqual([processor.fatal]);
    // Broken processors take no decode ahead.
    expect(processor.preparedAhead.started).toBe(0);
    await expect(processor.stop()).resolves.toBeUndefined();
  });

  it('a healthy processor is not fatal, and its failures stay per frame', async () => {
    // Prepare
    const metrics = new RecordingMetrics();
    const fatalCalls: string[] = [];
    const processor = createVisionProcessor({ batchSize: 4, maxBatchWaitMs: 5, scoreThreshold: 0.25, preferCuda: false, metrics, onFatal: (why) => fatalCalls.push(why) });
    await processor.start();
    processor.openVideo('c', undefined);
    const good = await frames('c', 2);
    // Act
    const outcomes = await processor.process([good[0]!, { videoId: 'c', frame: 1, image: new TextEncoder().encode('no image') }]);
    await processor.stop();
    // Assess: stopping (releasing the thread) is no death either.
    await new Promise((r) => setImmediate(r));
    expect(outcomes.map((o) => o.status)).toEqual(['ok', 'failed']);
    expect(processor.fatal).toBeUndefined();
    expect(fatalCalls).toEqual([]);
    expect(metrics.counts.filter((c) => c.name === METRIC_NAMES.worker.inferenceThreadDied)).toEqual([]);
  });
});
