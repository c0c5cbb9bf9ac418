/**
 * SQS down for 65 s mid-stream, with every worker killed during it (issue 19, item 3; the
 * case itself is test/support/outage-case.ts): every frame gets one record and nothing
 * reaches a DLQ, at the default leases, visibility and receive counts.
 */
import { outageCase } from '../support/outage-case.ts';

outageCase('sqs', 'SQS answering 503 to every request for 65 s mid-stream, workers killed during it');
