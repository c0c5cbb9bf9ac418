/**
 * A quiet first run: `npx affinity --help`, as a user types it, prints no npm warnings on
 * this kind of machine (system Node 20, a user ~/.npmrc with keys npm does not know),
 * and onnxruntime-node's download-on-install stays off on every npm: through package.json's
 * `allowScripts` (npm 11) and the `.npmrc` key the package's install script reads (older npm).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The environment of a user's shell: what `npm test` adds (npm_config_*, npm_*) removed. */
function userEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_')));
}

describe('a quiet first run', () => {
  it('npx affinity --help prints its usage and no npm warning', () => {
    // Act
    const run = spawnSync('npx', ['affinity', '--help'], { cwd: root, env: userEnv(), encoding: 'utf8', timeout: 60_000 });
    // Assess
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('Usage: affinity <command>');
    expect(`${run.stdout}\n${run.stderr}`).not.toMatch(/npm warn/i);
  });

  it('keeps onnxruntime-node from downloading at install time, whichever npm installs', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
    const npmrc = readFileSync(join(root, '.npmrc'), 'utf8');
    expect(pkg.allowScripts?.['onnxruntime-node']).toBe(false);
    // Node 24 arrives through its package's preinstall, which must stay allowed.
    expect(pkg.allowScripts?.node).toBe(true);
    expect(npmrc).toMatch(/^onnxruntime-node-install=skip$/m);
  });
});
