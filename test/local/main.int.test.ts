import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { StackFile } from '../../local/stack.ts';
import { isProcessAlive, waitFor } from './helpers.ts';

/** Starts `node local/main.ts` (what `npm start` runs) on free ports with two warm fake workers. */
async function startMain(options: { detached?: boolean } = {}): Promise<{ child: ChildProcess; file: StackFile; stackFile: string; output: () => string }> {
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
    ],
    {
      env: { ...process.env, SLOT_COUNT: '2', FAKE_WORKER_DRAIN_CHECK: '1' },
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
