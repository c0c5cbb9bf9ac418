/**
 * The globalSetup of the integration and defaults lanes (vitest.config.ts): starts the one
 * DynamoDB Local a lane's files share, without `-sharedDb` (one database per access key: see
 * shared-dynamodb.ts, which hands each user a fresh key), and stops it after the run.
 */
import type { TestProject } from 'vitest/node';
import { startDynamoDbLocal } from '../../local/emulators.ts';
// Types only: the runtime module imports vitest's `inject`, which a globalSetup may not.
import type { SharedDynamoDb } from '../../harness/shared-dynamodb.ts';

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dynamo = await startDynamoDbLocal({ region: 'us-east-1', sharedDb: false });
  const shared: Omit<SharedDynamoDb, 'credentials'> = { endpoint: dynamo.endpoint, pid: dynamo.pid };
  project.provide('sharedDynamoDb', shared);
  const onExit = () => dynamo.killNow();
  process.once('exit', onExit);
  return async () => {
    process.off('exit', onExit);
    await dynamo.stop();
  };
}
