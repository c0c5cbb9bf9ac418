/**
 * Puts a {@link StageClock} around the worker's dependencies without touching the loop:
 * SlotQueues.receive (receive), FrameStore.get (fetch), LeaseStore.commit (commit),
 * SlotQueues.delete (delete), and the processor's calls (decode + infer + track as one
 * `infer` span, unless the processor reports its own stages, as the simulated GPU does).
 * Installed by the worker's composition root; a log line with the report every
 * `STAGE_REPORT_INTERVAL_MS` and at exit says where the time went (bench/gpu-sim.ts reads it).
 */
import type { FrameProcessor } from '../../core/ports.ts';
import type { FencedCommit } from '../../core/leases/port.ts';
import type { FrameSource, SlotQueue } from '../../core/ingest/port.ts';
import type { Stage, StageClock } from './stage-clock.ts';

/** A processor that times its own decode / infer / track on a clock it was given. */
export interface StageReportingProcessor extends FrameProcessor {
  readonly reportsStages: true;
}

function reportsStages(p: FrameProcessor): p is StageReportingProcessor {
  return (p as Partial<StageReportingProcessor>).reportsStages === true;
}

/** Wraps `target` so that the named async methods are timed as their stages. */
function timed<T extends object>(target: T, clock: StageClock, methods: Record<string, { stage: Stage; items: (args: unknown[], result: unknown) => number }>): T {
  return new Proxy(target, {
    get(t, prop) {
      const value = Reflect.get(t, prop) as unknown;
      const m = typeof prop === 'string' ? methods[prop] : undefined;
      if (!m || typeof value !== 'function') return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(t) : value;
      return (...args: unknown[]) => {
        const end = clock.begin(m.stage);
        return (value as (...a: unknown[]) => Promise<unknown>).apply(t, args).then(
          (r) => {
            end(m.items(args, r));
            return r;
          },
          (e: unknown) => {
            end(0);
            throw e;
          },
        );
      };
    },
  });
}

const lengthOf = (x: unknown) => (Array.isArray(x) ? x.length : 1);

/** The worker's dependencies with their calls timed on `clock`. */
export function timeStages<Q extends SlotQueue, F extends FrameSource, L extends FencedCommit>(deps: { queues: Q; frames: F; leases: L; processor: FrameProcessor }, clock: StageClock) {
  return {
    queues: timed(deps.queues, clock, {
      receive: { stage: 'receive', items: (_a, r) => lengthOf(r) },
      delete: { stage: 'delete', items: (a) => lengthOf(a[1]) },
    }),
    // A read ahead by predicted key (decision 39) is a GET too.
    frames: timed(deps.frames, clock, { get: { stage: 'fetch', items: () => 1 }, getVersion: { stage: 'fetch', items: () => 1 } }),
    leases: timed(deps.leases, clock, { commit: { stage: 'commit', items: (a) => lengthOf(a[1]) } }),
    processor: reportsStages(deps.processor)
      ? deps.processor
      : timed(deps.processor, clock, {
          process: { stage: 'infer', items: (a) => lengthOf(a[0]) },
          processLate: { stage: 'infer', items: (a) => lengthOf(a[0]) },
        }),
  };
}
