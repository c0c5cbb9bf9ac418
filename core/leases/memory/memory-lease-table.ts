/**
 * The lease table's in-memory twin, ready to use: a {@link MemoryDynamoDb} holding the
 * leases, results and events tables in the shapes the stack creates (core/resources.ts),
 * and the production lease adapter over it. Why the adapter and not a second
 * implementation of the port: see memory-dynamodb.ts (one protocol, two backends).
 *
 *   const twin = new MemoryLeaseTable({ now: clock.now });
 *   const leases: LeaseTable = twin.leases();            // a LeaseStore on the twin
 *   await leases.claimSlot(0, 'w1', clock.now(), 15_000);
 */
import { resourceNames } from '../../config.ts';
import { EVENTS_TABLE, LEASES_TABLE, RESULTS_TABLE } from '../../resources.ts';
import { LeaseStore } from '../dynamodb/lease-store.ts';
import { MemoryDynamoDb } from './memory-dynamodb.ts';

/** The table names and index of one twin (a subset of the deployment's wiring). */
export interface MemoryLeaseWiring {
  readonly leasesTable: string;
  readonly resultsTable: string;
  readonly eventsTable: string;
  readonly pinnedSlotIndex: string;
}

export class MemoryLeaseTable {
  readonly db: MemoryDynamoDb;
  readonly wiring: MemoryLeaseWiring;
  /**
   * Writes that broke an invariant of the lease protocol, as they happened: a video's
   * token or a slot's epoch that went down (guarantee 3: they only grow). DynamoDB would
   * accept such a write; the twin records it so that every test on it checks the adapter.
   */
  readonly violations: string[] = [];

  /**
   * @param options.prefix resource-name prefix (tables are `${prefix}-leases` etc.) @default 'FrameAffinity'
   * @param options.now the twin's clock, for TTL sweeps (epoch ms) @default Date.now
   */
  constructor(options: { readonly prefix?: string; readonly now?: () => number } = {}) {
    const names = resourceNames(options.prefix);
    this.wiring = { leasesTable: names.leasesTable, resultsTable: names.resultsTable, eventsTable: names.eventsTable, pinnedSlotIndex: names.pinnedSlotIndex };
    this.db = new MemoryDynamoDb(options.now ? { now: options.now } : {});
    this.db.createTable(names.leasesTable, LEASES_TABLE).createTable(names.resultsTable, RESULTS_TABLE).createTable(names.eventsTable, EVENTS_TABLE);
    this.db.writeObservers.push((tableName, before, after) => {
      if (tableName !== names.leasesTable || !before) return;
      for (const counter of ['token', 'epoch'] as const) {
        const was = before[counter];
        const now = after?.[counter];
        // A deleted item (TTL's collection) or one without the counter has not gone down.
        if (typeof was === 'number' && typeof now === 'number' && now < was) this.violations.push(`${String(before.pk)}: ${counter} went from ${was} to ${now}`);
        if (typeof was === 'number' && after && now === undefined) this.violations.push(`${String(before.pk)}: ${counter} ${was} was removed`);
      }
    });
  }

  /** The document client of the twin (what adapters and readers take as `ddb`). */
  get ddb() {
    return this.db.asDocumentClient();
  }

  /**
   * A lease store on the twin.
   * @param options.firstFrameNumber where a new video starts (-1 = automatic) @default -1
   * @param options.withEvents write the events outbox in commits and adoptions @default false
   */
  leases(options: { readonly firstFrameNumber?: number; readonly withEvents?: boolean } = {}): LeaseStore {
    return new LeaseStore(this.ddb, {
      tableName: this.wiring.leasesTable,
      resultsTableName: this.wiring.resultsTable,
      pinnedSlotIndex: this.wiring.pinnedSlotIndex,
      firstFrameNumber: options.firstFrameNumber ?? -1,
      ...(options.withEvents ? { eventsTableName: this.wiring.eventsTable } : {}),
    });
  }
}
