/**
 * What the stack needs to know of each GPU instance type it allows (issue 43, items 3 and
 * 4): vCPUs and memory (the worker's thread pool and its hard memory limit), GPUs per
 * instance (one task per GPU shares the instance), and the GPU's architecture, checked
 * against what the worker image's ONNX Runtime build supports. From the EC2 instance type
 * pages (accelerated computing), November 2026.
 */
export interface GpuInstanceSpec {
  readonly vcpus: number;
  readonly memoryMiB: number;
  readonly gpus: number;
  /** The GPU and its CUDA compute capability. */
  readonly gpu: string;
  readonly computeCapability: number;
}

const GIB = 1024;
const sizes = (gpu: string, computeCapability: number, rows: readonly [string, number, number, number][]): [string, GpuInstanceSpec][] =>
  rows.map(([size, vcpus, memGiB, gpus]) => [size, { vcpus, memoryMiB: memGiB * GIB, gpus, gpu, computeCapability }]);

const T4 = ['T4 (Turing)', 7.5] as const;
const A10G = ['A10G (Ampere)', 8.6] as const;
const L4 = ['L4 (Ada)', 8.9] as const;
const L40S = ['L40S (Ada)', 8.9] as const;
const V100 = ['V100 (Volta)', 7.0] as const;

/** Families' sizes: [size, vCPUs, memory GiB, GPUs]. */
const FAMILIES: Record<string, [string, GpuInstanceSpec][]> = {
  g4dn: sizes(...T4, [['xlarge', 4, 16, 1], ['2xlarge', 8, 32, 1], ['4xlarge', 16, 64, 1], ['8xlarge', 32, 128, 1], ['12xlarge', 48, 192, 4], ['16xlarge', 64, 256, 1], ['metal', 96, 384, 8]]),
  g5: sizes(...A10G, [['xlarge', 4, 16, 1], ['2xlarge', 8, 32, 1], ['4xlarge', 16, 64, 1], ['8xlarge', 32, 128, 1], ['12xlarge', 48, 192, 4], ['16xlarge', 64, 256, 1], ['24xlarge', 96, 384, 4], ['48xlarge', 192, 768, 8]]),
  g6: sizes(...L4, [['xlarge', 4, 16, 1], ['2xlarge', 8, 32, 1], ['4xlarge', 16, 64, 1], ['8xlarge', 32, 128, 1], ['12xlarge', 48, 192, 4], ['16xlarge', 64, 256, 1], ['24xlarge', 96, 384, 4], ['48xlarge', 192, 768, 8]]),
  g6e: sizes(...L40S, [['xlarge', 4, 32, 1], ['2xlarge', 8, 64, 1], ['4xlarge', 16, 128, 1], ['8xlarge', 32, 256, 1], ['12xlarge', 48, 384, 4], ['16xlarge', 64, 512, 1], ['24xlarge', 96, 768, 4], ['48xlarge', 192, 1536, 8]]),
  gr6: sizes(...L4, [['4xlarge', 16, 128, 1], ['8xlarge', 32, 256, 1]]),
  p4d: sizes('A100 (Ampere)', 8.0, [['24xlarge', 96, 1152, 8]]),
  p4de: sizes('A100 80GB (Ampere)', 8.0, [['24xlarge', 96, 1152, 8]]),
  p5: sizes('H100 (Hopper)', 9.0, [['48xlarge', 192, 2048, 8]]),
  p5e: sizes('H200 (Hopper)', 9.0, [['48xlarge', 192, 2048, 8]]),
  p5en: sizes('H200 (Hopper)', 9.0, [['48xlarge', 192, 2048, 8]]),
  p3: sizes(...V100, [['2xlarge', 8, 61, 1], ['8xlarge', 32, 244, 4], ['16xlarge', 64, 488, 8]]),
  p3dn: sizes(...V100, [['24xlarge', 96, 768, 8]]),
};

/** The spec of an instance type (`g5.xlarge`), or undefined for one this table does not know. */
export function gpuInstanceSpec(instanceType: string): GpuInstanceSpec | undefined {
  const [family, size] = instanceType.split('.');
  return FAMILIES[family ?? '']?.find(([s]) => s === size)?.[1];
}

/**
 * The oldest GPU architecture the worker image is held to: Turing (7.5). ONNX Runtime 1.30's
 * CUDA 12 packages are built for a list of architectures that Volta (V100, 7.0) is not
 * known to be on, and cuDNN 9's kernels for Volta are not verified with this image; nothing
 * has run on a p3 yet. Rather than a worker that loads, finds no kernel and runs its model
 * on the CPU (WorkerOnCpu) on an expensive instance, the stack refuses p3 at synth.
 */
export const MIN_COMPUTE_CAPABILITY = 7.5;

/** Why an instance type cannot run the worker image, or undefined. */
export function gpuInstanceProblem(instanceType: string): string | undefined {
  const spec = gpuInstanceSpec(instanceType);
  if (!spec) return `${instanceType}: not an instance type this stack knows (infra/gpu-instances.ts lists the g4dn, g5, g6, g6e, gr6, p4d, p4de, p5, p5e and p5en sizes)`;
  if (spec.computeCapability < MIN_COMPUTE_CAPABILITY) {
    return (
      `${instanceType} has ${spec.gpu} GPUs (compute capability ${spec.computeCapability}): the worker image's ONNX Runtime 1.30 CUDA 12 build is not known to carry kernels for it, ` +
      `so the model would fall back to the CPU; use g4dn (T4), g5 (A10G), g6 (L4) or g6e (L40S), or p4d/p5 for large models`
    );
  }
  return undefined;
}

/**
 * The worker's per-task share of an instance: the memory of one GPU's share (instance memory
 * over its GPUs: one task per GPU), and its vCPUs the same way.
 */
export function perGpuShare(spec: GpuInstanceSpec): { readonly vcpus: number; readonly memoryMiB: number } {
  return { vcpus: Math.floor(spec.vcpus / spec.gpus), memoryMiB: Math.floor(spec.memoryMiB / spec.gpus) };
}
