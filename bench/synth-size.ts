/**
 * Template size at a given slot count: synthesises the real app (infra/app.ts, cdk-nag
 * included, Lambda bundling skipped) and reports, per stack (the parent and each nested
 * slot-queue stack), the CloudFormation resource count against the 500 limit, and the
 * largest IAM policies against IAM's limits: 10,240 characters for all inline policies
 * of one role together, 6,144 for a managed policy.
 *
 *   npx node bench/synth-size.ts [slotCounts=4,100,1000]
 *
 * Policy sizes are counted as IAM counts them (JSON without whitespace) after replacing
 * each intrinsic the deploy would resolve: pseudo parameters by their longest usual
 * values, and every other `Ref` / `Fn::GetAtt` by a 64-character stand-in (an ARN
 * attribute by a full ARN around one), so the figure is an upper estimate of the
 * deployed size. test/infra/scale.test.ts asserts the same numbers stay under the limits.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App, NestedStack } from 'aws-cdk-lib';
import { buildApp, cdkJsonContext } from '../infra/app.ts';

/** CloudFormation's limit on resources per stack (nested stacks count separately). */
export const MAX_RESOURCES_PER_STACK = 500;
/** IAM: all inline policies of one role together, in characters without whitespace. */
export const MAX_ROLE_INLINE_POLICY_CHARS = 10_240;
/** IAM: one customer managed policy. */
export const MAX_MANAGED_POLICY_CHARS = 6_144;

type Resource = { Type: string; Properties?: Record<string, unknown> };
export interface CfnTemplate {
  Resources: Record<string, Resource>;
}

const STAND_IN = 'x'.repeat(64);
const PSEUDO: Record<string, string> = {
  'AWS::Partition': 'aws-us-gov',
  'AWS::Region': 'ap-southeast-2',
  'AWS::AccountId': '123456789012',
  'AWS::URLSuffix': 'amazonaws.com.cn',
  'AWS::StackName': 'x'.repeat(128),
};

/** The value an intrinsic would have once deployed (a conservative stand-in where unknown). */
function resolve(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(resolve);
  if (!node || typeof node !== 'object') return node;
  const entries = Object.entries(node as Record<string, unknown>);
  if (entries.length === 1) {
    const [fn, arg] = entries[0]!;
    if (fn === 'Ref') return PSEUDO[String(arg)] ?? STAND_IN;
    if (fn === 'Fn::GetAtt') return (arg as string[])[1] === 'Arn' ? `arn:aws-us-gov:service:ap-southeast-2:123456789012:${STAND_IN}` : STAND_IN;
    if (fn === 'Fn::Join') {
      const [sep, parts] = arg as [string, unknown[]];
      return (resolve(parts) as unknown[]).map(String).join(sep);
    }
    if (fn.startsWith('Fn::')) return STAND_IN;
  }
  return Object.fromEntries(entries.map(([k, v]) => [k, resolve(v)]));
}

/** Characters of a policy document as IAM counts them (no whitespace). */
export function policyChars(document: unknown): number {
  return JSON.stringify(resolve(document)).length;
}

export interface PolicySize {
  /** Role logical id (inline policies, summed) or managed policy logical id. */
  readonly id: string;
  readonly chars: number;
}

/** Sum of every inline policy of each role in the template (AWS::IAM::Policy attached to it, plus the role's own `Policies`). */
export function roleInlinePolicySizes(template: CfnTemplate): PolicySize[] {
  const byRole = new Map<string, number>();
  const add = (role: string, chars: number) => byRole.set(role, (byRole.get(role) ?? 0) + chars);
  for (const [id, r] of Object.entries(template.Resources)) {
    if (r.Type === 'AWS::IAM::Role') {
      add(id, 0);
      for (const p of (r.Properties?.Policies as { PolicyDocument: unknown }[] | undefined) ?? []) add(id, policyChars(p.PolicyDocument));
    }
    if (r.Type === 'AWS::IAM::Policy') {
      const chars = policyChars(r.Properties?.PolicyDocument);
      for (const role of (r.Properties?.Roles as unknown[] | undefined) ?? []) {
        const ref = (role as { Ref?: string }).Ref;
        add(ref ?? String(role), chars);
      }
    }
  }
  return [...byRole].map(([id, chars]) => ({ id, chars })).sort((a, b) => b.chars - a.chars);
}

/** Size of every customer managed policy in the template. */
export function managedPolicySizes(template: CfnTemplate): PolicySize[] {
  return Object.entries(template.Resources)
    .filter(([, r]) => r.Type === 'AWS::IAM::ManagedPolicy')
    .map(([id, r]) => ({ id, chars: policyChars(r.Properties?.PolicyDocument) }))
    .sort((a, b) => b.chars - a.chars);
}

export interface StackSize {
  /** `parent` or the nested stack's construct path. */
  readonly stack: string;
  readonly resources: number;
  readonly template: CfnTemplate;
}

export interface SynthSize {
  readonly slotCount: number;
  readonly stacks: readonly StackSize[];
  readonly largestRoleInline: PolicySize | undefined;
  readonly largestManaged: PolicySize | undefined;
  readonly synthSeconds: number;
}

/**
 * Synthesises the app at `slotCount` (as `cdk synth -c slotCount=N` does, cdk-nag
 * included, Lambda bundling skipped) and measures every template it writes.
 */
export function measureSynth(slotCount: number, extraContext: Record<string, unknown> = {}): SynthSize {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-synth-size-'));
  const started = performance.now();
  try {
    const app = new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], 'aws:cdk:version-reporting': true, ...extraContext, slotCount } });
    const { stack } = buildApp(app);
    const assembly = app.synth();
    const synthSeconds = (performance.now() - started) / 1000;
    const parent = assembly.getStackByName(stack.stackName).template as CfnTemplate;
    // In construct order (slot groups 0, 1, ...), named by construct path.
    const nestedStacks = stack.node.findAll().filter((c): c is NestedStack => NestedStack.isNestedStack(c));
    const written = readdirSync(outdir).filter((f) => f.endsWith('.nested.template.json'));
    if (written.length !== nestedStacks.length) throw new Error(`found ${written.length} nested templates for ${nestedStacks.length} nested stacks`);
    const nested = nestedStacks.map((n) => ({ stack: n.node.path, template: JSON.parse(readFileSync(join(outdir, n.templateFile), 'utf8')) as CfnTemplate }));
    const stacks = [{ stack: 'parent', template: parent }, ...nested].map((s) => ({ ...s, resources: Object.keys(s.template.Resources).length }));
    const roles = stacks.flatMap((s) => roleInlinePolicySizes(s.template));
    const managed = stacks.flatMap((s) => managedPolicySizes(s.template));
    const largest = (list: PolicySize[]) => list.sort((a, b) => b.chars - a.chars)[0];
    return { slotCount, stacks, largestRoleInline: largest(roles), largestManaged: largest(managed), synthSeconds };
  } finally {
    rmSync(outdir, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const counts = (process.argv[2] ?? '4,100,1000').split(',').map(Number);
  console.log('| slots | stacks | resources: parent | resources: largest nested (count of nested) | largest role inline policies (chars, role) | largest managed policy | synth |');
  console.log('| ---: | ---: | ---: | ---: | --- | --- | ---: |');
  for (const n of counts) {
    const m = measureSynth(n);
    const [parent, ...nested] = m.stacks;
    const maxNested = Math.max(0, ...nested.map((s) => s.resources));
    const role = m.largestRoleInline ? `${m.largestRoleInline.chars.toLocaleString('en')} (${m.largestRoleInline.id}) of ${MAX_ROLE_INLINE_POLICY_CHARS.toLocaleString('en')}` : 'none';
    const managed = m.largestManaged ? `${m.largestManaged.chars.toLocaleString('en')} of ${MAX_MANAGED_POLICY_CHARS.toLocaleString('en')}` : 'none';
    console.log(`| ${n} | ${m.stacks.length} | ${parent!.resources} | ${maxNested} (${nested.length}) | ${role} | ${managed} | ${m.synthSeconds.toFixed(1)} s |`);
    for (const s of m.stacks) console.error(`  ${n} slots: ${s.stack}: ${s.resources} resources`);
  }
}
