/**
 * The kill -9 and SIGSTOP run of worker-kill-pause.int.test.ts (test/support/kill-pause-case.ts)
 * with the simulated GPU detecting frames read ahead (decision 42): every frame one `ok`
 * record, with the very track IDs an in-order run of the real ByteTrack gives, across both
 * handovers.
 */
import { killPauseCase } from '../../support/kill-pause-case.ts';

killPauseCase('simgpu', 'every frame one ok record with the track IDs of an in-order run, with detect ahead on, across a kill and a pause');
