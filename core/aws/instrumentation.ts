/**
 * Instrumentation of the AWS clients, installed by the composition roots (the Lambda
 * context in functions/shared/context.ts, the worker's main in gpu-worker/main.ts), never
 * by the client factory (core/aws/clients.ts), which builds plain clients.
 *
 * - `AWS_CALL_LOG=<file>` appends one line per API call (`role service operation`) to
 *   that file; the API-calls-per-frame benchmark reads it. Retries are not counted. It
 *   only observes, so it ships: read only when set; absent, no middleware is added.
 * - Anything else is added through {@link addClientInstrumentation} by a composition root
 *   outside the product: the lab (lab/aws/instrumentation.ts) adds the chaos runs' fault
 *   injection (`AWS_FAULT_INJECTION`) and the benches' latency model (`AWS_LATENCY_MODEL`)
 *   for the local stack's in-process functions and the workers it starts through
 *   lab/worker-main.ts. The Lambda bundles and the GPU image add nothing: neither contains
 *   the lab (test/infra/no-lab-in-product.test.ts).
 */
import { appendFileSync } from 'node:fs';
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';
import type { AwsClients, CallerRole } from './clients.ts';

/** The environment variable of the call log. */
export const INSTRUMENTATION_ENV = {
  callLog: 'AWS_CALL_LOG',
} as const;

/** Installs what `env` asks for on clients a composition root built; may throw on a malformed setting. */
export type ClientInstrumentation = (clients: AwsClients, env: Record<string, string | undefined>, role: CallerRole) => void;

const added: ClientInstrumentation[] = [];

/** Adds an instrumentation that {@link instrumentAwsClients} applies from now on, in this process (once, however often added). */
export function addClientInstrumentation(instrumentation: ClientInstrumentation): void {
  if (!added.includes(instrumentation)) added.push(instrumentation);
}

/** Adds the call-log middleware to the three clients: one `role service operation` line per call, before retries. */
export function installCallLog(clients: AwsClients, file: string, role: CallerRole): void {
  const logCalls = (service: string): InitializeMiddleware<object, MetadataBearer> => (next, context) => async (args) => {
    appendFileSync(file, `${role}\t${service}\t${context.commandName}\n`);
    return next(args);
  };
  clients.dynamodb.middlewareStack.add(logCalls('dynamodb'), { step: 'initialize', name: 'callLog' });
  clients.s3.middlewareStack.add(logCalls('s3'), { step: 'initialize', name: 'callLog' });
  clients.sqs.middlewareStack.add(logCalls('sqs'), { step: 'initialize', name: 'callLog' });
}

/**
 * Installs what the environment asks for on clients a composition root built: the call
 * log (`AWS_CALL_LOG`), then every instrumentation added with
 * {@link addClientInstrumentation}, which may throw on a malformed setting (so a chaos
 * run never runs without its faults). Returns the clients.
 */
export function instrumentAwsClients(clients: AwsClients, env: Record<string, string | undefined>, role: CallerRole): AwsClients {
  const callLog = env[INSTRUMENTATION_ENV.callLog];
  if (callLog) installCallLog(clients, callLog, role);
  for (const instrumentation of added) instrumentation(clients, env, role);
  return clients;
}
