/**
 * The worker's bounds and pins in the synthesized template (issue 43, items 2 to 4): a hard
 * memory limit on the container, the segment decoders checked against it at synth, libuv's
 * thread pool sized from the instance type, V100 instances refused, the GPU AMI pinned
 * when asked, and the WorkerDecodingOnCpu alarm on a bounded dimension.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_TUNABLES } from '../../core/config.ts';
import { DECODER_OVERHEAD_MIB, openDecoderCap, SPARE_WORKER_MIB, WORKER_BASE_MIB, workerMemoryProblems } from '../../core/config/worker-memory.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import { DEFAULT_STACK_CONFIG, workerFitProblems, workerThreadPoolSize } from '../../infra/config.ts';
import { gpuInstanceProblem } from '../../infra/gpu-instances.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';

type Resource = { Type: string; Properties?: Record<string, unknown> };

const outdirs: string[] = [];
function synth(context: Record<string, unknown> = {}): { stack: FrameAffinityStack; template: Template; resources: Record<string, Resource> } {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-bounds-'));
  outdirs.push(outdir);
  const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  const template = Template.fromStack(stack);
  return { stack, template, resources: template.toJSON().Resources as Record<string, Resource> };
}
const MIB = 1024 * 1024;

let byDefault: ReturnType<typeof synth>;
beforeAll(() => {
  byDefault = synth();
});
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

const workerContainer = (resources: Record<string, Resource>) => {
  const td = Object.values(resources).find((r) => r.Type === 'AWS::ECS::TaskDefinition')!;
  return (td.Properties!.ContainerDefinitions as Record<string, unknown>[])[0]!;
};

describe('the worker container in the template', () => {
  it('has a hard memory limit above its reservation, and libuv sized to the instance (16 threads on a g5.xlarge)', () => {
    const c = workerContainer(byDefault.resources);
    expect(c).toMatchObject({ Memory: 14336, MemoryReservation: 12288 });
    expect(c.Environment).toEqual(expect.arrayContaining([{ Name: 'UV_THREADPOOL_SIZE', Value: '16' }, { Name: 'MAX_OPEN_SEGMENTS', Value: '32' }, { Name: 'MAX_SEGMENT_BYTES', Value: String(64 * MIB) }]));
  });

  it('alarms WorkerDecodingOnCpu on SegmentDecoderInUse{Decoder=cpu-fallback}: a fixed dimension value, no error text', () => {
    const alarm = Object.values(byDefault.resources).find((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties?.AlarmName === 'FrameAffinity-WorkerDecodingOnCpu')?.Properties;
    expect(alarm).toMatchObject({ MetricName: 'SegmentDecoderInUse', Namespace: 'FrameAffinity', Statistic: 'Sum', Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold', TreatMissingData: 'notBreaching' });
    expect(alarm!.Dimensions).toEqual(expect.arrayContaining([{ Name: 'Decoder', Value: 'cpu-fallback' }, { Name: 'service', Value: 'worker' }]));
  });

  it('launches a pinned AMI when gpuAmiId is set; without one and without an account, warns that the AMI floats', () => {
    const pinned = synth({ gpuAmiId: 'ami-0123456789abcdef0' });
    const lt = Object.values(pinned.resources).find((r) => r.Type === 'AWS::EC2::LaunchTemplate')!;
    expect((lt.Properties!.LaunchTemplateData as { ImageId: unknown }).ImageId).toBe('ami-0123456789abcdef0');
    const floating = Annotations.fromStack(byDefault.stack).findWarning('*', Match.stringLikeRegexp('GPU AMI is resolved from its SSM parameter at every deploy'));
    expect(floating.length).toBeGreaterThan(0);
    expect(Annotations.fromStack(pinned.stack).findWarning('*', Match.stringLikeRegexp('GPU AMI is resolved from its SSM parameter'))).toHaveLength(0);
  });

  it('refuses to synthesize when the decoders cannot fit the memory limit, saying what to change', () => {
    // The hot spare (on by default, decision 75) takes SPARE_WORKER_MIB of the limit: 28 fit, 31 without it.
    expect(() => synth({ maxSegmentBytes: 256 * MIB })).toThrow(/maxOpenSegments \(32\) decoders of up to maxSegmentBytes \(256 MiB\).*and 1024 MiB for its hot spare \(hotSpare\), do not fit taskMemoryLimitMiB \(14336\): at most 28 fit\. Lower maxOpenSegments to 28, or maxSegmentBytes to \d+ \(\d+ MiB\).*or set hotSpare=false/s);
    expect(() => synth({ maxSegmentBytes: 256 * MIB, hotSpare: 'false' })).toThrow(/at most 31 fit\. Lower maxOpenSegments to 31/);
  });

  it('refuses p3 (V100) instance types at synth', () => {
    expect(() => synth({ instanceType: 'p3.2xlarge' })).toThrow(/p3\.2xlarge has V100 \(Volta\) GPUs .*ONNX Runtime 1\.30 CUDA 12 build/);
  });
});

describe('workerFitProblems', () => {
  const base = { ...DEFAULT_STACK_CONFIG };
  it.each([
    ['the defaults fit a g5.xlarge', {}, []],
    ['a limit above a g4dn.xlarge per GPU less 1 GiB', { instanceType: 'g4dn.xlarge', taskMemoryLimitMiB: 15_500 }, [/taskMemoryLimitMiB \(15500\) does not fit g4dn\.xlarge: at most 15360 MiB/]],
    ['a g5.12xlarge: 48 GiB per GPU', { instanceType: 'g5.12xlarge', taskMemoryLimitMiB: 40_000 }, []],
    ['a limit at or under the reservation', { taskMemoryLimitMiB: 12_288 }, [/must be above taskMemoryMiB \(12288\)/]],
    ['fewer decoders than videos per slot', { maxOpenSegments: 4, videosPerSlot: 8 }, [/maxOpenSegments \(4 that fit\) must be at least videosPerSlot \(8\)/]],
    ['p3dn in a list', { instanceTypes: 'g5.xlarge,p3dn.24xlarge' }, [/p3dn\.24xlarge has V100/]],
  ] as const)('%s', (_name, over, expected) => {
    const problems = workerFitProblems({ ...base, ...over });
    expect(problems).toHaveLength(expected.length);
    expected.forEach((re, i) => expect(problems[i]).toMatch(re));
  });

  it('the open-decoder cap is what the limit leaves after the worker and the read-ahead bytes', () => {
    const inputs = { memoryLimitMiB: 14336, maxSegmentBytes: 64 * MIB, segmentReadAheadBytes: DEFAULT_TUNABLES.segmentReadAheadBytes };
    expect(openDecoderCap(inputs)).toBe(Math.floor((14336 - WORKER_BASE_MIB - 64) / (64 + DECODER_OVERHEAD_MIB)));
    expect(openDecoderCap({ ...inputs, memoryLimitMiB: 4096 })).toBe(0);
    expect(workerMemoryProblems({ ...inputs, maxOpenSegments: 32, videosPerSlot: 8 })).toEqual([]);
    expect(openDecoderCap({ ...inputs, spareMiB: SPARE_WORKER_MIB })).toBe(Math.floor((14336 - WORKER_BASE_MIB - SPARE_WORKER_MIB - 64) / (64 + DECODER_OVERHEAD_MIB)));
  });

  it('sizes libuv from the smallest per-GPU share of vCPUs, within 8 to 256', () => {
    expect(workerThreadPoolSize({ instanceType: 'g5.xlarge', instanceTypes: '' })).toBe(16);
    expect(workerThreadPoolSize({ instanceType: 'g5.12xlarge', instanceTypes: '' })).toBe(48);
    expect(workerThreadPoolSize({ instanceType: 'g6.xlarge', instanceTypes: 'g5.2xlarge,g6.xlarge' })).toBe(16);
    expect(workerThreadPoolSize({ instanceType: 'p5.48xlarge', instanceTypes: '' })).toBe(96);
  });

  it('knows every size the instance-type setting accepts, and refuses only V100', () => {
    expect(gpuInstanceProblem('g6e.48xlarge')).toBeUndefined();
    expect(gpuInstanceProblem('p3.16xlarge')).toMatch(/V100/);
    expect(gpuInstanceProblem('g5.7xlarge')).toMatch(/not an instance type this stack knows/);
  });
});

describe('the worker image', () => {
  const dockerfile = readFileSync(new URL('../../gpu-worker/Dockerfile', import.meta.url), 'utf8');
  it('pins its base images by version, takes digests as build arguments, and prunes the non-linux-x64 onnxruntime binaries', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:24\.\d+\.\d+-bookworm-slim$/m);
    expect(dockerfile).toMatch(/^ARG CUDA_IMAGE=nvidia\/cuda:12\.\d+\.\d+-cudnn-runtime-ubuntu24\.04$/m);
    expect(dockerfile).toMatch(/FROM \$\{NODE_IMAGE\}\$\{NODE_DIGEST:\+@\$\{NODE_DIGEST\}\}/);
    expect(dockerfile).toMatch(/rm -rf node_modules\/onnxruntime-node\/bin\/napi-v6\/darwin node_modules\/onnxruntime-node\/bin\/napi-v6\/win32 node_modules\/onnxruntime-node\/bin\/napi-v6\/linux\/arm64/);
  });
});
