/**
 * The local stack's shapes: its options, the running stack, the stack.json other processes
 * read, and the client configuration for it (local/stack.ts starts it). stack.json's shape
 * and `clientConfig` live in core/stack-file.ts, so that the CLI reads them without
 * loading local/.
 */
import type { Tunables, Wiring } from '../core/config.ts';
import type { AwsClients } from '../core/aws/clients.ts';
import type { LocalCredentials } from '../core/stack-file.ts';
import type { PortRequest } from './emulators.ts';
import type { ScheduledHandler, SqsEventSource, SqsHandler } from './event-source.ts';
import type { ScheduledInvoker } from './eventbridge-invokers.ts';
import type { LocalEndpoints, LocalTaskLauncher } from './local-task-launcher.ts';
import type { LocalResources } from './resources.ts';
import type { NotificationFaultFn, S3Notifier } from './s3-notifications.ts';
import type { EventRelay } from './event-relay.ts';

export { clientConfig, type LocalCredentials, type StackFile } from '../core/stack-file.ts';

export interface LocalStackOptions {
  /** Resource name prefix (the stack name in AWS). @default 'FrameAffinity' */
  readonly prefix?: string;
  /** @default 'us-east-1' */
  readonly region?: string;
  /** Overrides of {@link DEFAULT_TUNABLES}; validated. */
  readonly tunables?: Partial<Tunables>;
  /**
   * Router Lambda handler. Default: `handler` of functions/router/handler.ts.
   * `false` runs no router (nothing consumes the ingest queue).
   */
  readonly routerHandler?: SqsHandler | false;
  /** Janitor handler. Default: `handler` of functions/janitor/handler.ts; `false` runs none. */
  readonly janitorHandler?: ScheduledHandler | false;
  /** Janitor period. @default 5000 (locally faster than tunables.janitorIntervalSeconds) */
  readonly janitorIntervalMs?: number;
  /** Concurrent router invocations, capped by the event source's maximum concurrency (routerMaxConcurrencyOf). @default 2 */
  readonly routerConcurrency?: number;
  /** Long-poll wait of the router's event source. @default 20 (seconds, as Lambda) */
  readonly routerWaitTimeSeconds?: number;
  /** Worker entry module relative to cwd. @default 'lab/worker-main.ts' (gpu-worker/main.ts with the lab added) */
  readonly workerEntry?: string;
  /** Extra environment for workers. */
  readonly workerEnv?: Record<string, string>;
  /** Where stack.json and logs/ go. @default '.local' */
  readonly stateDir?: string;
  /** Ports; absent or 0 = any free port; `{ preferred }` falls back to a free one when busy. */
  readonly ports?: { readonly s3sqs?: PortRequest; readonly dynamodb?: PortRequest };
  /** Silence worker and emulator output on stdout. */
  readonly quiet?: boolean;
  /** How a worker line (without its `[slot-N pid]` prefix) reaches stdout, undefined = not at all; wins over `quiet` for them (npm start: local/echo-filter.ts). */
  readonly echoWorkerLine?: (line: string) => string | undefined;
  /** Receives the stack's own log lines (default: console.log unless quiet). */
  readonly log?: (line: string) => void;
  /** Receives every worker output line (prefixed `[slot-N pid]`). */
  readonly onWorkerLine?: (line: string) => void;
  /** Grace period for workers between SIGTERM and SIGKILL on stop. @default 10000 */
  readonly workerStopGraceMs?: number;
  /**
   * Per-key fault injection for the emulated S3 notifications: drop, duplicate or delay
   * the event of an object (see {@link NotificationFault}); also settable later with
   * `stack.notifier.setNotificationFault`. Counters: `stack.notifier.counts`.
   * @default every notification delivered once
   */
  readonly notificationFault?: NotificationFaultFn;
  /**
   * Puts something (the outage proxies of test/support/outage-proxy.ts) between the
   * emulators and every client of the stack: the router, the janitor, the workers and
   * `clients` all use the endpoints it returns. Only the emulated S3 notifications are
   * delivered straight to fauxqs, as S3 delivers (and retries) them on its own side.
   * @default the emulators' own endpoints
   */
  readonly wrapEndpoints?: (direct: LocalEndpoints) => Promise<LocalEndpoints>;
  /**
   * Run the event relay (local/event-relay.ts): the events table's stream to the local
   * queue standing in for the bus (named resourceNames().eventBus), as the pipe does in AWS.
   * @default true
   */
  readonly eventRelay?: boolean;
  /**
   * A DynamoDB Local already running, used instead of starting one: the stack neither
   * starts nor stops it (the integration tests share one, started without `-sharedDb`, with
   * one access key per stack: harness/shared-dynamodb.ts). `ports.dynamodb` is then
   * ignored. @default a DynamoDB Local of the stack's own
   */
  readonly dynamodb?: { readonly endpoint: string; readonly pid: number };
  /** Credentials of every client of the stack, the workers' included. @default LOCAL_CREDENTIALS */
  readonly credentials?: LocalCredentials;
}

export interface LocalStack {
  readonly region: string;
  readonly prefix: string;
  readonly wiring: Wiring;
  readonly tunables: Tunables;
  readonly endpoints: LocalEndpoints;
  readonly credentials: LocalCredentials;
  readonly resources: LocalResources;
  readonly clients: AwsClients;
  readonly launcher: LocalTaskLauncher;
  readonly notifier: S3Notifier;
  /** Null when the stack runs no router. */
  readonly router: SqsEventSource | null;
  /** Null when the stack runs no janitor. */
  readonly janitor: ScheduledInvoker | null;
  /** The events stream relay; null when disabled (`eventRelay: false`). */
  readonly eventRelay: EventRelay | null;
  /** URL of the queue standing in for the event bus (it exists even when the relay does not run). */
  readonly eventBusQueueUrl: string;
  /** Path of the written stack.json. */
  readonly stackFile: string;
  /** Pid of the DynamoDB Local (Java) process. */
  readonly dynamodbPid: number;
  /** Environment that points SDK clients and the AWS CLI at this stack (also set on process.env). */
  readonly env: Record<string, string>;
  /** Ports that were busy and replaced by free ones. */
  readonly portFallbacks: readonly string[];
  /** Stops everything; idempotent. */
  stop(): Promise<void>;
}
