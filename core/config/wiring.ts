/**
 * Runtime wiring: where the resources are, as the router, janitor and worker read it
 * from their environment.
 */
import { resourceNames } from './resource-names.ts';
import { ConfigError } from './settings.ts';

/**
 * Runtime wiring shared by the router, janitor and worker: where the resources are.
 * In AWS the CDK stack sets these as environment variables; locally the local stack does.
 */
export interface Wiring {
  readonly region: string;
  readonly bucket: string;
  readonly leasesTable: string;
  readonly resultsTable: string;
  /** The analytics outbox table (core/analytics/event-schema.ts). */
  readonly eventsTable: string;
  readonly ingestQueueUrl: string;
  readonly ingestDlqUrl: string;
  /** Slot queue URL = `${slotQueueUrlPrefix}${slot}.fifo`. */
  readonly slotQueueUrlPrefix: string;
  readonly pinnedSlotIndex: string;
  readonly metricsNamespace: string;
}

export const WIRING_ENV = {
  region: 'AWS_REGION',
  bucket: 'FRAME_BUCKET',
  leasesTable: 'LEASES_TABLE',
  resultsTable: 'RESULTS_TABLE',
  eventsTable: 'EVENTS_TABLE',
  ingestQueueUrl: 'INGEST_QUEUE_URL',
  ingestDlqUrl: 'INGEST_DLQ_URL',
  slotQueueUrlPrefix: 'SLOT_QUEUE_URL_PREFIX',
  pinnedSlotIndex: 'PINNED_SLOT_INDEX',
  metricsNamespace: 'METRICS_NAMESPACE',
} as const satisfies Record<keyof Wiring, string>;

export function wiringFromEnv(env: Record<string, string | undefined> = process.env): Wiring {
  const missing: string[] = [];
  const read = (k: keyof Wiring, fallback?: string) => {
    const v = env[WIRING_ENV[k]] ?? fallback;
    if (v === undefined || v === '') missing.push(WIRING_ENV[k]);
    return v ?? '';
  };
  const names = resourceNames();
  const w: Wiring = {
    region: read('region', env.AWS_DEFAULT_REGION),
    bucket: read('bucket'),
    leasesTable: read('leasesTable'),
    resultsTable: read('resultsTable'),
    eventsTable: read('eventsTable'),
    ingestQueueUrl: read('ingestQueueUrl'),
    ingestDlqUrl: read('ingestDlqUrl'),
    slotQueueUrlPrefix: read('slotQueueUrlPrefix'),
    pinnedSlotIndex: read('pinnedSlotIndex', names.pinnedSlotIndex),
    metricsNamespace: read('metricsNamespace', names.metricsNamespace),
  };
  if (missing.length > 0) throw new ConfigError(`Missing environment: ${missing.join(', ')}`);
  return w;
}

export function wiringToEnv(w: Wiring): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of Object.keys(WIRING_ENV) as (keyof Wiring)[]) env[WIRING_ENV[k]] = w[k];
  return env;
}

export function slotQueueUrl(w: Pick<Wiring, 'slotQueueUrlPrefix'>, slot: number): string {
  return `${w.slotQueueUrlPrefix}${slot}.fifo`;
}
