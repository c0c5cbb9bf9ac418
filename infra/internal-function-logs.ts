/**
 * Log groups for the Lambda functions aws-cdk-lib adds on its own (issue 35, item 9): the
 * VPC's default-security-group restriction (`Custom::VpcRestrictDefaultSG`), the bucket
 * notifications handler, and, with NAT, the AwsCustomResource provider of the prefix-list
 * lookup. Left alone, each writes to `/aws/lambda/<name>`, a group Lambda creates at the
 * first run with no retention (kept forever) and outside the stack, while
 * `logRetentionDays` promises every log group.
 *
 * Each such function gets a log group of the stack (retention `logRetentionDays`,
 * removal policy of `retainData`), named in its `LoggingConfig`, so Lambda writes there
 * instead. The group is created before the function (a Ref), so before the custom
 * resource that invokes it.
 */
import { CfnResource, Stack, type RemovalPolicy } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';

/** Whether a function resource already names its log group (our functions do, through `logGroup`). */
function namesLogGroup(fn: CfnResource): boolean {
  if (fn instanceof lambda.CfnFunction) {
    const config = fn.loggingConfig as lambda.CfnFunction.LoggingConfigProperty | undefined;
    return config?.logGroup !== undefined;
  }
  // A plain CfnResource of type AWS::Lambda::Function (aws-cdk-lib's CustomResourceProvider,
  // the notifications handler) keeps the properties it was given in `_cfnProperties`.
  const props = (fn as unknown as { _cfnProperties?: { LoggingConfig?: { LogGroup?: unknown } } })._cfnProperties;
  return props?.LoggingConfig?.LogGroup !== undefined;
}

/**
 * Gives every Lambda function of `stack` that names no log group one of its own, with
 * `retention` and `removalPolicy`. Call once, after every construct is built. Returns the
 * groups made, by the function's logical id.
 */
export function giveLogGroupsToInternalFunctions(stack: Stack, retention: logs.RetentionDays, removalPolicy: RemovalPolicy): Map<string, logs.LogGroup> {
  const made = new Map<string, logs.LogGroup>();
  const functions = stack.node.findAll().filter((c): c is CfnResource => CfnResource.isCfnResource(c) && c.cfnResourceType === 'AWS::Lambda::Function' && Stack.of(c) === stack);
  let scope: Construct | undefined;
  for (const fn of functions) {
    if (namesLogGroup(fn)) continue;
    scope ??= new Construct(stack, 'InternalFunctionLogs');
    const id = stack.getLogicalId(fn);
    const group = new logs.LogGroup(scope, id, { retention, removalPolicy });
    fn.addPropertyOverride('LoggingConfig.LogGroup', group.logGroupName);
    made.set(id, group);
  }
  return made;
}
