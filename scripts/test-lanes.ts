/**
 * `npm test`'s runner (after `tsc --noEmit`): the unit lane and the waiting lanes (defaults
 * and integration) as two `vitest run`s at the same time (docs/decisions.md, decision 81).
 *
 * Why two runs: vitest runs its groups (`sequence.groupOrder`) one after the other, and a
 * group has one `maxWorkers` for all its projects. The unit lane is CPU-bound (CDK
 * syntheses, FFmpeg, sharp) and takes a worker per core; the waiting lanes mostly wait on
 * leases and outages (on a 2-core machine their files used about 1.35 cores of 2), with
 * four files at a time. One group of both could not keep the unit lane at one file per
 * core and the waiting lanes at four; two runs can. The unit lane starts no emulator and no
 * process and writes no shared file (test/vitest-config.test.ts keeps that), so it cannot
 * meet the waiting lanes' stacks.
 *
 * Each line of output is prefixed with its run (`[unit]`, `[waiting]`); the exit status is
 * 0 only when both runs passed. With arguments it is one plain `vitest run <args>`, as
 * before (`npm test -- test/infra`).
 *
 *   node scripts/test-lanes.ts            both runs at once
 *   node scripts/test-lanes.ts <args>     vitest run <args>
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The runs `npm test` makes at the same time; together they name every project of vitest.config.ts once. */
export const LANE_RUNS: readonly { readonly name: string; readonly projects: readonly string[] }[] = [
  { name: 'unit', projects: ['unit'] },
  { name: 'waiting', projects: ['defaults', 'integration'] },
];

const VITEST = path.join(path.dirname(createRequire(import.meta.url).resolve('vitest/package.json')), 'vitest.mjs');

function vitest(args: readonly string[], prefix?: string): ChildProcess {
  const child = spawn(process.execPath, [VITEST, 'run', ...args], { cwd: ROOT, stdio: prefix ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
  if (prefix) {
    for (const [from, to] of [
      [child.stdout!, process.stdout],
      [child.stderr!, process.stderr],
    ] as const) {
      // Whole lines only, so that the two runs' lines do not cut into each other.
      let rest = '';
      from.setEncoding('utf8');
      from.on('data', (chunk: string) => {
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        if (lines.length > 0) to.write(lines.map((l) => `${prefix} ${l}\n`).join(''));
      });
      from.on('end', () => {
        if (rest) to.write(`${prefix} ${rest}\n`);
      });
    }
  }
  return child;
}

/** Resolves with the run's exit status (1 for a signal). */
const exited = (child: ChildProcess) => new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? 1)));

async function main(args: readonly string[]): Promise<number> {
  if (args.length > 0) return exited(vitest(args));
  const started = Date.now();
  const children = LANE_RUNS.map((run) => ({ run, child: vitest(run.projects.flatMap((p) => ['--project', p]), `[${run.name}]`) }));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => children.forEach(({ child }) => child.kill(signal)));
  const results = await Promise.all(
    children.map(async ({ run, child }) => {
      const code = await exited(child);
      const line = `${run.name} (${run.projects.join(', ')}): ${code === 0 ? 'passed' : `FAILED (exit ${code})`} in ${((Date.now() - started) / 1000).toFixed(0)} s`;
      return { code, line };
    }),
  );
  for (const { line } of results) console.log(line);
  return results.every((r) => r.code === 0) ? 0 : 1;
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
