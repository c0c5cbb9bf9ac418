import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { YOLOV8N_PATH } from '../../harness/yolo-fixtures.ts';
import type { StackFile } from '../../local/stack.ts';
import { isProcessAlive, waitFor } from './helpers.ts';

/** Starts `node local/main.ts` (what `npm start` runs) on free ports with two warm fake workers. */
async function startMain(options: { detached?: boolean; args?: string[]; env?: Record<string, string> } = {}): Promise<{ child: ChildProcess; file: StackFile; stackFile: string; output: () => string }> {
  const stateDir = mkdtempSync(join(tmpdir(), 'local-main-'));
  const child = spawn(
    process.execPath,
    [
      'local/main.ts',
      '--port=0',
      '--dynamodb-port=0',
      '--warm-slots=2',
      '--worker-entry=test/local/fixtures/fake-worker.ts',
      '--no-router',
      '--no-janitor',
      `--state-dir=${stateDir}`,
      ...(options.args ?? []),
    ],
    {
      env: { ...process.env, SLOT_COUNT: '2', FAKE_WORKER_DRAIN_CHECK: '1', ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, to send a terminal-style Ctrl-C to the whole group.
      detached: options.detached ?? false,
    },
  );
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  children.push(child);
  const stackFile = join(stateDir, 'stack.json');
  await waitFor('the ready banner', () => out.includes('Local stack ready') || child.exitCode !== null, 100_000); // DynamoDB Local's JVM start under load (the stack's own start timeout is 120 s)
  if (child.exitCode !== null) throw new Error(`local/main.ts exited early:\n${out}`);
  const file = JSON.parse(readFileSync(stackFile, 'utf8')) as StackFile;
  return { child, file, stackFile, output: () => out };
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

describe('local/main.ts (npm start)', () => {
  it('prints endpoints and a ready-to-copy AWS CLI upload, and leaves no process behind on SIGTERM', async () => {
    // Prepare
    const { child, file, stackFile, output } = await startMain();
    const pids = [file.pids.dynamodb, ...file.pids.workers.map((w) => w.pid)];
    expect(file.pids.workers).toHaveLength(2);
    expect(pids.every(isProcessAlive)).toBe(true);
    expect(output()).toContain(`aws --endpoint-url ${file.endpoints.s3} s3 cp f.jpg s3://${file.bucket}/frames/v1/000000.jpg`);
    expect(output()).toContain('AWS_ACCESS_KEY_ID=local');
    expect(output()).toContain(`events     ${file.tables.events} -> ${file.queues.eventBus} (the bus's stand-in; relay running)`);
    // Workers have installed their SIGTERM handlers once they report their environment.
    await waitFor('workers running', () => (output().match(/\] ENV /g) ?? []).length === 2);

    // Act
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));

    // Assess
    expect(code).toBe(0);
    expect(pids.filter(isProcessAlive)).toEqual([]);
    expect(existsSync(stackFile)).toBe(false);
    expect(output()).toContain('drain check: dynamodb answered with 3 tables'); // leases, results, events
  });

  it('on Ctrl-C (SIGINT to the whole foreground group) lets workers drain against a live DynamoDB before stopping it', async () => {
    // Prepare
    const { child, file, output } = await startMain({ detached: true });
    const pids = [file.pids.dynamodb, ...file.pids.workers.map((w) => w.pid)];
    await waitFor('workers running', () => (output().match(/\] ENV /g) ?? []).length === 2);

    // Act
    process.kill(-child.pid!, 'SIGINT');
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));

    // Assess
    expect(code).toBe(0);
    expect(output().match(/drain check: dynamodb answered with 3 tables/g)).toHaveLength(2);
    expect(pids.filter(isProcessAlive)).toEqual([]);
  });

  it('leaves no process behind even when it is SIGKILLed (the orphan guard)', async () => {
    // Prepare
    const { child, file } = await startMain();
    const pids = [file.pids.dynamodb, ...file.pids.workers.map((w) => w.pid)];
    expect(pids.every(isProcessAlive)).toBe(true);

    // Act
    child.kill('SIGKILL');

    // Assess
    await waitFor('children gone', () => pids.every((p) => !isProcessAlive(p)), 10_000);
  });
});

describe('npm start: what its terminal shows', () => {
  it('never the metrics JSON, which goes to the log files; with --quiet only warnings, not info lines or routine starts', async () => {
    // Prepare & Act
    const { child, stackFile, output } = await startMain({ args: ['--quiet'], env: { FAKE_WORKER_LOG_SAMPLES: '1' } });
    const log = join(dirname(stackFile), 'logs', 'slot-0.log');
    await waitFor('the workers\' sample lines logged', () => existsSync(log) && readFileSync(log, 'utf8').includes('sample warning line'), 30_000);
    await waitFor('the warnings shown, as text', () => (output().match(/\] WARN sample warning line/g) ?? []).length === 2, 10_000);
    // Assess
    expect(output()).toContain('Local stack ready');
    expect(output()).not.toContain('_aws');
    expect(output()).not.toContain('sample info line');
    expect(output()).not.toContain('started worker');
    expect(readFileSync(log, 'utf8')).toContain('"_aws"');
    expect(readFileSync(log, 'utf8')).toContain('sample info line');
    child.kill('SIGTERM');
  });
});

describe('npm start: its command line and the model it is given, before anything starts', () => {
  const run = (args: string[]) => spawnSync(process.execPath, ['local/main.ts', ...args], { encoding: 'utf8', timeout: 60_000 });

  it('prints its usage for --help, and one line with no stack trace for an unknown flag', () => {
    // Act
    const help = run(['--help']);
    const bogus = run(['--bogus']);
    // Assess
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^Usage: npm start -- \[options\]/);
    expect(help.stdout + help.stderr).not.toMatch(/TypeError|\n\s+at /);
    expect(bogus.status).toBe(2);
    expect(bogus.stderr.trim()).toBe("error: Unknown option '--bogus' (npm start -- --help lists the options)");
  });

  it.skipIf(!existsSync(YOLOV8N_PATH))('refuses a model whose class names do not fit its output, in one line, and starts nothing', () => {
    // Prepare
    const names = join(mkdtempSync(join(tmpdir(), 'names-')), 'three.txt');
    writeFileSync(names, 'person\ncar\ntruck\n');
    // Act
    const r = run(['--model', YOLOV8N_PATH, '--classes', names, '--port=0', '--dynamodb-port=0']);
    // Assess
    expect(r.status).toBe(1);
    expect(r.stderr.trim()).toMatch(/^error: model .*yolov8n-random\.onnx: its output has 84 channels, which is 80 classes .* gives 3 class name\(s\); give exactly 80/);
    expect(r.stdout).not.toContain('Local stack ready');
  });
});
