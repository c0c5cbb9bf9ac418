/**
 * The crash probe (decision 41): before an isolated video's frame reaches this process's
 * model, a child process decodes and detects it. A frame that kills the child is never
 * handed to this process: after `crashProbeDeaths` deaths it becomes a `failed` outcome
 * with reason `crashed-worker`, and this worker (the first successor of the owner the
 * frame killed) goes on with the slot's other videos.
 *
 * Only isolated videos (crash-breaker.ts: taken over from a dead owner, or adopted
 * without progress) go through the probe; normal rounds never do, so the normal path
 * pays nothing. A probe that cannot run (its child did not start) lets the frame run
 * here unprobed: decision 29's markers still stop a loop, one crash later.
 */
import type { FrameInput, FrameOutcome, FrameProcessor, LateFrameInput, LogSink, MetricSink } from '../../../core/ports.ts';
import { METRIC_NAMES } from '../../../core/metric-names.ts';
import { CRASHED_WORKER_REASON } from './crash-breaker.ts';
import { overriding } from '../../../core/overriding.ts';

/** What one try of a frame in the child process gave. */
export type ProbeResult =
  /** The child decoded and detected the frame and lives (a JS error in it counts as living: it is the frame's own `failed` outcome here). */
  | { readonly kind: 'survived' }
  /** The child died (a signal, an exit, out of memory) or hung past its timeout while it held the frame. */
  | { readonly kind: 'died'; readonly detail: string }
  /** No child could be had (it did not start, or the probe is stopping): nothing is known. */
  | { readonly kind: 'unavailable'; readonly reason: string };

/** A sandbox that tells whether a frame kills the process that decodes and detects it. */
export interface FrameProbe {
  /** Tries the frame in a child process; a death ends that child, the next try gets a fresh one. */
  tryFrame(input: FrameInput): Promise<ProbeResult>;
  /** Starts a child ahead of need (after a takeover from a dead owner); never throws. */
  warm(): void;
  /** Ends the child, if any. */
  stop(): Promise<void>;
}

/** What to do with a frame after one probe result. */
export type ProbeStep = 'run' | 'probe-again' | 'park';

/**
 * The verdict after a probe (pure): `deathsBefore` are the deaths already seen on this
 * frame in this process. Survived or unknown: run it here. Died: park once the deaths
 * reach `deathsToPark`, else try again in a fresh child (one death could be the child's
 * bad luck, as a kill by the container's out-of-memory killer; twice on the same frame
 * is the frame).
 */
export function probeStep(deathsBefore: number, result: ProbeResult['kind'], deathsToPark: number): ProbeStep {
  if (result !== 'died') return 'run';
  return deathsBefore + 1 >= deathsToPark ? 'park' : 'probe-again';
}

export interface ProbedProcessorDeps {
  readonly probe: FrameProbe;
  /** Deaths of a child on one frame before the frame is parked (`crashProbeDeaths`, ≥ 1). */
  readonly deathsToPark: number;
  readonly metrics: MetricSink;
  readonly log: LogSink;
}

/**
 * The processor isolated rounds use: each frame is tried in the probe first, one at a
 * time (a death must name one frame); the frames that passed, or could not be tried, go
 * to the real processor together; a frame that killed the child `deathsToPark` times
 * gets a `crashed-worker` outcome and never reaches the real processor, so the video's
 * tracker does not see it. Every other member is the real processor's.
 */
export function probedProcessor(inner: FrameProcessor, d: ProbedProcessorDeps): FrameProcessor {
  const screen = async <I extends FrameInput>(inputs: readonly I[], run: (passed: readonly I[]) => Promise<FrameOutcome[]>): Promise<FrameOutcome[]> => {
    const verdicts: (FrameOutcome | undefined)[] = [];
    for (const input of inputs) verdicts.push(await tryUntilVerdict(d, input));
    const passed = inputs.filter((_, i) => verdicts[i] === undefined);
    const ran = passed.length > 0 ? await run(passed) : [];
    let next = 0;
    return verdicts.map((v) => v ?? ran[next++]!);
  };
  return overriding(inner, {
    process: (inputs: readonly FrameInput[]) => screen(inputs, (p) => inner.process(p)),
    processLate: (inputs: readonly LateFrameInput[]) => screen(inputs, (p) => inner.processLate(p)),
  });
}

/** Probes one frame until a verdict: undefined = run it here; an outcome = parked. */
async function tryUntilVerdict(d: ProbedProcessorDeps, input: FrameInput): Promise<FrameOutcome | undefined> {
  const deaths: string[] = [];
  for (;;) {
    const result = await d.probe.tryFrame(input);
    const step = probeStep(deaths.length, result.kind, d.deathsToPark);
    if (result.kind === 'unavailable') {
      d.log.warn('crash probe unavailable: the isolated frame runs here unprobed', { videoId: input.videoId, frame: input.frame, reason: result.reason });
      d.metrics.count(METRIC_NAMES.worker.crashProbeUnavailable);
    }
    if (result.kind === 'died') {
      deaths.push(result.detail);
      d.metrics.count(METRIC_NAMES.worker.crashProbeDeaths);
      d.log.warn('crash probe: the child process died on a frame', { videoId: input.videoId, frame: input.frame, key: input.key, death: deaths.length, detail: result.detail });
    }
    if (step === 'run') return undefined;
    if (step === 'park') {
      return { status: 'failed', reason: CRASHED_WORKER_REASON, detail: `killed the crash probe's process ${deaths.length} times (${deaths.join('; ')}); retry with \`affinity replay\``.slice(0, 300) };
    }
  }
}
