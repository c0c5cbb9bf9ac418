/** Receive ahead (worker-receive-ahead.cases.ts) on fauxqs (one message per group per receive), DynamoDB Local and fauxqs S3. */
import { receiveAheadCases } from './worker-receive-ahead.cases.ts';

receiveAheadCases('fauxqs', { backend: 'emulators', queueBackend: 'fauxqs' });
