/**
 * AWS SDK v3 clients, built in one place. In the Lambdas and the worker, endpoints come
 * from the SDK's own `AWS_ENDPOINT_URL_<SERVICE>` variables, so the same code reaches
 * AWS or the local emulators; `S3_FORCE_PATH_STYLE=true` is needed for the local S3
 * endpoint. Tooling (local stack, CLI) passes explicit per-service configuration.
 *
 * Every client gets connect, request and socket-idle timeouts and an explicit retry
 * policy ({@link AWS_CALL_POLICY} in core/config.ts); without them a hung call (a
 * heartbeat, say) would wait on the SDK's default socket timeout of minutes. Explicit
 * configuration overrides them: a `requestHandler` instance replaces the handler, a
 * `requestHandler` options object is merged over the defaults, and `maxAttempts` /
 * `retryMode` win. In {@link createAwsClients}, `AWS_MAX_ATTEMPTS` and `AWS_RETRY_MODE`
 * (the SDK's own variables) win too.
 *
 * The factory builds plain clients: the bench call log (`AWS_CALL_LOG`) and the chaos
 * runs' fault injection (`AWS_FAULT_INJECTION`, the lab's: lab/aws/) are installed on them by the composition
 * roots, through core/aws/instrumentation.ts, and this module imports neither.
 */
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import type { HttpHandlerOptions, HttpRequest, NodeHttpHandlerOptions } from '@smithy/types';
import { AWS_CALL_POLICY, type AwsCallPolicy } from '../config.ts';

export interface AwsClients {
  readonly s3: S3Client;
  readonly sqs: SQSClient;
  /** Document client (marshalling) over {@link dynamodb}. */
  readonly ddb: DynamoDBDocumentClient;
  readonly dynamodb: DynamoDBClient;
  /** Releases the clients' sockets. */
  destroy(): void;
}

export interface AwsClientConfig {
  readonly s3: S3ClientConfig;
  readonly sqs: SQSClientConfig;
  readonly dynamodb: DynamoDBClientConfig;
}

/** Which component makes the calls, for the instrumentation (core/aws/instrumentation.ts). */
export type CallerRole = 'router' | 'worker' | 'janitor' | 'cli';

/** Handler options for a {@link AwsCallPolicy}: every timeout throws (`TimeoutError`). */
export function handlerOptions(p: AwsCallPolicy): NodeHttpHandlerOptions {
  return {
    connectionTimeout: p.connectionTimeoutMs,
    requestTimeout: p.requestTimeoutMs,
    // Without it, @smithy/node-http-handler only logs a warning when requestTimeout passes.
    throwOnRequestTimeout: true,
    socketTimeout: p.socketTimeoutMs,
  };
}

const utf8 = new TextDecoder();

/** Request timeout for one SQS request: a long poll gets its wait on top of the margin. */
export function sqsRequestTimeoutMs(request: Pick<HttpRequest, 'headers' | 'body'>, baseMs: number, longPollMarginMs = AWS_CALL_POLICY.sqs.longPollMarginMs): number {
  if (header(request, 'x-amz-target') !== 'AmazonSQS.ReceiveMessage') return baseMs;
  let wait = 20; // without WaitTimeSeconds the queue's ReceiveMessageWaitTimeSeconds applies: at most 20
  const body: unknown = request.body;
  // The SDK serialises JSON bodies into a Uint8Array (a string in older versions).
  const text = typeof body === 'string' ? body : body instanceof Uint8Array ? utf8.decode(body) : undefined;
  try {
    const v = (JSON.parse(text ?? '') as { WaitTimeSeconds?: unknown }).WaitTimeSeconds;
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) wait = v;
  } catch {
    // not JSON: keep the longest wait
  }
  return Math.max(baseMs, wait * 1000 + longPollMarginMs);
}

/** Request timeout for one S3 request: an upload gets time for its body on top of the base. */
export function s3RequestTimeoutMs(request: Pick<HttpRequest, 'headers'>, baseMs: number, uploadMsPerMiB = AWS_CALL_POLICY.s3.uploadMsPerMiB): number {
  const bytes = Number(header(request, 'content-length') ?? 0);
  if (!Number.isFinite(bytes) || bytes <= 0) return baseMs;
  return baseMs + Math.ceil(bytes / (1024 * 1024)) * uploadMsPerMiB;
}

function header(request: Pick<HttpRequest, 'headers'>, name: string): string | undefined {
  for (const [k, v] of Object.entries(request.headers ?? {})) if (k.toLowerCase() === name) return v;
  return undefined;
}

interface ClientConfigInput {
  requestHandler?: unknown;
  maxAttempts?: unknown;
  retryMode?: unknown;
}

/** The explicit configuration over the policy's defaults. */
function withPolicy<C extends ClientConfigInput>(config: C, p: AwsCallPolicy): C {
  const given = config.requestHandler;
  const isInstance = typeof (given as { handle?: unknown } | undefined)?.handle === 'function';
  return {
    ...config,
    requestHandler: isInstance ? given : { ...handlerOptions(p), ...(given as NodeHttpHandlerOptions | undefined) },
    maxAttempts: config.maxAttempts ?? p.maxAttempts,
    retryMode: config.retryMode ?? AWS_CALL_POLICY.retryMode,
  };
}

type HandlerOf<T extends { config: { requestHandler: unknown } }> = T['config']['requestHandler'];

/**
 * Wraps a client's handler so that each request gets the request timeout `timeoutFor`
 * gives it (unless the caller passed one to `send`). `handlerConfig` is what the client
 * was built with; a handler instance (the caller's own) is left alone.
 */
function perRequestTimeout<T extends { config: { requestHandler: unknown } }>(client: T, handlerConfig: unknown, timeoutFor: (request: HttpRequest, baseMs: number) => number): void {
  if (typeof (handlerConfig as { handle?: unknown } | undefined)?.handle === 'function') return;
  const base = (handlerConfig as NodeHttpHandlerOptions | undefined)?.requestTimeout;
  if (base === undefined) return;
  const inner = client.config.requestHandler as {
    handle(request: HttpRequest, options?: HttpHandlerOptions): Promise<unknown>;
    httpHandlerConfigs?(): { requestTimeout?: number };
    updateHttpClientConfig?(key: never, value: never): void;
    destroy?(): void;
    metadata?: unknown;
  };
  const wrapped = {
    metadata: inner.metadata,
    handle: (request: HttpRequest, options?: HttpHandlerOptions) =>
      inner.handle(request, options?.requestTimeout !== undefined ? options : { ...options, requestTimeout: timeoutFor(request, base) }),
    updateHttpClientConfig: (key: never, value: never) => inner.updateHttpClientConfig?.(key, value),
    httpHandlerConfigs: () => inner.httpHandlerConfigs?.() ?? {},
    destroy: () => inner.destroy?.(),
  };
  (client.config as { requestHandler: HandlerOf<T> }).requestHandler = wrapped as HandlerOf<T>;
}

/** Builds the three clients from explicit configuration, over the timeouts and retries of {@link AWS_CALL_POLICY}. */
export function createAwsClientsFrom(config: AwsClientConfig): AwsClients {
  const dynamodb = new DynamoDBClient(withPolicy(config.dynamodb, AWS_CALL_POLICY.dynamodb));
  const s3Config = withPolicy(config.s3, AWS_CALL_POLICY.s3);
  const sqsConfig = withPolicy(config.sqs, AWS_CALL_POLICY.sqs);
  const s3 = new S3Client(s3Config);
  const sqs = new SQSClient(sqsConfig);
  perRequestTimeout(sqs, sqsConfig.requestHandler, (request, base) => sqsRequestTimeoutMs(request, base));
  perRequestTimeout(s3, s3Config.requestHandler, (request, base) => s3RequestTimeoutMs(request, base));
  const ddb = DynamoDBDocumentClient.from(dynamodb, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return {
    s3,
    sqs,
    ddb,
    dynamodb,
    destroy() {
      s3.destroy();
      sqs.destroy();
      dynamodb.destroy();
    },
  };
}

/**
 * Clients for the router, janitor and worker, configured by the environment (region,
 * `S3_FORCE_PATH_STYLE`, the SDK's retry variables). Installs no instrumentation: the
 * composition roots add it with `instrumentAwsClients` (core/aws/instrumentation.ts).
 */
export function createAwsClients(env: Record<string, string | undefined> = process.env): AwsClients {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  // The SDK's own retry variables win over the defaults (an operator's escape hatch).
  const attempts = Number(env.AWS_MAX_ATTEMPTS);
  const retry = {
    ...(env.AWS_MAX_ATTEMPTS && Number.isInteger(attempts) && attempts >= 1 ? { maxAttempts: attempts } : {}),
    ...(env.AWS_RETRY_MODE ? { retryMode: env.AWS_RETRY_MODE } : {}),
  };
  return createAwsClientsFrom({
    s3: { region, forcePathStyle: env.S3_FORCE_PATH_STYLE === 'true', ...retry },
    sqs: { region, ...retry },
    dynamodb: { region, ...retry },
  });
}
