/**
 * Test seam only (`WORKER_CRASH_ON_KEY`, added to the worker and the crash probe by
 * lab/worker/register.ts): makes this process die the way a
 * poison frame kills it (out of memory, a native crash in the decoder or model), when it
 * processes a frame whose S3 key contains the given substring. Fetching or decoding the
 * frame ahead does not kill: only handing it to the model does, as in a model crash.
 * Used by the crash-loop breaker's tests (decision 28) and the chaos run's fault kind.
 */
import type { FrameSource } from '../../core/ingest/port.ts';
import type { FrameInput, FrameProcessor } from '../../core/ports.ts';
import { overriding } from '../../core/overriding.ts';

/** The environment variable: a key substring; unset or empty = no seam. */
export const WORKER_CRASH_ON_KEY_ENV = 'WORKER_CRASH_ON_KEY';

/**
 * Wraps the frame store (to remember which fetched bytes came from a poison key) and the
 * processor (to die on them). `die` defaults to SIGKILL of this process: no handler,
 * no drain, no last commit.
 */
export function crashOnKey<P extends FrameProcessor>(
  substring: string,
  frames: FrameSource,
  processor: P,
  die: (input: FrameInput) => void = () => process.kill(process.pid, 'SIGKILL'),
): { frames: FrameSource; processor: P } {
  const poisoned = new WeakSet<Uint8Array>();
  const get = frames.get.bind(frames);
  frames.get = async (bucket: string, key: string) => {
    const bytes = await get(bucket, key);
    if (key.includes(substring)) poisoned.add(bytes);
    return bytes;
  };
  const check = (inputs: readonly FrameInput[]) => {
    for (const input of inputs) if (poisoned.has(input.image)) die(input);
  };
  const wrapped = overriding<FrameProcessor>(processor, {
    process: (inputs) => {
      check(inputs);
      return processor.process(inputs);
    },
    processLate: (inputs) => {
      check(inputs);
      return processor.processLate(inputs);
    },
  }) as P;
  return { frames, processor: wrapped };
}
