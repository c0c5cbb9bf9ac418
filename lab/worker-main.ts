/**
 * The worker as the local stack, benches and tests run it: the lab (lab/worker/register.ts:
 * the `stats` and `simgpu` processors, WORKER_CRASH_ON_KEY, AWS_FAULT_INJECTION and
 * AWS_LATENCY_MODEL) added to the product's worker, gpu-worker/main.ts, which then runs
 * unchanged. The GPU image runs gpu-worker/main.ts itself and never contains lab/.
 */
import { registerLab } from './worker/register.ts';

registerLab();
await import('../gpu-worker/main.ts');
