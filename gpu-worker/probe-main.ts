/**
 * The crash probe's child process (decision 41; started by runtime/probe-process.ts over
 * an IPC channel, never by hand). It builds the same frame processor as the worker (the
 * worker's environment, processor-factory.ts), then for each frame it is sent decodes and
 * detects it under a scratch video whose state is thrown away, and answers `tried`. If
 * the frame kills it (out of memory, a native crash in the decoder or the model), the
 * worker sees the exit instead of the answer, and the frame never reaches the worker's
 * own model.
 *
 * It exits when its channel closes: the worker stopped it, or the worker died.
 * Extensions (extensions.ts) reach it as they reach the worker: the worker starts the
 * probe entry an extension set (lab/probe-main.ts adds the lab's processors and its
 * WORKER_CRASH_ON_KEY seam, which kills the child as it kills the worker), else this one.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { EXIT_PROCESSOR_FAILED, WORKER_ENV, tunablesFromEnv } from '../core/config.ts';
import { createAwsClients } from '../core/aws/clients.ts';
import { nullMetrics } from '../core/ports.ts';
import { createProcessor } from './processor-factory.ts';
import { StageClock } from './runtime/stage-clock.ts';
import { beforeProbeTry } from './extensions.ts';
import type { ProbeReply, ProbeRequest } from './runtime/crash/probe-process.ts';
import { errorText } from '../core/errors.ts';

/** The scratch video each frame is detected under: the child's tracker state is never kept. */
const SCRATCH_VIDEO = '_crash-probe';

function reply(m: ProbeReply): void {
  process.send?.(m);
}

async function main(): Promise<void> {
  const env = process.env;
  const log = new Logger({ serviceName: 'worker', persistentKeys: { role: 'crash-probe', workerId: env[WORKER_ENV.workerId] } });
  // The worker died or stopped the probe: nothing more to do.
  process.on('disconnect', () => process.exit(0));
  const tunables = tunablesFromEnv(env);
  const onFatal = (reason: string) => {
    // A dead inference thread while trying a frame: the worker sees the exit as a death on it.
    log.error('crash probe: processor broken, exiting', { reason });
    process.exit(EXIT_PROCESSOR_FAILED);
  };
  let processor;
  try {
    processor = await createProcessor(env[WORKER_ENV.frameProcessor] ?? 'vision', tunables, log, createAwsClients(env).s3, nullMetrics /* the worker counts what the probe found */, onFatal, new StageClock());
    await processor.start();
  } catch (e) {
    reply({ type: 'start-failed', error: errorText(e).slice(0, 500) });
    process.exit(1);
  }
  const p = processor;
  process.on('message', (m: ProbeRequest) => {
    if (m.type !== 'try') return;
    // An extension's seam (the lab's crash-on-key dies here, as the worker would when handed that frame).
    beforeProbeTry(m.key, env);
    void (async () => {
      try {
        p.openVideo(SCRATCH_VIDEO, undefined);
        // A segment's frame comes decoded (its pixels), as the worker's processor would get it.
        await p.process([{ videoId: SCRATCH_VIDEO, frame: m.frame, image: m.image, ...(m.pixels ? { pixels: m.pixels } : {}) }]);
      } catch {
        // A JS error is not a death: the worker's own run reports it as the frame's outcome.
      } finally {
        p.closeVideo(SCRATCH_VIDEO);
      }
      reply({ type: 'tried', id: m.id });
    })();
  });
  reply({ type: 'ready', description: p.description });
}

void main();
