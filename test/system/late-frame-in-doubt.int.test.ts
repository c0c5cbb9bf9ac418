/**
 * Issue 32's late frame in the in-doubt window (test/gpu-worker/runtime/late-frame-in-doubt.cases.ts)
 * on DynamoDB Local (with DynamoDB's two-operations rule, harness/dynamodb-rules.ts), fauxqs's
 * S3 and the SQS FIFO model, on real time: the same arranged steps as the twins' run
 * (late-frame-in-doubt.test.ts, the guarantee's test), against the store's emulator. The
 * window is hit on every run: no tries, no skip (this file used to wait for the window behind
 * a 400-frame backlog, missed it often, and skipped after 3 tries).
 */
import { lateFrameInDoubtCases } from '../gpu-worker/runtime/late-frame-in-doubt.cases.ts';

lateFrameInDoubtCases('DynamoDB Local', { backend: 'emulators' });
