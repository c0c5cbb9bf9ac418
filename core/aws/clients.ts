/**
 * AWS SDK v3 clients, configured once. Endpoints come from the SDK's own
 * `AWS_ENDPOINT_URL_<SERVICE>` variables, so the same code reaches AWS or the local
 * emulators; `S3_FORCE_PATH_STYLE=true` is needed for the local S3 endpoint.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';

export interface AwsClients {
  readonly s3: S3Client;
  readonly sqs: SQSClient;
  readonly ddb: DynamoDBDocumentClient;
}

export function createAwsClients(env: Record<string, string | undefined> = process.env): AwsClients {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? 'us-east-1';
  const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ region }), {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  return {
    s3: new S3Client({ region, forcePathStyle: env.S3_FORCE_PATH_STYLE === 'true' }),
    sqs: new SQSClient({ region }),
    ddb,
  };
}
