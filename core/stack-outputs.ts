/** CloudFormation output keys of the deployed stack; the operator CLI finds resources through them. */
export const STACK_OUTPUT_KEYS = {
  frameBucketName: 'FrameBucketName',
  leasesTableName: 'LeasesTableName',
  resultsTableName: 'ResultsTableName',
  ingestQueueUrl: 'IngestQueueUrl',
  ingestDlqUrl: 'IngestDlqUrl',
  /** Slot queue URL = prefix + N + '.fifo'; its DLQ = prefix + N + '-dlq.fifo'. */
  slotQueueUrlPrefix: 'SlotQueueUrlPrefix',
  slotCount: 'SlotCount',
  /** The analytics events outbox table (`affinity events`, `affinity counts`). */
  eventsTableName: 'EventsTableName',
  /** The EventBridge bus the outbox stream is piped to (issue 22). */
  eventBusName: 'EventBusName',
  eventBusArn: 'EventBusArn',
} as const;
