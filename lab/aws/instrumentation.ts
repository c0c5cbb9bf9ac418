/**
 * The lab's AWS instrumentation, added to the product's hook (core/aws/instrumentation.ts
 * `addClientInstrumentation`) by the composition roots that want it: the local stack (for
 * its in-process router and janitor), lab/worker-main.ts (for the workers it starts),
 * benches and tests. Both are driven by the environment and absent by default:
 *
 * - `AWS_FAULT_INJECTION='{"rate":0.02,"seed":7}'` (chaos runs only, never set in AWS) makes
 *   that share of request attempts fail before they leave the process, with the errors
 *   AWS returns under load: throttling and 5xx ({@link FaultInjectionConfig}). They come
 *   from below the SDK's retry middleware, so the SDK classifies and retries them as it
 *   would the real ones (lab/aws/fault-injection.ts). Its `lostAnswerRate` and
 *   `laterGroupRate` strike the worker's fenced commits instead: applied with the answer
 *   lost, or the first group applied and a later one failed.
 * - `AWS_LATENCY_MODEL='{"seed":1}'` (benches only) delays every request attempt by a
 *   seeded draw of AWS-like latency per service and operation (lab/aws/latency-model.ts,
 *   lab/aws/latency-injection.ts).
 *
 * Each is read only when set; absent, no middleware is added. A malformed one throws.
 * The draws are salted with the role and `WORKER_ID`, so workers do not fail the same
 * calls in lockstep.
 */
import { WORKER_ENV } from '../../core/config.ts';
import { addClientInstrumentation, type ClientInstrumentation } from '../../core/aws/instrumentation.ts';
import { installFaultInjection, type FaultInjectionConfig } from './fault-injection.ts';
import { installLatencyModel } from './latency-injection.ts';

export type { FaultInjectionConfig };

/** The environment variables that switch the lab's instrumentation on. */
export const LAB_INSTRUMENTATION_ENV = {
  faultInjection: 'AWS_FAULT_INJECTION',
  latencyModel: 'AWS_LATENCY_MODEL',
} as const;

/** Installs the fault injection and the latency model the environment asks for. */
export const labInstrumentation: ClientInstrumentation = (clients, env, role) => {
  const faults = env[LAB_INSTRUMENTATION_ENV.faultInjection];
  if (faults) installFaultInjection(clients, faults, role, env[WORKER_ENV.workerId]);
  const latency = env[LAB_INSTRUMENTATION_ENV.latencyModel];
  if (latency) installLatencyModel(clients, latency, role, env[WORKER_ENV.workerId]);
};

/** Adds {@link labInstrumentation} to every `instrumentAwsClients` of this process (idempotent). */
export function installLabInstrumentation(): void {
  addClientInstrumentation(labInstrumentation);
}
