/**
 * Hostile timing on real SQS FIFO semantics at the default tunables (the worker harness on
 * the SQS FIFO model): a worker killed mid-stream, its successor paused past its lease,
 * uploads going on; every frame one `ok` record, through each video's state once and in
 * order. The case is test/support/kill-pause-case.ts (its header says what and why);
 * worker-kill-pause-simgpu.int.test.ts runs it with detections read ahead.
 */
import { killPauseCase } from '../../support/kill-pause-case.ts';

killPauseCase('stats', 'every frame one ok record, through each video state once and in order, across a kill and a pause');
