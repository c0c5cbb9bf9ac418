/**
 * Builds {@link OperatorPorts} from SDK-shaped clients: the production clients (the CLI),
 * or the in-memory twins' (core/leases/memory, core/ingest/memory), which answer the same
 * commands. A composition root for the operator operations; it names no SDK type itself.
 */
import { randomUUID } from 'node:crypto';
import { LeaseStore } from '../../leases/dynamodb/lease-store.ts';
import { DynamoDbResultsAdmin } from '../dynamodb/results-admin.ts';
import { S3VideoObjects } from '../../ingest/s3/video-objects.ts';
import { SqsUploadResender } from '../../ingest/sqs/upload-resender.ts';
import type { OperatorPorts } from './ports.ts';

/** Where the resources are (a subset of {@link import('../../config/wiring.ts').Wiring}). */
export interface OperatorWiring {
  readonly region: string;
  readonly bucket: string;
  readonly leasesTable: string;
  readonly resultsTable: string;
  readonly eventsTable: string;
  readonly pinnedSlotIndex: string;
  readonly ingestQueueUrl: string;
}

/** The SDK clients (DynamoDB document client, S3, SQS), typed through the adapters that take them: no SDK import here (test/core/purity.test.ts). */
export interface OperatorClients {
  readonly ddb: Parameters<typeof LeaseStore.forWiring>[0];
  readonly s3: ConstructorParameters<typeof S3VideoObjects>[0];
  readonly sqs: ConstructorParameters<typeof SqsUploadResender>[0];
}

export function operatorPorts(
  clients: OperatorClients,
  wiring: OperatorWiring,
  tunables: { readonly firstFrameNumber: number },
  options: { readonly where?: string; readonly now?: () => number; readonly newTag?: (prefix: string) => string } = {},
): OperatorPorts {
  const now = options.now ?? (() => Date.now());
  return {
    leases: LeaseStore.forWiring(clients.ddb, wiring, tunables),
    results: new DynamoDbResultsAdmin({ ddb: clients.ddb, resultsTable: wiring.resultsTable, eventsTable: wiring.eventsTable }),
    objects: new S3VideoObjects(clients.s3, wiring.bucket),
    ingest: new SqsUploadResender(clients.sqs, { ingestQueueUrl: wiring.ingestQueueUrl, region: wiring.region, bucket: wiring.bucket, now }),
    now,
    newTag: options.newTag ?? ((prefix) => `${prefix}-${now().toString(36)}-${randomUUID().slice(0, 8)}`),
    where: options.where ?? `the table ${wiring.leasesTable}`,
    bucket: wiring.bucket,
  };
}
