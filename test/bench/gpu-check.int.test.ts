/**
 * bench/gpu-check.sh, the project's GPU check (issue 43, item 6), where there is no GPU:
 * it says so, names why and what to do, and exits 3 at once, making nothing (it spawns
 * bash: an integration-lane file). Its GPU path runs only on a GPU machine; its figures go
 * to bench/README.md.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Runs the check with PATH limited to the system's and `extra` (a folder of fake programs). */
function run(extra?: string) {
  const env = { ...process.env, PATH: [extra, '/usr/bin', '/bin'].filter(Boolean).join(':'), GPU_CHECK_ALLOW_CPU: '' };
  return spawnSync('bash', ['bench/gpu-check.sh'], { cwd: ROOT, env, encoding: 'utf8', timeout: 30_000 });
}

describe('bench/gpu-check.sh without a GPU', () => {
  it('without nvidia-smi: says there is no GPU and why, and exits 3 without making anything', () => {
    const before = readdirSync(ROOT).filter((f) => f.startsWith('.gpu-check.'));
    const r = run();
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/no NVIDIA GPU on this machine: nvidia-smi is not installed/);
    expect(r.stderr).toMatch(/GPU_CHECK_ALLOW_CPU=1/);
    expect(r.stdout).toBe('');
    expect(readdirSync(ROOT).filter((f) => f.startsWith('.gpu-check.'))).toEqual(before);
  });

  it('with an nvidia-smi that lists no GPU (a driver without a device): the same, with nvidia-smi\'s words', () => {
    const bin = mkdtempSync(path.join(tmpdir(), 'fa-fake-smi-'));
    dirs.push(bin);
    writeFileSync(path.join(bin, 'nvidia-smi'), '#!/bin/sh\necho "No devices were found"\nexit 6\n');
    chmodSync(path.join(bin, 'nvidia-smi'), 0o755);
    const r = run(bin);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/no NVIDIA GPU on this machine: nvidia-smi lists no GPU \(No devices were found\)/);
  });
});
