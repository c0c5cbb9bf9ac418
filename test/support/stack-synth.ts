/**
 * Synthesis of the CDK stack for the tests of infra/stack.ts (test/infra/stack*.test.ts):
 * each synthesis gets its own cdk.out folder, removed by {@link removeSynthOutdirs}.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';

/** A synthesized template's resources, by logical id. */
export type Resources = Record<string, { Type: string; Properties?: Record<string, unknown> }>;

const outdirs: string[] = [];

/** Synthesizes the app with cdk.json's context overridden by `context` (pass `'aws:cdk:bundling-stacks': []` to skip bundling). */
export function synth(context: Record<string, unknown> = {}): { app: App; stack: FrameAffinityStack; template: Template } {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-cdk-'));
  outdirs.push(outdir);
  const { app, stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), ...context } }));
  return { app, stack, template: Template.fromStack(stack) };
}

/** Removes the cdk.out folder of every synthesis this test file made (for its afterAll). */
export function removeSynthOutdirs(): void {
  for (const dir of outdirs) rmSync(dir, { recursive: true, force: true });
}

/**
 * The default stack (cdk.json's context, with esbuild bundling of both Lambdas), the one
 * real synthesis a test file shares across its tests.
 */
export function synthDefault(): { app: App; stack: FrameAffinityStack; template: Template; resources: Resources } {
  const { app, stack, template } = synth();
  return { app, stack, template, resources: template.toJSON().Resources as Resources };
}

/** Every IAM-style statement in the template: identity, resource, key and trust policies. */
export function allStatements(resources: Resources): { resource: string; statement: Record<string, unknown> }[] {
  const out: { resource: string; statement: Record<string, unknown> }[] = [];
  const walk = (node: unknown, resource: string) => {
    if (Array.isArray(node)) node.forEach((n) => walk(n, resource));
    else if (node && typeof node === 'object') {
      const obj = node as Record<string, unknown>;
      if (Array.isArray(obj.Statement)) for (const s of obj.Statement) out.push({ resource, statement: s as Record<string, unknown> });
      for (const v of Object.values(obj)) walk(v, resource);
    }
  };
  for (const [id, r] of Object.entries(resources)) walk(r.Properties, id);
  return out;
}

/** A policy field that may be one value or a list, as a list. */
export const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);
