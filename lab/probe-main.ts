/**
 * The crash probe's child (gpu-worker/probe-main.ts) with the lab added, so that it builds
 * the same processor as a worker started through lab/worker-main.ts (which names this entry
 * in its extension) and dies on WORKER_CRASH_ON_KEY as that worker does.
 */
import { registerLab } from './worker/register.ts';

registerLab();
await import('../gpu-worker/probe-main.ts');
