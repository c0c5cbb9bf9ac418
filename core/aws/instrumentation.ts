/**
 * Instrumentation of the AWS clients for benches and chaos runs, installed by the
 * composition roots (the Lambda context in functions/shared/context.ts, the worker's
 * main in gpu-worker/main.ts), never by the client factory (core/aws/clients.ts), which
 * builds plain clients. Both are driven by the environment and absent by default:
 *
 * - `AWS_CALL_LOG=<file>` appends one line per API call (`role service operation`) to
 *   that file; the API-calls-per-frame benchmark reads it. Retries are not counted.
 * - `AWS_FAULT_INJECTION='{"rate":0.02,"seed":7}'` (chaos runs only, never set in AWS) makes
 *   that share of request attempts fail before they leave the process, with the errors
 *   AWS returns under load: throttling and 5xx ({@link FaultInjectionConfig}). They come
 *   from below the SDK's retry middleware, so the SDK classifies and retries them as it
 *   would the real ones (core/aws/fault-injection.ts). Its `lostAnswerRate` and
 *   `laterGroupRate` strike the worker's fenced commits instead: applied with the answer
 *   lost, or the first group applied and a later one failed.
 * - `AWS_LATENCY_MODEL='{"seed":1}'` (benches only) delays every request attempt by a
 *   seeded draw of AWS-like latency per service and operation (core/latency-model.ts,
 *   core/aws/latency-injection.ts).
 *
 * Each is read only when set; absent, no middleware is added.
 */
import { appendFileSync } from 'node:fs';
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';
import { WORKER_ENV } from '../config.ts';
import type { AwsClients, CallerRole } from './clients.ts';
import { installFaultInjection, type FaultInjectionConfig } from './fault-injection.ts';
import { installLatencyModel } from './latency-injection.ts';

/** The environment variables that switch instrumentation on. */
export const INSTRUMENTATION_ENV = {
  callLog: 'AWS_CALL_LOG',
  faultInjection: 'AWS_FAULT_INJECTION',
  latencyModel: 'AWS_LATENCY_MODEL',
} as const;

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
 * Installs what the environment asks for (`AWS_CALL_LOG`, `AWS_FAULT_INJECTION`, `AWS_LATENCY_MODEL`) on
 * clients a composition root built; returns the clients. Throws when
 * `AWS_FAULT_INJECTION` is malformed, so a chaos run never runs without its faults.
 * The fault draws are salted with the role and `WORKER_ID`, so workers do not fail the
 * same calls in lockstep.
 */
export function instrumentAwsClients(clients: AwsClients, env: Record<string, string | undefined>, role: CallerRole): AwsClients {
  const callLog = env[INSTRUMENTATION_ENV.callLog];
  if (callLog) installCallLog(clients, callLog, role);
  const faults = env[INSTRUMENTATION_ENV.faultInjection];
  if (faults) installFaultInjection(clients, faults, role, env[WORKER_ENV.workerId]);
  const latency = env[INSTRUMENTATION_ENV.latencyModel];
  if (latency) installLatencyModel(clients, latency, role, env[WORKER_ENV.workerId]);
  return clients;
}
