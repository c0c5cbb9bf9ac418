import { Duration, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import { FRAME_PREFIX } from '../core/config.ts';
import { SITE_SEPARATOR } from '../core/ingest/site.ts';
import { acknowledge } from './nag.ts';

/** The principal tag that names an uploader's site, unless `uploaderSiteTag` says otherwise. */
export const DEFAULT_SITE_TAG = 'frameaffinity-site';

/**
 * What `affinity upload`, `affinity stream` and `affinity edge` call, and nothing more:
 * PutObject for frames, segments and end markers (single-part: the CLI never uses
 * multipart), GetObject because S3 authorizes HeadObject with it (`stream` HEADs the
 * highest segment at start for its frame count), ListBucket for the one listing of a
 * video's prefix at start (`upload` resumes, `stream` continues the numbering), and
 * DescribeStacks of this stack, where `--stack <name>` reads the bucket's name.
 */
export const UPLOADER_OBJECT_ACTIONS = ['s3:PutObject', 's3:GetObject'] as const;
export const UPLOADER_LIST_ACTION = 's3:ListBucket';
/** `affinity --stack <name>` finds the bucket in the stack's outputs (cli/target.ts). */
export const UPLOADER_STACK_ACTION = 'cloudformation:DescribeStacks';

/**
 * Stack outputs for whoever provisions edge boxes (not the operator CLI's STACK_OUTPUT_KEYS,
 * which a stack must all have: the role exists only with a trust anchor).
 */
export const UPLOADER_OUTPUT_KEYS = { policyArn: 'UploaderPolicyArn', roleArn: 'UploaderRoleArn' } as const;

/** Statement ids of the uploader policy (tests find and remove them by these). */
export const UPLOADER_SIDS = {
  objects: 'OwnSiteObjects',
  list: 'ListOwnSitePrefixes',
  badTag: 'DenyTagThatIsNoSite',
  stack: 'ReadThisStacksOutputs',
} as const;

export interface UploaderAccessProps {
  readonly bucket: s3.Bucket;
  /**
   * The principal tag whose value is the uploader's site: a tag on the role or user, or a
   * session tag (`sts:TagSession`; IAM Roles Anywhere sets `x509Subject/CN`, `x509Subject/OU`
   * and the like from the certificate).
   * @default DEFAULT_SITE_TAG
   */
  readonly siteTag?: string;
  /**
   * An IAM Roles Anywhere trust anchor: when set, a role with the policy is made that
   * Roles Anywhere may hand to a certificate of that anchor (no long-term keys on the box).
   * @default no role
   */
  readonly trustAnchorArn?: string;
}

/**
 * The least privilege of an edge uploader (issue 45): a managed policy that lets a
 * principal tagged with site `S` write, HEAD and list `frames/S.*` in the frame bucket, and
 * read this stack's outputs, nothing else, so that one policy serves every site and a stolen
 * box can write only its own site's cameras. A tag that is no site name (empty, or holding the separator `.` or a
 * `/`) is denied outright: `a.b` would otherwise reach into site `a`'s cameras. With no tag
 * at all, the variable does not resolve and nothing matches.
 */
export class UploaderAccess extends Construct {
  readonly policy: iam.ManagedPolicy;
  readonly role?: iam.Role;
  readonly siteTag: string;

  constructor(scope: Construct, id: string, props: UploaderAccessProps) {
    super(scope, id);
    this.siteTag = props.siteTag ?? DEFAULT_SITE_TAG;
    const site = `\${aws:PrincipalTag/${this.siteTag}}`;
    const ownPrefix = `${FRAME_PREFIX}${site}${SITE_SEPARATOR}*`;
    this.policy = new iam.ManagedPolicy(this, 'Policy', {
      description: `FrameAffinity uploader: write, HEAD and list frames/<site>.* only, <site> being the principal tag ${this.siteTag}`,
      statements: [
        new iam.PolicyStatement({ sid: UPLOADER_SIDS.objects, actions: [...UPLOADER_OBJECT_ACTIONS], resources: [props.bucket.arnForObjects(ownPrefix)] }),
        new iam.PolicyStatement({
          sid: UPLOADER_SIDS.list,
          actions: [UPLOADER_LIST_ACTION],
          resources: [props.bucket.bucketArn],
          conditions: { StringLike: { 's3:prefix': ownPrefix } },
        }),
        new iam.PolicyStatement({ sid: UPLOADER_SIDS.stack, actions: [UPLOADER_STACK_ACTION], resources: [Stack.of(this).stackId] }),
        new iam.PolicyStatement({
          sid: UPLOADER_SIDS.badTag,
          effect: iam.Effect.DENY,
          actions: [...UPLOADER_OBJECT_ACTIONS, UPLOADER_LIST_ACTION],
          resources: [props.bucket.bucketArn, props.bucket.arnForObjects('*')],
          conditions: { StringLike: { [`aws:PrincipalTag/${this.siteTag}`]: ['', `*${SITE_SEPARATOR}*`, '*/*'] } },
        }),
      ],
    });
    const bucketId = Stack.of(this).getLogicalId(props.bucket.node.defaultChild as never);
    acknowledge(this.policy, {
      id: `AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${FRAME_PREFIX}<aws:PrincipalTag/${this.siteTag}>${SITE_SEPARATOR}*]`,
      reason: "Object-level write, HEAD and listing of the uploader's own site's videos only (frames/<site>.*, the site from a principal tag): keys are per video and frame, so they cannot be listed in advance.",
    });
    if (props.trustAnchorArn) {
      const rolesAnywhere = new iam.ServicePrincipal('rolesanywhere.amazonaws.com', { conditions: { ArnEquals: { 'aws:SourceArn': props.trustAnchorArn } } });
      this.role = new iam.Role(this, 'Role', {
        description: 'FrameAffinity edge uploader, for IAM Roles Anywhere certificates of one trust anchor',
        assumedBy: rolesAnywhere,
        managedPolicies: [this.policy],
        maxSessionDuration: Duration.hours(1),
      });
      // Roles Anywhere tags the session with the certificate's subject and may set a source identity.
      this.role.assumeRolePolicy!.addStatements(
        new iam.PolicyStatement({
          principals: [new iam.ServicePrincipal('rolesanywhere.amazonaws.com')],
          actions: ['sts:TagSession', 'sts:SetSourceIdentity'],
          conditions: { ArnEquals: { 'aws:SourceArn': props.trustAnchorArn } },
        }),
      );
    }
  }
}
