/**
 * The worker's seam for what the GPU image does not ship (gpu-worker/extensions.ts): the
 * processor factory builds `vision` alone unless an extension adds a kind, wrappers apply
 * in order, and the probe entry and hooks come from the extensions. The lab's own
 * extension (lab/worker/register.ts) is checked at the end, after the product-only cases.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import type { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TUNABLES } from '../../core/config.ts';
import type { FrameSource } from '../../core/ingest/port.ts';
import { nullMetrics, type FrameProcessor } from '../../core/ports.ts';
import { beforeProbeTry, extendWorker, probeEntry, processorKinds, wrapPipeline, type FramePipeline } from '../../gpu-worker/extensions.ts';
import { createProcessor } from '../../gpu-worker/processor-factory.ts';
import { StageClock } from '../../gpu-worker/runtime/stage-clock.ts';

const log = new Logger({ logLevel: 'SILENT' });
const build = (kind: string) => createProcessor(kind, DEFAULT_TUNABLES, log, {} as S3Client, nullMetrics, () => {}, new StageClock());
const fakeProcessor = (description: string) => ({ description }) as unknown as FrameProcessor;

describe('the worker without extensions (as in the GPU image)', () => {
  it('knows vision only, and refuses another kind naming the lab entry', async () => {
    expect(processorKinds()).toEqual(['vision']);
    await expect(build('stats')).rejects.toThrow(/FRAME_PROCESSOR=stats .*it has: vision.*lab\/worker-main\.ts/);
    expect(probeEntry()).toBeUndefined();
    const pipeline = { frames: {} as FrameSource, processor: fakeProcessor('p') };
    expect(wrapPipeline(pipeline, {})).toBe(pipeline);
  });
});

describe('extendWorker', () => {
  it('adds processors built from the worker context, wrappers in order, probe hooks and entry', async () => {
    const calls: string[] = [];
    const wrap = (name: string) => (p: FramePipeline) => (calls.push(name), { ...p, processor: fakeProcessor(`${p.processor.description}+${name}`) });
    extendWorker({ processors: { fake: ({ tunables, env }) => fakeProcessor(`fake ${tunables.inferenceBatchSize} ${env === process.env}`) }, wrapPipeline: wrap('a'), probeEntry: '/first.ts' });
    extendWorker({ wrapPipeline: wrap('b'), beforeProbeTry: (key) => calls.push(`try ${key}`), probeEntry: '/second.ts' });
    expect(processorKinds()).toEqual(['vision', 'fake']);
    expect((await build('fake')).description).toBe(`fake ${DEFAULT_TUNABLES.inferenceBatchSize} true`);
    expect(wrapPipeline({ frames: {} as FrameSource, processor: fakeProcessor('p') }, {}).processor.description).toBe('p+a+b');
    beforeProbeTry('frames/v/1.jpg', {});
    expect(calls).toEqual(['a', 'b', 'try frames/v/1.jpg']);
    expect(probeEntry()).toBe('/second.ts');
  });

  it('refuses to replace the vision processor', () => {
    expect(() => extendWorker({ processors: { vision: () => fakeProcessor('x') } })).toThrow(/built in/);
  });

  it('the lab adds stats and simgpu, crash-on-key and its probe entry', async () => {
    const { registerLab } = await import('../../lab/worker/register.ts');
    registerLab();
    registerLab();
    expect(processorKinds()).toEqual(['vision', 'fake', 'stats', 'simgpu']);
    expect((await build('stats')).description).toMatch(/stats processor/);
    expect(probeEntry()).toMatch(/lab\/probe-main\.ts$/);
  });
});
