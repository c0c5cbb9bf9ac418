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
} as const;
