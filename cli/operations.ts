/**
 * The operator operations (core/commit/operations/) on a CLI {@link Target}: their ports
 * over the target's clients, and their refusals as {@link CliError}s.
 */
import { operatorPorts } from '../core/commit/operations/compose.ts';
import { OperatorError, type OperatorPorts } from '../core/commit/operations/ports.ts';
import { CliError } from './io.ts';
import type { Target } from './target.ts';

export function targetPorts(target: Target): OperatorPorts {
  return operatorPorts(target.clients, target, target, { where: target.description });
}

/** Runs an operation; its refusal becomes a {@link CliError} (exit code 2 for a usage error). */
export async function asCommand<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (e) {
    if (e instanceof OperatorError) throw new CliError(e.message, e.usage ? 2 : 1);
    throw e;
  }
}
