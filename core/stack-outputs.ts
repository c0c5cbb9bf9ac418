/** CloudFormation output keys of the deployed stack; the operator CLI finds resources through them. */
export const STACK_OUTPUTS = {
  bucket: 'FrameBucketName',
  leasesTable: 'LeasesTableName',
  resultsTable: 'ResultsTableName',
  ingestQueueUrl: 'IngestQueueUrl',
  ingestDlqUrl: 'IngestDlqUrl',
  slotQueueUrlPrefix: 'SlotQueueUrlPrefix',
  slotCount: 'SlotCount',
} as const;
