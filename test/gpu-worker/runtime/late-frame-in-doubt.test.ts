/**
 * Issue 32's late frame in the in-doubt window (late-frame-in-doubt.cases.ts) on the lease
 * table's twin, the S3 twin and the SQS FIFO model, on a fake clock: the guarantee's test.
 * The window is arranged, not waited for, so every run exercises it (under a second).
 */
import { lateFrameInDoubtCases } from './late-frame-in-doubt.cases.ts';

lateFrameInDoubtCases('twins', { backend: 'memory', clock: 'fake' });
