/**
 * The local stack's stack.json (written by local/stack.ts, read by the operator CLI and
 * other processes), and the one way to build clients for its emulators. Pure, and apart
 * from local/ (the emulators, the demo model): the CLI reads it without loading the local
 * stack (test/infra/no-lab-in-product.test.ts), as it reads a deployed stack's outputs
 * through core/stack-outputs.ts.
 */
import type { Tunables, Wiring } from './config.ts';
import type { AwsClientConfig } from './aws/clients.ts';

/** Where the local stack's emulators listen. */
export interface LocalEndpoints {
  readonly s3: string;
  readonly sqs: string;
  readonly dynamodb: string;
}

export interface LocalCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** The JSON written to `<stateDir>/stack.json` for the CLI and other processes. */
export interface StackFile {
  readonly region: string;
  readonly prefix: string;
  readonly endpoints: LocalEndpoints;
  readonly credentials: LocalCredentials;
  readonly bucket: string;
  readonly tables: { readonly results: string; readonly leases: string; readonly events: string };
  readonly queues: {
    /** The queue standing in for the event bus. */
    readonly eventBus: string;
    readonly ingest: string;
    readonly ingestDlq: string;
    readonly slots: readonly string[];
    readonly slotDlqs: readonly string[];
  };
  readonly wiring: Wiring;
  readonly tunables: Tunables;
  readonly pids: { readonly stack: number; readonly dynamodb: number; readonly workers: readonly { slot: number; pid: number; workerId: string }[] };
  readonly startedAt: string;
}

/** SDK v3 client configuration for each service of a local stack (the one way to build clients for it). */
export function clientConfig(stack: { readonly endpoints: LocalEndpoints; readonly region: string; readonly credentials: LocalCredentials }): AwsClientConfig {
  const common = { region: stack.region, credentials: { ...stack.credentials } };
  return {
    // fauxqs serves path-style only: `bucket.127.0.0.1` is no host name.
    s3: { ...common, endpoint: stack.endpoints.s3, forcePathStyle: true },
    sqs: { ...common, endpoint: stack.endpoints.sqs },
    dynamodb: { ...common, endpoint: stack.endpoints.dynamodb },
  };
}
