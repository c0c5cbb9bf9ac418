/**
 * The router's event source mapping carries the ingest tunables (decision 33): batch size,
 * batching window, and a maximum concurrency derived from slotCount unless overridden.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';

const outdirs: string[] = [];
afterAll(() => {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
});

/** The parent stack's one event source mapping, synthesised with `context` (cdk -c key=value). */
function eventSourceOf(context: Record<string, string>): Record<string, unknown> {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-cdk-esm-'));
  outdirs.push(outdir);
  const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  const mappings = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::EventSourceMapping'));
  expect(mappings).toHaveLength(1);
  return mappings[0]!.Properties as Record<string, unknown>;
}

describe('router event source mapping', () => {
  it.each([
    ['defaults (4 slots)', {}, { BatchSize: 10, ScalingConfig: { MaximumConcurrency: 10 } }],
    ['a window for cost at low rates', { routerBatchWindowSeconds: '1' }, { BatchSize: 10, MaximumBatchingWindowInSeconds: 1 }],
    ['250 slots: concurrency derived as ceil(250 / 2)', { slotCount: '250' }, { BatchSize: 10, ScalingConfig: { MaximumConcurrency: 125 } }],
    [
      'the 240,000 frames/s settings: 1,000 slots, batch 1,000, window 1 s',
      { slotCount: '1000', routerBatchSize: '1000', routerBatchWindowSeconds: '1' },
      { BatchSize: 1000, MaximumBatchingWindowInSeconds: 1, ScalingConfig: { MaximumConcurrency: 500 } },
    ],
    ['an override wins over the derived value', { slotCount: '250', routerMaxConcurrency: '64' }, { ScalingConfig: { MaximumConcurrency: 64 } }],
  ] as const)('%s', (_name, context, expected) => {
    // Act
    const props = eventSourceOf(context);
    // Assess
    expect(props).toMatchObject({ FunctionResponseTypes: ['ReportBatchItemFailures'], ...expected });
  });

  it('gives the router the memory of routerMemoryMb (512 MB unless set)', () => {
    // Act
    const memoryOf = (context: Record<string, string>) => {
      const outdir = mkdtempSync(join(tmpdir(), 'fa-cdk-mem-'));
      outdirs.push(outdir);
      const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
      const id = stack.getLogicalId(stack.router.function.node.defaultChild as CfnElement);
      return Template.fromStack(stack).toJSON().Resources[id].Properties.MemorySize;
    };
    // Assess
    expect(memoryOf({})).toBe(512);
    expect(memoryOf({ routerMemoryMb: '1769' })).toBe(1769);
  });

  it('refuses a batch above 10 without a batching window, as Lambda would', () => {
    expect(() => eventSourceOf({ routerBatchSize: '100', routerBatchWindowSeconds: '0' })).toThrow(/routerBatchSize \(100\) above 10 must have routerBatchWindowSeconds of at least 1/);
  });
});
