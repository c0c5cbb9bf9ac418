/** Names of the stack's resources, the same in AWS and on the local stack (the CDK stack, local/stack.ts). */

/** Physical names of every resource, derived from one prefix (the stack name). */
export interface ResourceNames {
  readonly prefix: string;
  readonly leasesTable: string;
  readonly resultsTable: string;
  /** The analytics outbox (issue 22): one item per rule/life event, written in the fenced commit; its stream feeds the event bus. */
  readonly eventsTable: string;
  /** The EventBridge bus the events table's stream is piped to (AWS), or the local queue standing in for it. */
  readonly eventBus: string;
  readonly ingestQueue: string;
  /** Where the router parks events it rejects (malformed keys, unknown events), with the reason attached. */
  readonly ingestDlq: string;
  /** The FIFO queue of one slot: `${prefix}-slot-${slot}.fifo`. */
  readonly slotQueue: (slot: number) => string;
  /** The dead-letter queue of one slot's FIFO queue. */
  readonly slotDlq: (slot: number) => string;
  /** Prefix of every slot queue name: `${slotQueuePrefix}${slot}.fifo`. */
  readonly slotQueuePrefix: string;
  /** GSI on the leases table listing the videos pinned to a slot. */
  readonly pinnedSlotIndex: string;
  /** CloudWatch metrics namespace. */
  readonly metricsNamespace: string;
}

export function resourceNames(prefix = 'FrameAffinity'): ResourceNames {
  const p = prefix;
  return {
    prefix: p,
    leasesTable: `${p}-leases`,
    resultsTable: `${p}-results`,
    eventsTable: `${p}-events`,
    eventBus: `${p}-events`,
    ingestQueue: `${p}-ingest`,
    ingestDlq: `${p}-ingest-dlq`,
    slotQueuePrefix: `${p}-slot-`,
    slotQueue: (slot) => `${p}-slot-${slot}.fifo`,
    slotDlq: (slot) => `${p}-slot-${slot}-dlq.fifo`,
    pinnedSlotIndex: 'byPinnedSlot',
    metricsNamespace: 'FrameAffinity',
  };
}
