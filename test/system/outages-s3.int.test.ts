/**
 * S3 reads and listings down for 65 s mid-stream (uploads still land), with every worker
 * killed during it (issue 19, item 3; the case itself is test/support/outage-case.ts):
 * every frame gets one record and nothing reaches a DLQ, at the default leases, visibility
 * and receive counts.
 */
import { outageCase } from '../support/outage-case.ts';

outageCase('s3', 'S3 reads and listings answering 503 for 65 s mid-stream, workers killed during it');
