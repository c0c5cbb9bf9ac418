import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_TUNABLES, type Wiring } from '../../core/config.ts';
import { LocalTaskLauncher } from '../../local/local-task-launcher.ts';
import { isProcessAlive, processState, waitFor } from './helpers.ts';

const ENTRY = 'test/local/fixtures/fake-worker.ts';

const wiring: Wiring = {
  region: 'eu-west-1',
  bucket: 'test-frames',
  leasesTable: 'T-leases',
  resultsTable: 'T-results',
  eventsTable: 'T-events',
  ingestQueueUrl: 'http://127.0.0.1:1/000000000000/T-ingest',
  ingestDlqUrl: 'http://127.0.0.1:1/000000000000/T-ingest-dlq',
  slotQueueUrlPrefix: 'http://127.0.0.1:1/000000000000/T-slot-',
  pinnedSlotIndex: 'byPinnedSlot',
  metricsNamespace: 'FrameAffinity',
};

function newLauncher(lines: string[], env?: Record<string, string>) {
  const logDir = mkdtempSync(join(tmpdir(), 'launcher-logs-'));
  const launcher = new LocalTaskLauncher({
    wiring,
    tunables: { ...DEFAULT_TUNABLES, slotLeaseTtlSeconds: 9, heartbeatIntervalSeconds: 3 },
    endpoints: { s3: 'http://127.0.0.1:4566', sqs: 'http://127.0.0.1:4566', dynamodb: 'http://127.0.0.1:8000' },
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    entry: ENTRY,
    quiet: true,
    logDir,
    env,
    onLine: (line) => lines.push(line),
  });
  return { launcher, logDir };
}

function envReport(lines: string[], pid: number): Record<string, string> | undefined {
  const line = lines.find((l) => l.startsWith(`[slot-`) && l.includes(` ${pid}] ENV `));
  return line ? JSON.parse(line.slice(line.indexOf('ENV ') + 4)) : undefined;
}

let launchers: LocalTaskLauncher[] = [];
afterEach(async () => {
  await Promise.all(launchers.map((l) => l.stopAll(2_000)));
  launchers = [];
});

describe('LocalTaskLauncher', () => {
  it('spawns a worker with the wiring, tunables and endpoint environment, and prefixes its output', async () => {
    // Prepare
    const lines: string[] = [];
    const { launcher, logDir } = newLauncher(lines);
    launchers.push(launcher);

    // Act
    const result = await launcher.launch({ slot: 2, launchSeq: 1, reason: 'test' });

    // Assess
    expect(result.launched).toBe(true);
    const pid = Number(result.taskId);
    const env = await waitFor('worker env report', () => envReport(lines, pid));
    const [worker] = launcher.workers();
    expect(worker).toMatchObject({ slot: 2, pid, alive: true, launchSeq: 1 });
    expect(env).toEqual({
      SLOT_ID: '2',
      WORKER_ID: worker!.workerId,
      LAUNCH_SEQ: '1',
      FRAME_BUCKET: 'test-frames',
      SLOT_QUEUE_URL_PREFIX: wiring.slotQueueUrlPrefix,
      SLOT_LEASE_TTL_SECONDS: '9',
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4566',
      AWS_ENDPOINT_URL_SQS: 'http://127.0.0.1:4566',
      AWS_ENDPOINT_URL_DYNAMODB: 'http://127.0.0.1:8000',
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'local',
      S3_FORCE_PATH_STYLE: 'true',
    });
    await waitFor('stderr line', () => lines.includes(`[slot-2 ${pid}] a line on stderr`));
    await waitFor('log file', () => readFileSync(join(logDir, 'slot-2.log'), 'utf8').includes(`[slot-2 ${pid}] ENV `));
  });

  it('is idempotent per launchSeq, launches a new launchSeq beside a live worker (as ECS does), and describes its tasks', async () => {
    // Prepare
    const { launcher } = newLauncher([]);
    launchers.push(launcher);
    const first = await launcher.launch({ slot: 0, launchSeq: 1, reason: 'first' });

    // Act
    const repeat = await launcher.launch({ slot: 0, launchSeq: 1, reason: 'repeated request' });
    const again = await launcher.launch({ slot: 0, launchSeq: 2, reason: 'a new grant while the first still lives' });
    const otherSlot = await launcher.launch({ slot: 1, launchSeq: 1, reason: 'other slot' });
    launcher.kill({ pid: Number(first.taskId) }, 'SIGKILL');
    await launcher.waitForExit(Number(first.taskId));
    const states = await launcher.describe([first.taskId!, again.taskId!, '999999999']);

    // Assess
    expect(first.launched).toBe(true);
    expect(repeat).toMatchObject({ launched: true, taskId: first.taskId });
    expect(again.launched).toBe(true);
    expect(again.taskId).not.toBe(first.taskId);
    expect(otherSlot.launched).toBe(true);
    const slot0 = launcher.workers().filter((w) => w.slot === 0);
    expect(slot0.map((w) => w.alive)).toEqual([false, true]);
    expect(slot0[0]!.exitSignal).toBe('SIGKILL');
    expect([...states.values()].map((x) => x.state)).toEqual(['gone', 'coming', 'gone']);
  });

  it('lets a new launch replace a SIGSTOPped worker (a zombie) and serves a repeated launchSeq with the same worker', async () => {
    // Prepare
    const { launcher } = newLauncher([]);
    launchers.push(launcher);
    const first = await launcher.launch({ slot: 0, launchSeq: 1, reason: 'first' });
    const zombiePid = Number(first.taskId);

    // Act
    launcher.kill({ pid: zombiePid }, 'SIGSTOP');
    await waitFor('stopped state', () => processState(zombiePid) === 'T');
    const sameSeq = await launcher.launch({ slot: 0, launchSeq: 1, reason: 'duplicate request' });
    const replacement = await launcher.launch({ slot: 0, launchSeq: 2, reason: 'slot lease expired' });

    // Assess
    expect(sameSeq).toMatchObject({ launched: true, taskId: first.taskId });
    expect(replacement.launched).toBe(true);
    expect(launcher.workers().filter((w) => w.alive).map((w) => [w.pid, w.paused])).toEqual([
      [zombiePid, true],
      [Number(replacement.taskId), false],
    ]);
    launcher.kill({ pid: zombiePid }, 'SIGCONT');
    await waitFor('continued state', () => processState(zombiePid) !== 'T');
    expect(launcher.workers()[0]!.paused).toBe(false);
  });

  it('stops workers with SIGTERM, escalates to SIGKILL after the grace period, and leaves no process behind', async () => {
    // Prepare
    const lines: string[] = [];
    const { launcher: polite } = newLauncher(lines);
    const { launcher: stubborn } = newLauncher(lines, { FAKE_WORKER_IGNORE_SIGTERM: '1' });
    launchers.push(polite, stubborn);
    const a = Number((await polite.launch({ slot: 0, launchSeq: 1, reason: 't' })).taskId);
    const b = Number((await stubborn.launch({ slot: 1, launchSeq: 1, reason: 't' })).taskId);
    const paused = Number((await polite.launch({ slot: 1, launchSeq: 1, reason: 't' })).taskId);
    await waitFor('workers ready', () => envReport(lines, a) && envReport(lines, b) && envReport(lines, paused));
    polite.kill({ pid: paused }, 'SIGSTOP');

    // Act
    await Promise.all([polite.stopAll(5_000), stubborn.stopAll(300)]);

    // Assess
    expect([a, b, paused].map(isProcessAlive)).toEqual([false, false, false]);
    const byPid = new Map([...polite.workers(), ...stubborn.workers()].map((w) => [w.pid, w]));
    expect(byPid.get(a)).toMatchObject({ alive: false, exitCode: 0 });
    expect(byPid.get(paused)).toMatchObject({ alive: false, exitCode: 0 });
    expect(byPid.get(b)).toMatchObject({ alive: false, exitSignal: 'SIGKILL' });
    expect(lines).toContain(`[slot-0 ${a}] draining`);
    expect(lines).toContain(`[slot-1 ${b}] ignoring SIGTERM`);
    expect(await polite.launch({ slot: 3, launchSeq: 1, reason: 'late' })).toMatchObject({ launched: false, reason: 'refused' });
  });
});
