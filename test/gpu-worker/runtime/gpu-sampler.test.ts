/**
 * The worker's GPU sampler (gpu-worker/runtime/gpu-sampler.ts, issue 35, item 4): the
 * nvidia-smi parser, the gauges and provider count it writes, and the absent-binary path
 * (one failed spawn, then silence).
 */
import { describe, expect, it } from 'vitest';
import { GpuSampler, NVIDIA_SMI, SAMPLED_METRICS, NVIDIA_SMI_ARGS, NVIDIA_SMI_ARGS_NO_DECODER, parseNvidiaSmi, runProgram, type GpuMetricSink, type RunProgram } from '../../../gpu-worker/runtime/gpu-sampler.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';

function recorder() {
  const counts: { name: string; value: number; dimensions?: Record<string, string> }[] = [];
  const gauges: { name: string; value: number; unit: string }[] = [];
  const metrics: GpuMetricSink = {
    count: (name, value = 1, dimensions) => void counts.push({ name, value, ...(dimensions ? { dimensions } : {}) }),
    gauge: (name, value, unit) => void gauges.push({ name, value, unit }),
  };
  return { metrics, counts, gauges };
}

const enoent = () => Object.assign(new Error('spawn nvidia-smi ENOENT'), { code: 'ENOENT' });

describe('parseNvidiaSmi', () => {
  it('reads one GPU a line: utilization %, memory used and total in MiB', () => {
    expect(parseNvidiaSmi('37, 1234, 23028\n')).toEqual([{ utilizationPercent: 37, memoryUsedMiB: 1234, memoryTotalMiB: 23028 }]);
    expect(parseNvidiaSmi('0, 0, 15360\r\n100, 15000, 15360\r\n')).toHaveLength(2);
  });

  it('reads the decoder (NVDEC) utilization as a fourth field, and leaves it out when it is not a number', () => {
    expect(parseNvidiaSmi('37, 1234, 23028, 12\n')).toEqual([{ utilizationPercent: 37, memoryUsedMiB: 1234, memoryTotalMiB: 23028, decoderUtilizationPercent: 12 }]);
    expect(parseNvidiaSmi('37, 1234, 23028, [N/A]\n')).toEqual([{ utilizationPercent: 37, memoryUsedMiB: 1234, memoryTotalMiB: 23028 }]);
    expect(parseNvidiaSmi('37, 1234, 23028, 12, 9\n')).toEqual([]);
  });

  it('leaves out lines with fields that are not numbers, and empty output', () => {
    expect(parseNvidiaSmi('[N/A], 1234, 23028\n[Not Supported], [N/A], [N/A]\nNVIDIA-SMI has failed\n')).toEqual([]);
    expect(parseNvidiaSmi('')).toEqual([]);
    expect(parseNvidiaSmi('37, 1234\n')).toEqual([]);
  });
});

describe('GpuSampler', () => {
  it('emits on a GPU host exactly the metrics SAMPLED_METRICS lists (what the cost model bills each hour)', async () => {
    const { metrics, counts, gauges } = recorder();
    await new GpuSampler({ metrics, provider: () => 'cuda', decoders: () => ['nvdec'], run: async () => '50, 6000, 24000, 35\n' }).sampleOnce();
    const names = [...counts, ...gauges].map((m) => m.name);
    expect(new Set(names)).toEqual(new Set(SAMPLED_METRICS));
    expect(names).toHaveLength(SAMPLED_METRICS.length);
  });

  it('asks nvidia-smi for utilization and memory, and writes the gauges and the provider count', async () => {
    // Prepare
    const calls: { file: string; args: readonly string[] }[] = [];
    const run: RunProgram = async (file, args) => {
      calls.push({ file, args });
      return '50, 6000, 24000, 35\n';
    };
    const { metrics, counts, gauges } = recorder();

    // Act
    const samples = await new GpuSampler({ metrics, provider: () => 'cuda', decoders: () => ['nvdec'], run }).sampleOnce();

    // Assess
    expect(calls).toEqual([{ file: NVIDIA_SMI, args: NVIDIA_SMI_ARGS }]);
    expect(NVIDIA_SMI_ARGS).toEqual(['--query-gpu=utilization.gpu,memory.used,memory.total,utilization.decoder', '--format=csv,noheader,nounits']);
    expect(samples).toHaveLength(1);
    expect(counts).toEqual([
      { name: METRIC_NAMES.worker.executionProvider, value: 1, dimensions: { Provider: 'cuda' } },
      { name: METRIC_NAMES.worker.segmentDecoderInUse, value: 1, dimensions: { Decoder: 'nvdec' } },
    ]);
    expect(gauges).toEqual([
      { name: METRIC_NAMES.worker.gpuUtilizationPercent, value: 50, unit: 'Percent' },
      { name: METRIC_NAMES.worker.gpuDecoderUtilizationPercent, value: 35, unit: 'Percent' },
      { name: METRIC_NAMES.worker.gpuMemoryUsedMiB, value: 6000, unit: 'Megabytes' },
      { name: METRIC_NAMES.worker.gpuMemoryUsedPercent, value: 25, unit: 'Percent' },
    ]);
  });

  it('without nvidia-smi: one failed spawn, no gauges, never tried again; the provider is still counted (a CPU fallback stays loud)', async () => {
    // Prepare
    let spawns = 0;
    const run: RunProgram = async () => {
      spawns++;
      throw enoent();
    };
    const { metrics, counts, gauges } = recorder();
    const sampler = new GpuSampler({ metrics, provider: () => 'cpu', run });

    // Act
    await sampler.sampleOnce();
    await sampler.sampleOnce();
    await sampler.sampleOnce();

    // Assess
    expect(spawns).toBe(1);
    expect(sampler.nvidiaSmiPresent).toBe(false);
    expect(gauges).toEqual([]);
    expect(counts.map((c) => c.dimensions)).toEqual([{ Provider: 'cpu' }, { Provider: 'cpu' }, { Provider: 'cpu' }]);
  });

  it('skips one tick on another failure (a timeout, a driver error) and tries again at the next', async () => {
    // Prepare
    let n = 0;
    const run: RunProgram = async () => {
      if (n++ === 0) throw Object.assign(new Error('Command failed'), { code: 9, killed: true });
      return '10, 100, 1000\n';
    };
    const { metrics, gauges } = recorder();
    const sampler = new GpuSampler({ metrics, provider: () => undefined, run });

    // Act
    const first = await sampler.sampleOnce();
    const second = await sampler.sampleOnce();

    // Assess
    expect(first).toEqual([]);
    expect(second).toHaveLength(1);
    expect(sampler.nvidiaSmiPresent).toBe(true);
    expect(gauges.map((g) => g.name)).toContain(METRIC_NAMES.worker.gpuUtilizationPercent);
  });

  it('asks without the decoder field, at once and from then on, when nvidia-smi says it is not a valid field (an older driver)', async () => {
    // Prepare: the failure's message names the field (the command line) whatever failed; only what nvidia-smi said counts.
    const calls: (readonly string[])[] = [];
    const run: RunProgram = async (_file, args) => {
      calls.push(args);
      if (args === NVIDIA_SMI_ARGS) throw Object.assign(new Error(`Command failed: nvidia-smi ${args.join(' ')}\n`), { code: 2, stdout: 'Field "utilization.decoder" is not a valid field to query.\n' });
      return '20, 100, 1000\n';
    };
    const { metrics, gauges } = recorder();
    const sampler = new GpuSampler({ metrics, provider: () => undefined, run });

    // Act
    const first = await sampler.sampleOnce();
    await sampler.sampleOnce();

    // Assess
    expect(calls).toEqual([NVIDIA_SMI_ARGS, NVIDIA_SMI_ARGS_NO_DECODER, NVIDIA_SMI_ARGS_NO_DECODER]);
    expect(first).toHaveLength(1);
    expect(gauges.map((g) => g.name)).not.toContain(METRIC_NAMES.worker.gpuDecoderUtilizationPercent);
  });

  it('keeps asking for the decoder field after a failure that is not about the field (the command line names it)', async () => {
    const calls: (readonly string[])[] = [];
    const run: RunProgram = async (_file, args) => {
      calls.push(args);
      if (calls.length === 1) throw Object.assign(new Error(`Command failed: nvidia-smi ${args.join(' ')}\n`), { code: 9, stdout: 'Unable to determine the device handle for GPU0000:00:1E.0: Unknown Error\n' });
      return '20, 100, 1000, 5\n';
    };
    const sampler = new GpuSampler({ metrics: recorder().metrics, provider: () => undefined, run });
    await sampler.sampleOnce();
    await sampler.sampleOnce();
    expect(calls).toEqual([NVIDIA_SMI_ARGS, NVIDIA_SMI_ARGS]);
  });

  it('counts each place the worker decodes segments once a tick, cpu-fallback included (WorkerDecodingOnCpu), without nvidia-smi too', async () => {
    const { metrics, counts } = recorder();
    const sampler = new GpuSampler({ metrics, provider: () => undefined, decoders: () => ['nvdec', 'cpu-fallback'], run: async () => Promise.reject(enoent()) });
    await sampler.sampleOnce();
    await sampler.sampleOnce();
    expect(counts.map((c) => `${c.name}:${c.dimensions?.Decoder}`)).toEqual(Array(2).fill([`${METRIC_NAMES.worker.segmentDecoderInUse}:nvdec`, `${METRIC_NAMES.worker.segmentDecoderInUse}:cpu-fallback`]).flat());
  });

  it('counts no provider before the model has loaded', async () => {
    const { metrics, counts } = recorder();
    await new GpuSampler({ metrics, provider: () => undefined, run: async () => Promise.reject(enoent()) }).sampleOnce();
    expect(counts).toEqual([]);
  });

  it('the real runner reports ENOENT for a program that is not installed (the absent-binary path on this machine)', async () => {
    await expect(runProgram('nvidia-smi-that-is-not-there', [], 1000)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('EmfMetrics.gauge (the sink the sampler writes to in the worker)', () => {
  it('writes each gauge as an EMF line with its unit and the service dimension', async () => {
    // Prepare: stdout EMF, as the task's environment says (aws-embedded-metrics resolves it when first loaded)
    process.env.AWS_EMF_ENVIRONMENT ??= 'Local';
    const { EmfMetrics } = await import('../../../gpu-worker/runtime/emf-metrics.ts');
    const { vi } = await import('vitest');
    const written: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void written.push(args.map(String).join(' ')));
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (written.push(String(chunk)), true));
    const metrics = new EmfMetrics('FrameAffinity', { service: 'worker' }, 3_600_000);

    // Act
    try {
      metrics.gauge(METRIC_NAMES.worker.gpuUtilizationPercent, 42, 'Percent');
      metrics.gauge(METRIC_NAMES.worker.gpuMemoryUsedMiB, 6000, 'Megabytes');
      await metrics.close();
    } finally {
      log.mockRestore();
      out.mockRestore();
    }

    // Assess
    const lines = written.join('\n').split('\n').filter((l) => l.includes('"_aws"')).map((l) => JSON.parse(l));
    const utilization = lines.find((l) => METRIC_NAMES.worker.gpuUtilizationPercent in l);
    const memory = lines.find((l) => METRIC_NAMES.worker.gpuMemoryUsedMiB in l);
    expect(utilization).toMatchObject({ service: 'worker', [METRIC_NAMES.worker.gpuUtilizationPercent]: 42 });
    expect(utilization._aws.CloudWatchMetrics[0].Metrics).toEqual([{ Name: METRIC_NAMES.worker.gpuUtilizationPercent, Unit: 'Percent' }]);
    expect(memory._aws.CloudWatchMetrics[0].Metrics).toEqual([{ Name: METRIC_NAMES.worker.gpuMemoryUsedMiB, Unit: 'Megabytes' }]);
  });
});
