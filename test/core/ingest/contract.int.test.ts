/**
 * The ingest port's contract (contract.ts) on fauxqs (SQS and S3), through the production
 * adapters, with the SQS limits the local stack adds to it (local/emulators.ts). Where fauxqs
 * departs from SQS, the case asserts what fauxqs does and says so.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { LOCAL_CREDENTIALS, localQueueUrl, startFauxqsEmulator, type FauxqsHandle } from '../../../local/emulators.ts';
import { CONTRACT_VISIBILITY_SECONDS, ingestContract, type IngestContractBackend } from './contract.ts';

let fauxqs: FauxqsHandle | undefined;
let sqs: SQSClient | undefined;
let s3: S3Client | undefined;
let backend: IngestContractBackend;

beforeAll(async () => {
  const region = 'us-east-1';
  fauxqs = await startFauxqsEmulator({ region });
  const common = { region, endpoint: fauxqs.endpoint, credentials: { ...LOCAL_CREDENTIALS } };
  sqs = new SQSClient(common);
  s3 = new S3Client({ ...common, forcePathStyle: true });
  const prefix = 'IC-slot-';
  const slots = 10;
  for (let slot = 0; slot < slots; slot++) {
    const dlq = await sqs.send(new CreateQueueCommand({ QueueName: `${prefix}${slot}-dlq.fifo`, Attributes: { FifoQueue: 'true' } }));
    const dlqArn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: dlq.QueueUrl, AttributeNames: ['QueueArn'] }))).Attributes?.QueueArn;
    await sqs.send(
      new CreateQueueCommand({
        QueueName: `${prefix}${slot}.fifo`,
        Attributes: { FifoQueue: 'true', VisibilityTimeout: String(CONTRACT_VISIBILITY_SECONDS), RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 5 }) },
      }),
    );
  }
  const bucket = 'ic-frames';
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  backend = { kind: 'fauxqs', sqs, s3, slotQueueUrlPrefix: localQueueUrl(fauxqs.endpoint, prefix), slots, bucket };
});

afterAll(async () => {
  sqs?.destroy();
  s3?.destroy();
  await fauxqs?.stop();
});

describe('the ingest contract on fauxqs', () => {
  ingestContract(() => backend);
});
