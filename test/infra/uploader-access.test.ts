/**
 * The uploader's least privilege as deployed with IAM Roles Anywhere (issue 45): the role
 * the stack makes for a trust anchor, the site read from a certificate's session tag
 * (`uploaderSiteTag=x509Subject/OU`), evaluated by the IAM engine, and cdk-nag on that
 * variant; the settings refused with their rule. The default stack (no role) is evaluated
 * row by row in iam-evaluation.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { stackConfigFromContext } from '../../infra/config.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';
import { UPLOADER_OUTPUT_KEYS } from '../../infra/uploader-access.ts';
import { ACCOUNT, REGION, StackModel, decide, type CfnTemplate } from '../support/iam-eval.ts';

const ANCHOR = `arn:aws:rolesanywhere:${REGION}:${ACCOUNT}:trust-anchor/0f0e0d0c-0b0a-0908-0706-050403020100`;
const TAG = 'x509Subject/OU';

const outdirs: string[] = [];
function synth(context: Record<string, unknown>): { app: App; stack: FrameAffinityStack; json: CfnTemplate & { Outputs: Record<string, { Value: unknown }> } } {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-uploader-'));
  outdirs.push(outdir);
  const { app, stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], ...context } }));
  return { app, stack, json: Template.fromStack(stack).toJSON() as never };
}

let anchored: ReturnType<typeof synth>;
let plain: ReturnType<typeof synth>;
beforeAll(() => {
  anchored = synth({ uploaderTrustAnchorArn: ANCHOR, uploaderSiteTag: TAG });
  plain = synth({});
}, 300_000);
afterAll(() => {
  for (const d of outdirs) rmSync(d, { recursive: true, force: true });
});

describe('with an IAM Roles Anywhere trust anchor', () => {
  it('makes a role that only Roles Anywhere may hand out, for certificates of that anchor, with session tags, and outputs it', () => {
    // Prepare
    const { stack, json } = anchored;
    const role = json.Resources[stack.getLogicalId(stack.uploader.role!.node.defaultChild as never)]!;
    const trust = (role.Properties!.AssumeRolePolicyDocument as { Statement: { Principal: unknown; Action: string | string[]; Condition: unknown }[] }).Statement;

    // Act
    const actions = trust.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])).sort();

    // Assess
    expect(actions).toEqual(['sts:AssumeRole', 'sts:SetSourceIdentity', 'sts:TagSession']);
    for (const s of trust) {
      expect(s.Principal).toEqual({ Service: 'rolesanywhere.amazonaws.com' });
      expect(s.Condition).toEqual({ ArnEquals: { 'aws:SourceArn': ANCHOR } });
    }
    expect(role.Properties!.MaxSessionDuration).toBe(3600);
    expect(json.Outputs).toHaveProperty(UPLOADER_OUTPUT_KEYS.roleArn);
    expect(json.Outputs).toHaveProperty(UPLOADER_OUTPUT_KEYS.policyArn);
  });

  it.each([
    ['store-042', 'frames/store-042.door-1/000042.ts', 'Allowed'],
    ['store-042', 'frames/store-043.door-1/000042.ts', 'ImplicitlyDenied'],
    ['store-042.x', 'frames/store-042.x.door-1/000042.ts', 'ExplicitlyDenied'],
  ])("lets the role's session with OU=%s write %s: %s", async (ou, key, expected) => {
    // Prepare: a session of the role as Roles Anywhere issues it, the certificate's OU as a principal tag
    const model = new StackModel([anchored.json]);
    const { stack } = anchored;
    const roleId = stack.getLogicalId(stack.uploader.role!.node.defaultChild as never);
    const bucket = model.arnOf(stack.getLogicalId(stack.frames.bucket.node.defaultChild as never));

    // Act
    const decision = await decide(model, {
      principal: `arn:aws:sts::${ACCOUNT}:assumed-role/${model.nameOf(roleId)}/box-7`,
      identityPolicies: model.identityPoliciesOf(roleId),
      action: 's3:PutObject',
      resource: `${bucket}/${key}`,
      context: { [`aws:PrincipalTag/${TAG}`]: ou, 'aws:PrincipalTag/x509Subject/CN': 'box-7' },
    });

    // Assess
    expect(decision).toBe(expected);
  });

  it('passes cdk-nag', () => {
    // Act
    const report = new AwsSolutionsChecks(anchored.app).validateScope(anchored.app);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toEqual([]);
  });
});

describe('by default', () => {
  it('makes the policy and no role', () => {
    expect(plain.stack.uploader.role).toBeUndefined();
    expect(Object.values(plain.json.Resources).filter((r) => r.Type === 'AWS::IAM::ManagedPolicy')).toHaveLength(1);
    expect(plain.json.Outputs).toHaveProperty(UPLOADER_OUTPUT_KEYS.policyArn);
    expect(plain.json.Outputs).not.toHaveProperty(UPLOADER_OUTPUT_KEYS.roleArn);
  });
});

describe('settings', () => {
  it.each([
    [{ uploaderSiteTag: 'site}' }, /uploaderSiteTag must be an IAM tag key/],
    [{ uploaderSiteTag: '' }, /uploaderSiteTag must be an IAM tag key/],
    [{ uploaderTrustAnchorArn: 'arn:aws:iam::123456789012:role/x' }, /uploaderTrustAnchorArn must be an IAM Roles Anywhere trust anchor ARN/],
  ])('refuses %o, naming the rule', (context, message) => {
    expect(() => stackConfigFromContext((k) => (context as Record<string, unknown>)[k])).toThrow(message);
  });
});
