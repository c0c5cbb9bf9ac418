/**
 * AWS SDK v3 clients, built in one place. In the Lambdas and the worker, endpoints come
 * from the SDK's own `AWS_ENDPOINT_URL_<SERVICE>` variables, so the same code reaches
 * AWS or the local emulators; `S3_FORCE_PATH_STYLE=true` is needed for the local S3
 * endpoint. Tooling (local stack, CLI) passes explicit per-service configuration.
 *
 * `AWS_CALL_LOG=<file>` appends one line per API call (`role service operation`) to
 * that file; the API-calls-per-frame benchmark reads it. Retries are not counted.
 */
import { appendFileSync } from 'node:fs';
import { DynamoDBClient, type DynamoDBClientConfig } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { SQSClient, type SQSClientConfig } from '@aws-sdk/client-sqs';
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';

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

/** Which component makes the calls, for the call log. */
export type CallerRole = 'router' | 'worker' | 'janitor' | 'cli';

/** Builds the three clients from explicit configuration. */
export function createAwsClientsFrom(config: AwsClientConfig): AwsClients {
  const dynamodb = new DynamoDBClient(config.dynamodb);
  const s3 = new S3Client(config.s3);
  const sqs = new SQSClient(config.sqs);
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

/** Clients for the router, janitor and worker, configured by the environment. */
export function createAwsClients(env: Record<string, string | undefined> = process.env, role: CallerRole = 'worker'): AwsClients {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const clients = createAwsClientsFrom({ s3: { region, forcePathStyle: env.S3_FORCE_PATH_STYLE === 'true' }, sqs: { region }, dynamodb: { region } });
  const callLog = env.AWS_CALL_LOG;
  if (callLog) {
    const logCalls = (service: string): InitializeMiddleware<object, MetadataBearer> => (next, context) => async (args) => {
      appendFileSync(callLog, `${role}\t${service}\t${context.commandName}\n`);
      return next(args);
    };
    clients.dynamodb.middlewareStack.add(logCalls('dynamodb'), { step: 'initialize', name: 'callLog' });
    clients.s3.middlewareStack.add(logCalls('s3'), { step: 'initialize', name: 'callLog' });
    clients.sqs.middlewareStack.add(logCalls('sqs'), { step: 'initialize', name: 'callLog' });
  }
  return clients;
}
