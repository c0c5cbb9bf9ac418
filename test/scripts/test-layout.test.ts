/**
 * Tests mirror the source tree (scripts/test-layout.ts): none is left in the old folders
 * (a branch that adds one there gets this failure and the command that moves it), and
 * the mapping and the reference rewriting behave.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { TEST_LAYOUT, rewriteReferences, testLayoutMoves } from '../../scripts/test-layout.ts';

const TEST_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function testFiles(dir = TEST_ROOT): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? testFiles(path.join(dir, e.name)) : e.name.endsWith('.test.ts') ? [`test/${path.relative(TEST_ROOT, path.join(dir, e.name)).split(path.sep).join('/')}`] : [],
  );
}

describe('the test layout', () => {
  it('has no test left in the old layout (run node scripts/test-layout.ts --write)', () => {
    const { moves, unmapped } = testLayoutMoves(testFiles());
    expect([...Object.keys(moves), ...unmapped]).toEqual([]);
  });

  it('maps every old test to a distinct new path that ends in .test.ts', () => {
    const targets = Object.values(TEST_LAYOUT);
    expect(new Set(targets).size).toBe(targets.length);
    for (const t of targets) expect(t).toMatch(/^test\/.+\.test\.ts$/);
  });

  it('maps by rule what has no entry, and names the old-folder tests nothing maps', () => {
    const { moves, unmapped } = testLayoutMoves(['test/vision/new-thing.test.ts', 'test/unit/new-thing.test.ts', 'test/core/keys.test.ts']);
    expect(moves).toEqual({ 'test/vision/new-thing.test.ts': 'test/gpu-worker/vision/new-thing.test.ts' });
    expect(unmapped).toEqual(['test/unit/new-thing.test.ts']);
  });

  it('rewrites full paths and unambiguous renamed file names in prose, nothing else', () => {
    const moves = { 'test/integration/failover.test.ts': 'test/system/failover.int.test.ts', 'test/local/stack.test.ts': 'test/local/stack.int.test.ts' };
    const all = [...Object.keys(moves), 'test/infra/stack.test.ts'];
    const text = 'see `test/integration/failover.test.ts`; the SIGSTOP test in `failover.test.ts`; and `stack.test.ts`; vision-failover.test.ts';
    expect(rewriteReferences(text, moves, all)).toBe(
      'see `test/system/failover.int.test.ts`; the SIGSTOP test in `failover.int.test.ts`; and `stack.test.ts`; vision-failover.test.ts',
    );
  });
});
