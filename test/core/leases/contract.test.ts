/** The lease port's contract (contract.ts) on the in-memory twin: the production adapter over MemoryDynamoDb. */
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { MemoryLeaseTable } from '../../../core/leases/memory/memory-lease-table.ts';
import { leaseContract, type LeaseContractBackend } from './contract.ts';

let backend: LeaseContractBackend;
let twin: MemoryLeaseTable;

beforeAll(() => {
  twin = new MemoryLeaseTable();
  backend = { kind: 'memory', ddb: twin.ddb, leasesTable: twin.wiring.leasesTable, resultsTable: twin.wiring.resultsTable, pinnedSlotIndex: twin.wiring.pinnedSlotIndex };
});

// Whatever the cases did through the adapter, no token or epoch went down.
afterAll(() => {
  expect(twin.violations).toEqual([]);
});

describe('the lease contract on the in-memory twin', () => {
  leaseContract(() => backend);
});
