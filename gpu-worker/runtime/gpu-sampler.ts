/**
 * GPU utilisation and memory of the task's GPU, and the execution provider really in use,
 * as worker metrics (issue 35, item 4). Once a minute:
 *
 * - `ExecutionProvider{Provider}` += 1, so a worker that fell back to CPU
 *   (microsoft/onnxruntime#23372) keeps the `WorkerOnCpu` alarm up for as long as it runs,
 *   not only at its start;
 * - `SegmentDecoderInUse{Decoder}` += 1 for each place the worker's segments decode
 *   (`nvdec`, `cpu`, `cpu-fallback`; issue 43), so a worker whose videos fell back to CPU
 *   decoding keeps the `WorkerDecodingOnCpu` alarm up while it runs;
 * - when `nvidia-smi` is there, `GpuUtilizationPercent`, `GpuDecoderUtilizationPercent`
 *   (NVDEC), `GpuMemoryUsedMiB` and `GpuMemoryUsedPercent` of the GPU(s) the task sees
 *   (ECS gives a task with `gpuCount: 1` one GPU through `NVIDIA_VISIBLE_DEVICES`). A driver
 *   whose nvidia-smi does not know `utilization.decoder` fails the whole query ("is not a
 *   valid field to query"): the sampler then asks without it from that tick on.
 *
 * `nvidia-smi` comes from the NVIDIA container runtime of the ECS GPU AMI, which mounts the
 * driver's utilities into containers whose `NVIDIA_DRIVER_CAPABILITIES` include `utility`
 * (the CUDA base image's default). Where it is absent (a CPU-only host, the local stack,
 * tests) the first attempt fails with ENOENT and the sampler stops looking: silent, and
 * one failed spawn in all. A call that times out or fails otherwise is skipped for that
 * tick only.
 */
import { execFile } from 'node:child_process';
import { METRIC_NAMES } from '../../core/metric-names.ts';

/** The query: one line per GPU, `utilization %, memory used MiB, memory total MiB, decoder utilization %`. */
/**
 * The metrics each sampler tick emits on a GPU host, each one series (dimension `service`,
 * plus `Provider` or `Decoder` with the one value a worker has): billed as custom metrics
 * every hour the fleet runs (bench/cost-model.ts counts them with the series it measures).
 */
export const SAMPLED_METRICS = [
  METRIC_NAMES.worker.executionProvider,
  METRIC_NAMES.worker.segmentDecoderInUse,
  METRIC_NAMES.worker.gpuUtilizationPercent,
  METRIC_NAMES.worker.gpuDecoderUtilizationPercent,
  METRIC_NAMES.worker.gpuMemoryUsedMiB,
  METRIC_NAMES.worker.gpuMemoryUsedPercent,
] as const;

export const NVIDIA_SMI = 'nvidia-smi';
export const NVIDIA_SMI_ARGS = ['--query-gpu=utilization.gpu,memory.used,memory.total,utilization.decoder', '--format=csv,noheader,nounits'] as const;
/** The same without the decoder's utilisation, for an nvidia-smi that does not know the field. */
export const NVIDIA_SMI_ARGS_NO_DECODER = ['--query-gpu=utilization.gpu,memory.used,memory.total', '--format=csv,noheader,nounits'] as const;

/** Default sampling period. */
export const GPU_SAMPLE_INTERVAL_MS = 60_000;
/** A call that takes longer is abandoned (a wedged driver must not pile up processes). */
export const NVIDIA_SMI_TIMEOUT_MS = 5_000;

export interface GpuSample {
  readonly utilizationPercent: number;
  readonly memoryUsedMiB: number;
  readonly memoryTotalMiB: number;
  /** NVDEC utilisation, %; undefined when nvidia-smi did not give it (`[N/A]`, or asked without it). */
  readonly decoderUtilizationPercent?: number;
}

const NUMBER = /^\d+(\.\d+)?$/;

/**
 * Parses `nvidia-smi --query-gpu=utilization.gpu,memory.used,memory.total[,utilization.decoder]
 * --format=csv,noheader,nounits` output: one GPU a line, `37, 1234, 23028, 12`. Lines whose
 * first three fields are not all numbers (`[N/A]`, `[Not Supported]`, a warning) are left
 * out; a decoder field that is not a number is left out of its sample.
 */
export function parseNvidiaSmi(stdout: string): GpuSample[] {
  const out: GpuSample[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    const fields = line.split(',').map((f) => f.trim());
    if ((fields.length !== 3 && fields.length !== 4) || fields.slice(0, 3).some((f) => !NUMBER.test(f))) continue;
    const [utilizationPercent, memoryUsedMiB, memoryTotalMiB] = fields.slice(0, 3).map(Number) as [number, number, number];
    const decoder = fields[3];
    out.push({ utilizationPercent, memoryUsedMiB, memoryTotalMiB, ...(decoder !== undefined && NUMBER.test(decoder) ? { decoderUtilizationPercent: Number(decoder) } : {}) });
  }
  return out;
}

/** Runs a program and resolves with its stdout; rejects with the spawn error (`code: 'ENOENT'` when it is absent). */
export type RunProgram = (file: string, args: readonly string[], timeoutMs: number) => Promise<string>;

export const runProgram: RunProgram = (file, args, timeoutMs) =>
  new Promise((resolve, reject) => {
    // A failed run keeps what it printed (nvidia-smi writes "is not a valid field to query" to stdout).
    execFile(file, [...args], { timeout: timeoutMs, encoding: 'utf8', windowsHide: true }, (err, stdout) => (err ? reject(Object.assign(err, { stdout })) : resolve(stdout)));
  });

/** What the sampler writes: counts with dimensions, and gauges with a unit. */
export interface GpuMetricSink {
  count(name: string, value?: number, dimensions?: Record<string, string>): void;
  gauge(name: string, value: number, unit: 'Percent' | 'Megabytes'): void;
}

export interface GpuSamplerOptions {
  readonly metrics: GpuMetricSink;
  /** The execution provider in use (`cuda`, `cpu`), once the model has loaded; undefined without a model. */
  readonly provider: () => string | undefined;
  /** Where the worker's segments decode now (`nvdec`, `cpu`, `cpu-fallback`); absent or empty: nothing counted. */
  readonly decoders?: () => readonly string[];
  /** @default runProgram (child_process.execFile) */
  readonly run?: RunProgram;
  /** @default GPU_SAMPLE_INTERVAL_MS */
  readonly intervalMs?: number;
}

export class GpuSampler {
  readonly #o: GpuSamplerOptions;
  #timer: NodeJS.Timeout | undefined;
  /** False once nvidia-smi turned out to be absent: it is not looked for again. */
  #smiPresent = true;
  /** False once nvidia-smi refused the `utilization.decoder` field: asked without it from then on. */
  #decoderField = true;

  constructor(options: GpuSamplerOptions) {
    this.#o = options;
  }

  /** Whether nvidia-smi is still thought to be there (false after an ENOENT). */
  get nvidiaSmiPresent(): boolean {
    return this.#smiPresent;
  }

  /** Samples every interval from now on (the timer does not keep the process alive). */
  start(): this {
    this.#timer ??= setInterval(() => void this.sampleOnce(), this.#o.intervalMs ?? GPU_SAMPLE_INTERVAL_MS);
    this.#timer.unref();
    return this;
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** One tick: the provider count, then the GPU gauges if nvidia-smi answers. Never throws. */
  async sampleOnce(): Promise<readonly GpuSample[]> {
    const provider = this.#o.provider();
    if (provider) this.#o.metrics.count(METRIC_NAMES.worker.executionProvider, 1, { Provider: provider });
    for (const decoder of this.#o.decoders?.() ?? []) this.#o.metrics.count(METRIC_NAMES.worker.segmentDecoderInUse, 1, { Decoder: decoder });
    if (!this.#smiPresent) return [];
    const run = this.#o.run ?? runProgram;
    let stdout: string;
    try {
      stdout = await run(NVIDIA_SMI, this.#decoderField ? NVIDIA_SMI_ARGS : NVIDIA_SMI_ARGS_NO_DECODER, NVIDIA_SMI_TIMEOUT_MS);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        this.#smiPresent = false;
        return [];
      }
      // Not the command line (which names the field whatever failed): what nvidia-smi said.
      const said = `${(e as { stdout?: string }).stdout ?? ''} ${(e as { stderr?: string }).stderr ?? ''} ${String((e as Error).message).split('\n').slice(1).join(' ')}`;
      if (!this.#decoderField || !/not a valid field/i.test(said)) return [];
      // An older nvidia-smi: ask again without the decoder's field, now and from now on.
      this.#decoderField = false;
      try {
        stdout = await run(NVIDIA_SMI, NVIDIA_SMI_ARGS_NO_DECODER, NVIDIA_SMI_TIMEOUT_MS);
      } catch {
        return [];
      }
    }
    const samples = parseNvidiaSmi(stdout);
    for (const s of samples) {
      this.#o.metrics.gauge(METRIC_NAMES.worker.gpuUtilizationPercent, s.utilizationPercent, 'Percent');
      if (s.decoderUtilizationPercent !== undefined) this.#o.metrics.gauge(METRIC_NAMES.worker.gpuDecoderUtilizationPercent, s.decoderUtilizationPercent, 'Percent');
      this.#o.metrics.gauge(METRIC_NAMES.worker.gpuMemoryUsedMiB, s.memoryUsedMiB, 'Megabytes');
      if (s.memoryTotalMiB > 0) this.#o.metrics.gauge(METRIC_NAMES.worker.gpuMemoryUsedPercent, (100 * s.memoryUsedMiB) / s.memoryTotalMiB, 'Percent');
    }
    return samples;
  }
}
