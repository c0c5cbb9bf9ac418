/**
 * The alarm topic's KMS key and topic policy: who may publish alarm notifications
 * (CloudWatch for this stack's alarms, EventBridge for the launch-failure rule).
 */
import { ArnFormat, Duration, Stack, type RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';

/** Sid of the key-policy statement that lets EventBridge encrypt the launch-failure messages. */
export const EVENTBRIDGE_KEY_STATEMENT_SID = 'EventBridgeLaunchFailuresPublish';

/**
 * A customer key: SNS's AWS-managed key does not let CloudWatch alarms publish.
 * The key policy spells out its actions instead of the default `kms:*` for the account.
 */
export function buildAlarmKey(scope: Construct, removalPolicy: RemovalPolicy): kms.Key {
  const stack = Stack.of(scope);
  const policy = new iam.PolicyDocument({
    statements: [
      new iam.PolicyStatement({
        sid: 'AccountAdministersKey',
        principals: [new iam.AccountRootPrincipal()],
        actions: [
          'kms:DescribeKey',
          'kms:GetKeyPolicy',
          'kms:PutKeyPolicy',
          'kms:GetKeyRotationStatus',
          'kms:EnableKeyRotation',
          'kms:DisableKeyRotation',
          'kms:EnableKey',
          'kms:DisableKey',
          'kms:UpdateKeyDescription',
          'kms:ListResourceTags',
          'kms:TagResource',
          'kms:UntagResource',
          'kms:ScheduleKeyDeletion',
          'kms:CancelKeyDeletion',
          'kms:CreateGrant',
          'kms:ListGrants',
          'kms:RevokeGrant',
          'kms:Encrypt',
          'kms:Decrypt',
          'kms:GenerateDataKey',
        ],
        resources: ['*'],
      }),
      new iam.PolicyStatement({
        sid: 'CloudWatchAlarmsPublish',
        principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: ['*'],
        conditions: { StringEquals: { 'aws:SourceAccount': stack.account } },
      }),
      // No condition, on purpose: SNS documents aws:SourceAccount, aws:SourceArn and
      // aws:SourceOrgID in a KMS key policy as not supported for EventBridge-to-encrypted
      // topics (sns-key-management.html), and with one EventBridge's publish fails, so the
      // launch-failure messages never arrive (issue 35, item 2). The topic policy is the
      // gate instead: EventBridge may publish for this stack's rule only (aws:SourceArn,
      // instance-launch-events.ts), and without a publish there is no data key to make.
      new iam.PolicyStatement({
        sid: EVENTBRIDGE_KEY_STATEMENT_SID,
        principals: [new iam.ServicePrincipal('events.amazonaws.com')],
        actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
        resources: ['*'],
      }),
    ],
  });
  // The key only encrypts alarm notifications in flight: nothing is lost with it, so it
  // goes with the stack unless the deployment retains its data.
  return new kms.Key(scope, 'AlarmKey', {
    description: 'FrameAffinity alarm topic',
    enableKeyRotation: true,
    policy,
    removalPolicy,
    pendingWindow: Duration.days(7),
  });
}

/**
 * A topic policy replaces SNS's default one, and `enforceSSL` writes only a Deny: without
 * this Allow no alarm could publish. Scoped to this account's alarms named with the
 * stack's prefix in this region (confused-deputy protection).
 */
export function allowCloudWatchToPublish(topic: sns.Topic, alarmNamePrefix: string): void {
  const stack = Stack.of(topic);
  topic.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'CloudWatchAlarmsPublish',
      principals: [new iam.ServicePrincipal('cloudwatch.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: {
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'cloudwatch', resource: 'alarm', resourceName: `${alarmNamePrefix}-*`, arnFormat: ArnFormat.COLON_RESOURCE_NAME }) },
      },
    }),
  );
}

