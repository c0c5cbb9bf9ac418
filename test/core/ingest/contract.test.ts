/** The ingest port's contract (contract.ts) on the twins: SlotQueues over the SQS FIFO model, FrameStore over MemoryS3. */
import { beforeAll, describe } from 'vitest';
import { SqsFifoModel } from '../../../core/ingest/memory/sqs-fifo-model.ts';
import { MemoryS3 } from '../../../core/ingest/memory/memory-s3.ts';
import { CONTRACT_VISIBILITY_SECONDS, ingestContract, type IngestContractBackend } from './contract.ts';

let backend: IngestContractBackend;

beforeAll(() => {
  const slotQueueUrlPrefix = 'https://sqs.us-east-1.amazonaws.com/000000000000/IC-slot-';
  const slots = 10;
  const model = new SqsFifoModel();
  model.createSlotQueues(slotQueueUrlPrefix, slots, { visibilityTimeoutSeconds: CONTRACT_VISIBILITY_SECONDS, maxReceiveCount: 5 });
  const bucket = 'ic-frames';
  backend = { kind: 'memory', sqs: model.asClient(), s3: new MemoryS3().createBucket(bucket).asClient(), slotQueueUrlPrefix, slots, bucket };
});

describe('the ingest contract on the twins', () => {
  ingestContract(() => backend);
});
