/**
 * The lease port's contract (contract.ts) on DynamoDB Local, through the production
 * adapter: the same cases as the twin's run, so any difference between the twin and the
 * emulator shows up here. Where DynamoDB Local departs from DynamoDB (two operations on one
 * item in a transaction), the case asserts what Local does and says so.
 */
import { afterAll, beforeAll, describe } from 'vitest';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { resourceNames } from '../../../core/config.ts';
import { LEASES_TABLE, RESULTS_TABLE } from '../../../core/resources.ts';
import { createTableInput } from '../../../local/resources.ts';
import { dynamoDbForFile, type FileDynamoDb } from '../../../harness/shared-dynamodb.ts';
import { leaseContract, type LeaseContractBackend } from './contract.ts';

let dynamo: FileDynamoDb | undefined;
let client: DynamoDBClient | undefined;
let backend: LeaseContractBackend;

beforeAll(async () => {
  const region = 'us-east-1';
  dynamo = await dynamoDbForFile(region);
  client = new DynamoDBClient({ region, endpoint: dynamo.endpoint, credentials: { ...dynamo.credentials } });
  const names = resourceNames(`LC${process.pid}`);
  await client.send(new CreateTableCommand(createTableInput(names.leasesTable, LEASES_TABLE)));
  await client.send(new CreateTableCommand(createTableInput(names.resultsTable, RESULTS_TABLE)));
  // The production document client's translation (core/aws/clients.ts).
  const ddb = DynamoDBDocumentClient.from(client, { marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false } });
  backend = { kind: 'dynamodb-local', ddb, leasesTable: names.leasesTable, resultsTable: names.resultsTable, pinnedSlotIndex: names.pinnedSlotIndex };
});

afterAll(async () => {
  client?.destroy();
  await dynamo?.stop();
});

describe('the lease contract on DynamoDB Local', () => {
  leaseContract(() => backend);
});
