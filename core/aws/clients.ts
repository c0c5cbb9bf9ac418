/**
 * AWS SDK v3 clients, configured once. Endpoints come from the SDK's own
 * `AWS_ENDPOINT_URL_<SERVICE>` variables, so the same code reaches AWS or the local
 * emulators; `S3_FORCE_PATH_STYLE=true` is needed for the local S3 endpoint.
 *
 * `AWS_CALL_LOG=<file>` appends one line per API call (`role service operation`) to
 * that file; the API-calls-per-frame benchmark reads it. Retries are not counted.
 */
import { appendFileSync } from 'node:fs';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';

export interface AwsClients {
  readonly s3: S3Client;
  readonly sqs: SQSClient;
  readonly ddb: DynamoDBDocumentClient;
}

/** Which component makes the calls, for the call log. */
export type CallerRole = 'router' | 'worker' | 'janitor' | 'cli';

export function createAwsClients(env: Record<string, string | undefined> = process.env, role: CallerRole = 'worker'): AwsClients {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const dynamodb = new DynamoDBClient({ region });
  const s3 = new S3Client({ region, forcePathStyle: env.S3_FORCE_PATH_STYLE === 'true' });
  const sqs = new SQSClient({ region });
  const callLog = env.AWS_CALL_LOG;
  if (callLog) {
    const logCalls = (service: string): InitializeMiddleware<object, MetadataBearer> => (next, context) => async (args) => {
      appendFileSync(callLog, `${role}\t${service}\t${context.commandName}\n`);
      return next(args);
    };
    dynamodb.middlewareStack.add(logCalls('dynamodb'), { step: 'initialize', name: 'callLog' });
    s3.middlewareStack.add(logCalls('s3'), { step: 'initialize', name: 'callLog' });
    sqs.middlewareStack.add(logCalls('sqs'), { step: 'initialize', name: 'callLog' });
  }
  const ddb = DynamoDBDocumentClient.from(dynamodb, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return { s3, sqs, ddb };
}
