/**
 * One DynamoDB Local (one JVM) for a whole lane, instead of one per file: vitest.config.ts
 * names shared-dynamodb-setup.ts as the globalSetup of the integration and defaults lanes,
 * which starts it without `-sharedDb`, so that DynamoDB Local keeps one database per
 * access key and region. Each user ({@link sharedDynamoDb}: a stack, a worker harness, a
 * contract run) takes a fresh access key, so it sees its own, empty database: the same
 * table names, nothing shared with another file or another stack of the same file.
 *
 * Outside those lanes (the unit lane, a bench script) nothing is provided and
 * {@link sharedDynamoDb} returns undefined: callers then start their own. Tests that stop,
 * kill or inspect the DynamoDB Local process itself (test/local/emulators.int.test.ts,
 * test/local/stack.int.test.ts) keep their own.
 */
import { randomBytes } from 'node:crypto';
import { inject, type ProvidedContext } from 'vitest';
import type { LocalCredentials } from '../core/stack-file.ts';
import { LOCAL_CREDENTIALS, startDynamoDbLocal } from '../local/emulators.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared DynamoDB Local of the integration and defaults lanes (absent outside them). */
    sharedDynamoDb?: { readonly endpoint: string; readonly pid: number };
  }
}

/** A database of its own on the shared DynamoDB Local: its endpoint and pid, and the credentials that select the database. */
export interface SharedDynamoDb {
  readonly endpoint: string;
  readonly pid: number;
  readonly credentials: LocalCredentials;
}

/**
 * A fresh database on the lane's shared DynamoDB Local (a new access key: letters and
 * digits only, as DynamoDB Local requires), or undefined outside the lanes that share one.
 */
export function sharedDynamoDb(): SharedDynamoDb | undefined {
  let shared: ProvidedContext['sharedDynamoDb'];
  try {
    shared = inject('sharedDynamoDb');
  } catch {
    return undefined; // not under vitest (a bench script imports the test support)
  }
  if (!shared) return undefined;
  return { ...shared, credentials: { accessKeyId: `t${randomBytes(8).toString('hex')}`, secretAccessKey: 'local' } };
}

/**
 * The options that put a local stack on a fresh database of the shared DynamoDB Local
 * (see {@link sharedDynamoDb}), or none outside the lanes that share one (the stack then
 * starts its own). Its clients, workers and stack.json carry the database's credentials:
 * a test that builds clients of its own takes `stack.credentials`.
 */
export function sharedStackOptions(): { dynamodb?: { endpoint: string; pid: number }; credentials?: LocalCredentials } {
  const shared = sharedDynamoDb();
  return shared ? { dynamodb: { endpoint: shared.endpoint, pid: shared.pid }, credentials: shared.credentials } : {};
}

/** A database for one test file: its endpoint, the credentials that select it, and `stop`. */
export interface FileDynamoDb {
  readonly endpoint: string;
  readonly credentials: LocalCredentials;
  /** Stops the DynamoDB Local this file started (nothing on the shared one). */
  stop(): Promise<void>;
}

/** A fresh database on the shared DynamoDB Local, or outside the lanes that share one a DynamoDB Local of the file's own. */
export async function dynamoDbForFile(region = 'us-east-1'): Promise<FileDynamoDb> {
  const shared = sharedDynamoDb();
  if (shared) return { endpoint: shared.endpoint, credentials: shared.credentials, stop: async () => {} };
  const own = await startDynamoDbLocal({ region });
  return { endpoint: own.endpoint, credentials: { ...LOCAL_CREDENTIALS }, stop: () => own.stop() };
}
