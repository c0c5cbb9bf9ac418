/**
 * Tests mirror the source tree: the tests of `core/x.ts` are `test/core/x*.test.ts`, of
 * `gpu-worker/runtime/x.ts` `test/gpu-worker/runtime/x*.test.ts`, and so on. Tests that
 * start the emulators (DynamoDB Local, fauxqs) or other processes carry the suffix
 * `.int.test.ts` instead of living in an `integration/` folder. Tests of the whole
 * pipeline on the local stack, with no single module as subject, are in `test/system/`;
 * `test/support/` (harnesses, the SQS FIFO model) and `test/chaos/` stay as they are.
 *
 * This file is the mapping from the old layout (test/unit, test/integration,
 * test/vision, ...) and the command that applies it. It is re-runnable: a branch that
 * adds a test in an old folder after the move gets an entry here (or matches a rule
 * below), then
 *
 *   node scripts/test-layout.ts            # print what would move, and any unmapped test
 *   node scripts/test-layout.ts --write    # git mv, rewrite imports and path references
 *
 * moves it too. Imports are rewritten by scripts/move-modules.ts; references to the old
 * paths in docs, comments and strings (README.md, docs/, bench/, the tests) are rewritten
 * as text, and so are bare file names whose name changed (`failover.test.ts`).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { applyMoves, listSourceFiles } from './move-modules.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Old path → new path, for every test of the old layout. */
export const TEST_LAYOUT: Readonly<Record<string, string>> = {
  // test/integration: by subject; `.int` because they run on the emulators
  'test/integration/failover.test.ts': 'test/system/failover.int.test.ts',
  'test/integration/lifecycle.test.ts': 'test/system/lifecycle.int.test.ts',
  'test/integration/pipeline.test.ts': 'test/system/pipeline.int.test.ts',
  'test/integration/late-frames.test.ts': 'test/system/late-frames.int.test.ts',
  'test/integration/vision-failover.test.ts': 'test/system/vision-failover.int.test.ts',
  'test/integration/quiet-first-run.test.ts': 'test/system/quiet-first-run.int.test.ts',
  'test/integration/idle-exit.test.ts': 'test/gpu-worker/runtime/idle-exit.int.test.ts',
  'test/integration/worker-faults.test.ts': 'test/gpu-worker/runtime/worker-faults.int.test.ts',
  'test/integration/worker-fifo-model.test.ts': 'test/gpu-worker/runtime/worker-fifo-model.int.test.ts',
  'test/integration/worker-overlap.test.ts': 'test/gpu-worker/runtime/worker-overlap.int.test.ts',
  'test/integration/worker-receive-ahead.test.ts': 'test/gpu-worker/runtime/worker-receive-ahead.int.test.ts',
  'test/integration/janitor-expiry.test.ts': 'test/core/janitor-expiry.int.test.ts',
  'test/integration/janitor-scale.test.ts': 'test/core/janitor-scale.int.test.ts',
  'test/integration/lease-store.test.ts': 'test/core/aws/lease-store.int.test.ts',
  // test/unit: by the module under test
  'test/unit/ambiguous-errors.test.ts': 'test/core/aws/ambiguous-errors.test.ts',
  'test/unit/aws-clients.test.ts': 'test/core/aws/clients.test.ts',
  'test/unit/aws-fault-injection.test.ts': 'test/core/aws/fault-injection.test.ts',
  'test/unit/ecs-task-launcher.test.ts': 'test/core/aws/ecs-task-launcher.test.ts',
  'test/unit/slot-queue-signals.test.ts': 'test/core/aws/slot-queue-signals.test.ts',
  'test/unit/checkpoint-size.test.ts': 'test/core/checkpoint-size.test.ts',
  'test/unit/config.test.ts': 'test/core/config.test.ts',
  'test/unit/idle-exit-config.test.ts': 'test/core/idle-exit-config.test.ts',
  'test/unit/janitor-launch-grace.test.ts': 'test/core/janitor-launch-grace.test.ts',
  'test/unit/keys.test.ts': 'test/core/keys.test.ts',
  'test/unit/lease-logic.test.ts': 'test/core/lease-logic.test.ts',
  'test/unit/messages.test.ts': 'test/core/messages.test.ts',
  'test/unit/router-slot-reads.test.ts': 'test/core/router-slot-reads.test.ts',
  'test/unit/router-test-event.test.ts': 'test/core/router-test-event.test.ts',
  'test/unit/sequencer.test.ts': 'test/core/sequencer.test.ts',
  'test/unit/commit-builder.test.ts': 'test/gpu-worker/runtime/commit-builder.test.ts',
  'test/unit/frame-prefetch.test.ts': 'test/gpu-worker/runtime/frame-prefetch.test.ts',
  'test/unit/frame-runner.test.ts': 'test/gpu-worker/runtime/frame-runner.test.ts',
  'test/unit/stats-processor.test.ts': 'test/gpu-worker/stats-processor.test.ts',
  'test/unit/prepared-ahead.test.ts': 'test/gpu-worker/vision/prepared-ahead.test.ts',
  'test/unit/fleet-teardown.test.ts': 'test/functions/teardown/handler.test.ts',
  'test/unit/baseline-lock.test.ts': 'test/bench/baseline/lock.int.test.ts',
  'test/unit/sqs-fifo-model.test.ts': 'test/support/sqs-fifo-model.test.ts',
  // test/vision: gpu-worker/vision (model.int.test.ts serves the model from fauxqs)
  'test/vision/model.test.ts': 'test/gpu-worker/vision/model.int.test.ts',
  // test/local and test/cli stay; the ones that start emulators or processes get `.int`
  'test/local/emulators.test.ts': 'test/local/emulators.int.test.ts',
  'test/local/event-source.test.ts': 'test/local/event-source.int.test.ts',
  'test/local/local-task-launcher.test.ts': 'test/local/local-task-launcher.int.test.ts',
  'test/local/main.test.ts': 'test/local/main.int.test.ts',
  'test/local/s3-notifications.test.ts': 'test/local/s3-notifications.int.test.ts',
  'test/local/sqs-limits.test.ts': 'test/local/sqs-limits.int.test.ts',
  'test/local/stack.test.ts': 'test/local/stack.int.test.ts',
  'test/cli/commands.test.ts': 'test/cli/commands.int.test.ts',
};

/** Rules for tests of the old layout that have no entry: a folder that maps as a whole. */
const FOLDER_RULES: readonly (readonly [string, string])[] = [['test/vision/', 'test/gpu-worker/vision/']];

/** Folders of the old layout that must be empty afterwards. */
const OLD_FOLDERS = ['test/unit/', 'test/integration/', 'test/vision/'];

/** The moves for the test files present, and the tests of the old folders nothing maps. */
export function testLayoutMoves(testFiles: readonly string[]): { moves: Record<string, string>; unmapped: string[] } {
  const moves: Record<string, string> = {};
  const unmapped: string[] = [];
  for (const file of testFiles) {
    const mapped = TEST_LAYOUT[file] ?? FOLDER_RULES.filter(([from]) => file.startsWith(from)).map(([from, to]) => to + file.slice(from.length))[0];
    if (mapped !== undefined) moves[file] = mapped;
    else if (OLD_FOLDERS.some((d) => file.startsWith(d))) unmapped.push(file);
  }
  return { moves, unmapped };
}

const TEXT_FILES = /\.(md|ts|mts|json|sh|yml|yaml)$/;
const TEXT_SKIP = new Set(['node_modules', '.git', 'cdk.out', '.local', 'results']);

function listTextFiles(dir = ROOT): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (TEXT_SKIP.has(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...listTextFiles(full));
    else if (TEXT_FILES.test(entry.name) || entry.name === 'run') out.push(path.relative(ROOT, full).split(path.sep).join('/'));
  }
  return out;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Rewrites references to moved tests in prose and strings: full paths (`test/unit/x.test.ts`)
 * always, and a bare file name whose name changed (`failover.int.test.ts` → `failover.int.test.ts`)
 * when no other test (of `allTests`, moved or not) has the same name.
 */
export function rewriteReferences(text: string, moves: Readonly<Record<string, string>>, allTests: readonly string[] = Object.keys(moves)): string {
  let out = text;
  for (const [from, to] of Object.entries(moves)) out = out.replace(new RegExp(`(?<![\\w./-])${escape(from)}(?![\\w-])`, 'g'), to);
  const byName = new Map<string, string[]>();
  for (const [from, to] of Object.entries(moves)) {
    const a = path.posix.basename(from);
    const b = path.posix.basename(to);
    if (a !== b) byName.set(a, [...(byName.get(a) ?? []), b]);
  }
  const allNames = allTests.map((f) => path.posix.basename(f));
  for (const [name, targets] of byName) {
    if (targets.length !== 1 || allNames.filter((n) => n === name).length !== 1) continue;
    out = out.replace(new RegExp(`(?<![\\w./-])${escape(name)}(?![\\w-])`, 'g'), targets[0]!);
  }
  return out;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const write = process.argv.includes('--write');
  const tests = listSourceFiles().filter((f) => f.startsWith('test/') && f.endsWith('.test.ts'));
  const { moves, unmapped } = testLayoutMoves(tests);
  for (const f of unmapped) console.error(`unmapped: ${f} (add it to TEST_LAYOUT in scripts/test-layout.ts)`);
  if (!write) {
    for (const [from, to] of Object.entries(moves)) console.log(`${from} -> ${to}`);
    process.exit(unmapped.length > 0 ? 1 : 0);
  }
  if (unmapped.length > 0) process.exit(1);
  // Text references first, on the old paths, so the import rewriting below sees the files where they are.
  // Every entry counts, moved now or before: a merge may bring prose that names an old path.
  const textMoves = { ...TEST_LAYOUT, ...moves };
  const known = [...new Set([...tests, ...Object.keys(textMoves)])];
  // Not this mapping itself nor the tests of the scripts, which name the old paths on purpose.
  const texts = listTextFiles().filter((f) => existsSync(path.join(ROOT, f)) && !f.startsWith('scripts/') && !f.startsWith('test/scripts/'));
  for (const file of texts) {
    const full = path.join(ROOT, file);
    const text = readFileSync(full, 'utf8');
    const next = rewriteReferences(text, textMoves, known);
    if (next !== text) {
      writeFileSync(full, next);
      console.log(`rewrote references in ${file}`);
    }
  }
  for (const line of applyMoves(moves)) console.log(line);
}
