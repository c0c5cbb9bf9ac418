/**
 * Shrinking a failing plan to a short one a person can read (lab/sim/), as TigerBeetle's
 * VOPR and property-based testers do: drop one fault, command, notification fault or
 * video at a time, keep the smaller plan while it still fails, until nothing can go. The
 * simulation being deterministic, a plan that fails once fails every time.
 */
import { shrinkCandidates, type SimEvent, type SimPlan } from './plan.ts';
import { runPlan, type SimResult, type SimRunOptions } from './run.ts';

export interface Shrunk {
  readonly plan: SimPlan;
  readonly result: SimResult;
  /** Plans run while shrinking. */
  readonly runs: number;
}

/** Shrinks `failing` (a result with violations); at most `maxRuns` plans are tried. */
export async function shrink(failing: SimResult, o: SimRunOptions & { maxRuns?: number } = {}): Promise<Shrunk> {
  let best = failing;
  let runs = 0;
  const maxRuns = o.maxRuns ?? 400;
  for (let progress = true; progress && runs < maxRuns; ) {
    progress = false;
    for (const candidate of shrinkCandidates(best.plan)) {
      if (runs >= maxRuns) break;
      runs++;
      const r = await runPlan(candidate, o);
      if (r.violations.length > 0) {
        best = r;
        progress = true;
        break;
      }
    }
  }
  return { plan: best.plan, result: best, runs };
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(3)} s`;

/** One event as a step a person can read. */
export function describeEvent(e: SimEvent): string {
  const at = `at ${seconds(e.atMs)}:`;
  switch (e.kind) {
    case 'upload': {
      const what = e.body.startsWith('SIMS ') ? `segment ${e.body.slice(5)}${e.metadata?.frames ? `, declared ${e.metadata.frames} frames` : ', no declared count'}` : e.body.startsWith('SIMF') ? 'image' : 'corrupt object';
      return `${at} PUT ${e.key} (${what})${e.notify ? `, notification ${e.notify}` : ''}`;
    }
    case 'end':
      return `${at} PUT frames/${e.videoId}/_end = ${e.lastFrame}${e.notify ? `, notification ${e.notify}` : ''}`;
    case 'kill':
      return `${at} kill -9 a running worker (pick ${e.pick.toFixed(3)})`;
    case 'pause':
      return `${at} SIGSTOP a running worker for ${seconds(e.forMs ?? 0)} (pick ${e.pick.toFixed(3)})`;
    case 'replay':
      return `${at} affinity replay ${e.videoId} --from ${e.fromFrame}`;
    case 'reconcile':
      return `${at} affinity reconcile ${e.videoId}`;
    case 'release':
      return `${at} affinity release ${e.videoId} --force --yes`;
    case 'redrive':
      return `${at} affinity redrive`;
  }
}

/** A plan as numbered steps, then what went wrong. */
export function describePlan(plan: SimPlan, result?: SimResult): string {
  const lines = [`seed ${plan.seed}: ${plan.slots} slot(s), ${plan.videos.length} video(s)`];
  const aws = plan.aws;
  if (aws.ddbThrottle + aws.ddbLostAnswer + aws.s3Error + (aws.sqsError ?? 0) > 0) {
    lines.push(`AWS errors: DynamoDB throttles ${(aws.ddbThrottle * 100).toFixed(1)} %, commit answers lost ${(aws.ddbLostAnswer * 100).toFixed(1)} %, S3 reads ${(aws.s3Error * 100).toFixed(1)} %, SQS calls ${((aws.sqsError ?? 0) * 100).toFixed(1)} %`);
  }
  plan.events.forEach((e, i) => lines.push(`${String(i + 1).padStart(3)}. ${describeEvent(e)}`));
  for (const v of result?.violations ?? []) lines.push(`VIOLATED ${v.name}: ${v.violations}, e.g. ${v.examples.slice(0, 3).join('; ')}`);
  return lines.join('\n');
}
