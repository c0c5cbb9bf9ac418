/**
 * GPU capacity shortages made visible (issue 23, item 6): Auto Scaling emits
 * "EC2 Instance Launch Unsuccessful" for every launch that fails (InsufficientInstanceCapacity,
 * a quota, an AMI or subnet problem). Without this, the only signal was a task that
 * never started, 15 minutes later, under the wrong name (TaskStartTimedOut).
 */
import { Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';

/** The detail type Auto Scaling gives a failed launch. */
export const LAUNCH_UNSUCCESSFUL = 'EC2 Instance Launch Unsuccessful';

/**
 * A rule that matches the group's failed launches and sends each, with its cause (Auto
 * Scaling's StatusMessage names the instance type, AZ and error), to the alarm topic.
 * The alarm on the rule's invocations (Monitoring, `InstanceLaunchFailures`) gives the
 * state, the message gives the reason.
 *
 * The topic lets EventBridge publish for this rule only (`aws:SourceArn`, confused-deputy
 * protection): aws-cdk-lib's SnsTopic target would grant the service unconditionally, or
 * give a role `kms:GenerateDataKey*` (a wildcard action the project rules out). The
 * topic's key lets EventBridge encrypt (Monitoring's key policy).
 */
export function instanceLaunchFailureRule(scope: Construct, id: string, autoScalingGroupName: string, topic: sns.ITopic): events.Rule {
  const rule = new events.Rule(scope, id, {
    description: 'FrameAffinity: a GPU instance launch of the worker group failed (capacity, quota, AMI or subnet)',
    eventPattern: { source: ['aws.autoscaling'], detailType: [LAUNCH_UNSUCCESSFUL], detail: { AutoScalingGroupName: [autoScalingGroupName] } },
  });
  const message = events.RuleTargetInput.fromText(
    `GPU instance launch failed in ${events.EventField.fromPath('$.detail.AutoScalingGroupName')}: ` +
      `${events.EventField.fromPath('$.detail.StatusMessage')} (docs/deploy.md, day-2 runbook: capacity shortage)`,
  );
  rule.addTarget({ bind: () => ({ arn: topic.topicArn, input: message }) });
  topic.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'EventBridgeLaunchFailuresPublish',
      principals: [new iam.ServicePrincipal('events.amazonaws.com')],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: { ArnEquals: { 'aws:SourceArn': rule.ruleArn }, StringEquals: { 'aws:SourceAccount': Stack.of(scope).account } },
    }),
  );
  return rule;
}
