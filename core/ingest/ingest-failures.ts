/**
 * Applies the ingest retry decision ({@link decideIngestRetry}) to the records a routing
 * pass could not route, through ports (no AWS client here): backs outage failures off by
 * changing their visibility, parks failures that ran out of receives in the ingest DLQ
 * with their reason, and says which records to report as batch item failures.
 *
 * Lambda's SQS event source leaves a failed record's visibility alone (it only deletes
 * the records that succeeded), so a visibility set here holds: the record comes back after
 * the backoff, not after the queue's visibility timeout. The local event source
 * (local/event-source.ts) does the same.
 */
import type { Tunables } from '../config.ts';
import { decideIngestRetry, type IngestRetryDecision } from './ingest-retry.ts';
import { METRIC_NAMES } from '../metric-names.ts';
import type { LogSink, MetricSink } from '../ports.ts';
import type { RecordOutcomes, RejectedEvent } from '../fleet/router.ts';
import type { SendOutcome, VisibilityChange } from './port.ts';

/** An ingest record as the event source delivered it. */
export interface IngestDelivery {
  readonly id: string;
  readonly body: string;
  readonly receiptHandle: string;
  /** `ApproximateReceiveCount`: 1 on the first delivery. */
  readonly receiveCount: number;
}

/** What {@link settleIngestFailures} needs. */
export interface IngestFailurePorts {
  readonly tunables: Pick<Tunables, 'ingestOutageBackoffBaseSeconds' | 'ingestOutageBackoffMaxSeconds' | 'ingestMaxReceiveCount'>;
  /** Changes the visibility of ingest records; returns how many changes failed. */
  readonly changeVisibility: (changes: readonly VisibilityChange[]) => Promise<{ failed: number; errors?: readonly string[] }>;
  /** Parks events in the ingest DLQ with their reason (as the router's rejects). */
  readonly deadLetter: (events: readonly RejectedEvent[]) => Promise<(boolean | SendOutcome)[]>;
  readonly metrics: MetricSink;
  readonly log: LogSink;
}

/** One failed record and what was decided for it. */
export interface SettledFailure {
  readonly id: string;
  readonly decision: IngestRetryDecision;
  /** True when the record must be reported as a batch item failure (it stays in the queue). */
  readonly reportFailed: boolean;
}

/**
 * Decides and applies, for every record whose outcome is an error. Returns the ids to
 * report as batch item failures (records dead-lettered here are acknowledged instead,
 * unless the dead-letter send failed) and the per-record decisions.
 */
export async function settleIngestFailures(
  deliveries: readonly IngestDelivery[],
  outcomes: RecordOutcomes,
  ports: IngestFailurePorts,
): Promise<{ failedIds: Set<string>; settled: SettledFailure[] }> {
  const failedIds = new Set<string>();
  const backoffs: { delivery: IngestDelivery; seconds: number; error: Error }[] = [];
  const parks: { delivery: IngestDelivery; reason: string; error: Error }[] = [];
  const decisions = new Map<string, IngestRetryDecision>();
  for (const d of deliveries) {
    const error = outcomes.get(d.id);
    if (!error) continue;
    const decision = decideIngestRetry(error, d.receiveCount, ports.tunables);
    decisions.set(d.id, decision);
    if (decision.action === 'backoff') {
      failedIds.add(d.id);
      backoffs.push({ delivery: d, seconds: decision.visibilitySeconds, error });
    } else if (decision.action === 'retry') {
      failedIds.add(d.id);
      ports.log.warn('ingest record failed; retried at the queue visibility timeout', { messageId: d.id, receiveCount: d.receiveCount, error: describe(error) });
    } else {
      parks.push({ delivery: d, reason: decision.reason, error });
    }
  }

  if (backoffs.length > 0) {
    ports.metrics.count(METRIC_NAMES.router.outageBackoffs, backoffs.length);
    const r = await ports.changeVisibility(backoffs.map((b) => ({ receiptHandle: b.delivery.receiptHandle, visibilitySeconds: b.seconds })));
    const longest = Math.max(...backoffs.map((b) => b.seconds));
    ports.log.warn('outage: ingest records backed off instead of retried', {
      records: backoffs.length,
      receiveCounts: [...new Set(backoffs.map((b) => b.delivery.receiveCount))],
      backoffSeconds: longest,
      error: describe(backoffs[0]!.error),
      visibilityChangesFailed: r.failed,
      ...(r.errors && r.errors.length > 0 ? { visibilityErrors: r.errors.slice(0, 3) } : {}),
    });
  }

  if (parks.length > 0) {
    const sent = await ports.deadLetter(parks.map((p) => ({ body: p.delivery.body, reason: p.reason, detail: `after ${p.delivery.receiveCount} receives: ${describe(p.error)}` })));
    parks.forEach((p, i) => {
      const o = sent[i];
      const ok = typeof o === 'boolean' ? o : (o?.ok ?? false);
      if (ok) {
        ports.metrics.count(METRIC_NAMES.router.eventsRejected, 1, { Reason: p.reason });
        ports.log.error('ingest record dead-lettered', { messageId: p.delivery.id, reason: p.reason, receiveCount: p.delivery.receiveCount, error: describe(p.error) });
      } else {
        // Left to SQS's own redrive on a later receive.
        failedIds.add(p.delivery.id);
        ports.log.error('could not dead-letter an ingest record; it stays in the queue', { messageId: p.delivery.id, reason: p.reason });
      }
    });
  }

  const settled = [...decisions].map(([id, decision]) => ({ id, decision, reportFailed: failedIds.has(id) }));
  return { failedIds, settled };
}

function describe(e: Error): string {
  const cause = (e as { cause?: unknown }).cause;
  const causeName = cause && typeof cause === 'object' && 'name' in cause ? String((cause as { name: unknown }).name) : '';
  return `${e.name}: ${e.message}${causeName && causeName !== e.name ? ` (${causeName})` : ''}`.slice(0, 500);
}
