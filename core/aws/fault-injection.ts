/**
 * Injected AWS faults for chaos runs (`AWS_FAULT_INJECTION`, installed by the composition roots through core/aws/instrumentation.ts):
 * throttling and 5xx errors in the SDK's own shapes, raised below the retry middleware
 * so the SDK classifies and retries them as it would AWS's. Never set in AWS; absent,
 * nothing here is installed.
 */
import { appendFileSync } from 'node:fs';
import type { DeserializeMiddleware, MetadataBearer } from '@smithy/types';
import { rng } from '../random.ts';
import type { AwsClients, CallerRole } from './clients.ts';

/** The AWS services the project's clients talk to. */
export type AwsServiceName = 'dynamodb' | 's3' | 'sqs';

/** `throttle`: the service's throttling error; `5xx`: an internal / unavailable error. */
export type InjectedFaultKind = 'throttle' | '5xx';

/** The JSON of `AWS_FAULT_INJECTION`. */
export interface FaultInjectionConfig {
  /** Share of request attempts (retries included) that fail, in [0, 1]. */
  readonly rate: number;
  /** Seed of the draws. @default 1 */
  readonly seed: number;
  /** Services whose calls may fail. @default all three */
  readonly services: readonly AwsServiceName[];
  /** Share of the injected faults that are throttling (the rest are 5xx), in [0, 1]. @default 0.5 */
  readonly throttleShare: number;
  /** File to which one line per injected fault is appended (`role service operation errorName`). */
  readonly log?: string;
}

const SERVICES: readonly AwsServiceName[] = ['dynamodb', 's3', 'sqs'];

/** Parses and validates `AWS_FAULT_INJECTION`; throws on anything malformed (a chaos run must not silently run without faults). */
export function parseFaultInjection(text: string): FaultInjectionConfig {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new Error(`AWS_FAULT_INJECTION is not JSON: ${text}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`AWS_FAULT_INJECTION must be a JSON object: ${text}`);
  const share = (name: string, fallback: number): number => {
    const v = raw[name] ?? fallback;
    if (typeof v !== 'number' || !(v >= 0 && v <= 1)) throw new Error(`AWS_FAULT_INJECTION.${name} must be a number in [0, 1] (got ${JSON.stringify(v)})`);
    return v;
  };
  const seed = raw.seed ?? 1;
  if (typeof seed !== 'number' || !Number.isInteger(seed)) throw new Error(`AWS_FAULT_INJECTION.seed must be an integer (got ${JSON.stringify(seed)})`);
  const services = raw.services ?? SERVICES;
  if (!Array.isArray(services) || services.some((s) => !SERVICES.includes(s as AwsServiceName)))
    throw new Error(`AWS_FAULT_INJECTION.services must list some of ${SERVICES.join(', ')} (got ${JSON.stringify(services)})`);
  if (raw.log !== undefined && typeof raw.log !== 'string') throw new Error('AWS_FAULT_INJECTION.log must be a file path');
  return {
    rate: share('rate', Number.NaN),
    seed,
    services: services as AwsServiceName[],
    throttleShare: share('throttleShare', 0.5),
    ...(raw.log !== undefined ? { log: raw.log as string } : {}),
  };
}

/** A seeded uniform draw in [0, 1) ({@link rng}), its seed mixed with `salt`. */
export function faultRng(seed: number, salt = ''): () => number {
  let a = seed >>> 0;
  for (let i = 0; i < salt.length; i++) a = Math.imul(a ^ salt.charCodeAt(i), 0x9e3779b1) >>> 0;
  return rng(a);
}

/**
 * The error a service returns for a fault of this kind, in the SDK's shape (name, `$fault`,
 * `$metadata.httpStatusCode`), so the standard retry strategy sees a throttling error or
 * a transient 5xx exactly as it would from AWS.
 */
export function injectedError(service: AwsServiceName, kind: InjectedFaultKind): Error {
  const shapes: Record<AwsServiceName, Record<InjectedFaultKind, { name: string; status: number; message: string }>> = {
    dynamodb: {
      throttle: { name: 'ThrottlingException', status: 400, message: 'Rate of requests exceeds the allowed throughput.' },
      '5xx': { name: 'InternalServerError', status: 500, message: 'Internal server error' },
    },
    sqs: {
      throttle: { name: 'RequestThrottled', status: 403, message: 'Request is throttled.' },
      '5xx': { name: 'ServiceUnavailable', status: 503, message: 'The request has failed due to a temporary failure of the server.' },
    },
    s3: {
      throttle: { name: 'SlowDown', status: 503, message: 'Please reduce your request rate.' },
      '5xx': { name: 'InternalError', status: 500, message: 'We encountered an internal error. Please try again.' },
    },
  };
  const s = shapes[service][kind];
  return Object.assign(new Error(`${s.message} (injected by AWS_FAULT_INJECTION)`), {
    name: s.name,
    $fault: s.status >= 500 ? ('server' as const) : ('client' as const),
    $metadata: { httpStatusCode: s.status, requestId: 'injected-fault' },
    injected: true,
  });
}

/**
 * Middleware for the `deserialize` step (below the retry middleware, so every attempt
 * draws): fails the attempt with {@link injectedError} before the request is sent.
 */
export function faultInjectionMiddleware(service: AwsServiceName, role: CallerRole, config: FaultInjectionConfig, draw: () => number): DeserializeMiddleware<object, MetadataBearer> {
  const enabled = config.services.includes(service);
  return (next, context) => async (args) => {
    if (enabled && draw() < config.rate) {
      const kind: InjectedFaultKind = draw() < config.throttleShare ? 'throttle' : '5xx';
      const error = injectedError(service, kind);
      if (config.log) appendFileSync(config.log, `${role}\t${service}\t${context.commandName}\t${error.name}\n`);
      throw error;
    }
    return next(args);
  };
}

/** Adds the fault middleware to the three clients; throws when `text` is malformed. */
export function installFaultInjection(clients: AwsClients, text: string, role: CallerRole, workerId = ''): void {
  const config = parseFaultInjection(text);
  // One draw sequence per process, varied by who the process is, so that workers do not
  // all fail the same calls in lockstep.
  const draw = faultRng(config.seed, `${role}:${workerId}`);
  const options = { step: 'deserialize', name: 'faultInjection' } as const;
  clients.dynamodb.middlewareStack.add(faultInjectionMiddleware('dynamodb', role, config, draw), options);
  clients.s3.middlewareStack.add(faultInjectionMiddleware('s3', role, config, draw), options);
  clients.sqs.middlewareStack.add(faultInjectionMiddleware('sqs', role, config, draw), options);
}
