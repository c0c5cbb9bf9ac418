/**
 * What every function builds from its environment, once per container: wiring,
 * tunables, clients (with the instrumentation the environment asks for:
 * core/aws/instrumentation.ts), the lease store and the slot queues.
 */
import { DEFAULT_TUNABLES, WIRING_ENV, envNameOf, tunablesFromEnv, wiringFromEnv, type Tunables, type Wiring } from '../../core/config.ts';
import { createAwsClients, type AwsClients, type CallerRole } from '../../core/aws/clients.ts';
import { instrumentAwsClients } from '../../core/aws/instrumentation.ts';
import { LeaseStore } from '../../core/leases/dynamodb/lease-store.ts';
import { SlotQueues } from '../../core/ingest/sqs/slot-queues.ts';

export interface FunctionContext {
  readonly wiring: Wiring;
  readonly tunables: Tunables;
  readonly clients: AwsClients;
  readonly leases: LeaseStore;
  readonly queues: SlotQueues;
}

export function functionContext(role: CallerRole): FunctionContext {
  const wiring = wiringFromEnv();
  const tunables = tunablesFromEnv();
  // The Lambda composition root: bench call log and chaos faults, when the environment asks for them.
  const clients = instrumentAwsClients(createAwsClients(process.env), process.env, role);
  return {
    wiring,
    tunables,
    clients,
    leases: LeaseStore.forWiring(clients.ddb, wiring, tunables),
    queues: new SlotQueues(clients.sqs, wiring.slotQueueUrlPrefix),
  };
}

/**
 * Builds a value once per container, as Lambda module scope does. The cache is keyed by
 * the environment (wiring, tunables, endpoints) because the local stack hosts several
 * stacks in turn in one process; in Lambda the key never changes.
 */
export function perEnvironment<T>(build: () => T): () => T {
  let cached: { key: string; value: T } | undefined;
  return () => {
    const key = environmentKey();
    if (cached?.key !== key) cached = { key, value: build() };
    return cached.value;
  };
}

function environmentKey(env: Record<string, string | undefined> = process.env): string {
  const names = [
    ...Object.values(WIRING_ENV),
    ...Object.keys(DEFAULT_TUNABLES).map((k) => envNameOf(k as keyof typeof DEFAULT_TUNABLES)),
    ...Object.keys(env).filter((k) => k.startsWith('AWS_ENDPOINT_URL')),
  ].sort();
  return names.map((k) => `${k}=${env[k] ?? ''}`).join(';');
}
