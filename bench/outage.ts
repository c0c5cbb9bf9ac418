/**
 * The outage timeline for issue 19's closing note: runs test/system/outages-*.int.test.ts
 * (DynamoDB, SQS and S3, each down for 65 s mid-stream on a local stack of its own, the
 * three side by side; every process behind the outage proxies, default leases / visibility
 * / receive counts, every live worker killed with SIGKILL 3 s in) and prints, per service,
 * when the outage started and ended, when the workers were killed, when the last record
 * was committed, the highest receive count any slot or ingest message reached, and the
 * messages in any DLQ (must be 0). Times are seconds after the outage started. Writes
 * bench/results/outage.json.
 *
 * The figures come from the test itself (it appends one JSON line per case to
 * OUTAGE_TIMELINE_FILE), so the bench and the test can never measure different things.
 *
 *   npx node bench/outage.ts
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { benchMain, commandLine, freshStateDir, machine, REPO_ROOT, RESULTS_DIR, writeResult } from './harness/main.ts';

/** The three cases (DynamoDB, SQS, S3), one file each; vitest's defaults lane runs them side by side. */
const TEST_FILE = 'test/system/outages-';

/** One case's timeline as the test writes it (ms after the outage started). */
interface CaseTimeline {
  readonly service: string;
  readonly outageStartIso: string;
  readonly outageEndMs: number;
  readonly killedAtMs: number;
  readonly killedWorkers: number;
  readonly lastRecordAtMs: number;
  readonly framesUploaded: number;
  readonly framesUploadedDuringOutage: number;
  readonly requestsRefused: number;
  readonly maxReceiveCount: { readonly slot: number; readonly ingest: number };
  readonly dlqMessages: { readonly ingest: number; readonly slots: number };
}

const seconds = (ms: number) => Number((ms / 1000).toFixed(1));

await benchMain('outage', async (bench) => {
  const file = join(freshStateDir('outage'), 'timeline.jsonl');
  rmSync(file, { force: true });
  bench.say(`running ${TEST_FILE}*.int.test.ts (about 2 minutes)`);
  const run = spawnSync('npx', ['vitest', 'run', TEST_FILE], {
    cwd: REPO_ROOT,
    env: { ...process.env, OUTAGE_TIMELINE_FILE: file },
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  const cases: CaseTimeline[] = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as CaseTimeline)
    : [];
  const summary = (run.stdout ?? '').split('\n').filter((l) => /Tests\s|Test Files|FAIL|AssertionError/.test(l));
  for (const l of summary) bench.say(l.replace(/\u001b\[[0-9;]*m/g, ''));
  bench.say('');
  bench.say('service   | outage start (UTC)       | end s | kill -9 s (workers) | last record s | frames (in outage) | max receives slot/ingest | DLQ ingest/slot');
  for (const c of cases) {
    bench.say(
      `${c.service.padEnd(9)} | ${c.outageStartIso} | ${String(seconds(c.outageEndMs)).padStart(5)} | ${`${seconds(c.killedAtMs)} (${c.killedWorkers})`.padStart(19)} | ${String(seconds(c.lastRecordAtMs)).padStart(13)} | ${`${c.framesUploaded} (${c.framesUploadedDuringOutage})`.padStart(18)} | ${`${c.maxReceiveCount.slot}/${c.maxReceiveCount.ingest}`.padStart(24)} | ${c.dlqMessages.ingest}/${c.dlqMessages.slots}`,
    );
  }
  const dlqFrames = cases.reduce((n, c) => n + c.dlqMessages.ingest + c.dlqMessages.slots, 0);
  const passed = run.status === 0 && cases.length === 3 && dlqFrames === 0;
  writeResult(join(RESULTS_DIR, 'outage.json'), {
    command: commandLine('outage.ts'),
    test: TEST_FILE,
    machine: machine(),
    passed,
    testExitCode: run.status,
    units: 'seconds after the outage started',
    cases: cases.map((c) => ({
      service: c.service,
      outageStart: c.outageStartIso,
      outageEndS: seconds(c.outageEndMs),
      killS: seconds(c.killedAtMs),
      workersKilled: c.killedWorkers,
      lastRecordS: seconds(c.lastRecordAtMs),
      framesUploaded: c.framesUploaded,
      framesUploadedDuringOutage: c.framesUploadedDuringOutage,
      requestsRefused: c.requestsRefused,
      maxReceiveCount: c.maxReceiveCount,
      dlqMessages: c.dlqMessages,
    })),
    framesInAnyDlq: dlqFrames,
  }, bench.say);
  return passed ? 0 : 1;
});
