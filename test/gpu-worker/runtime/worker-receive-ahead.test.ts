/** Receive ahead (worker-receive-ahead.cases.ts) on the SQS FIFO model, the lease table's twin and the S3 twin, on a fake clock. */
import { receiveAheadCases } from './worker-receive-ahead.cases.ts';

receiveAheadCases('SQS FIFO model, twins', { backend: 'memory', clock: 'fake' });
