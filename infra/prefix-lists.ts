/**
 * The AWS-managed prefix lists of the S3 and DynamoDB gateway endpoints
 * (`com.amazonaws.<region>.s3`, `...dynamodb`), looked up at deploy time. CloudFormation
 * exposes no prefix list id on a gateway endpoint, and a context lookup would tie the
 * template to one account and region; one DescribeManagedPrefixLists call (read only)
 * keeps the stack environment-agnostic. Used only with NAT gateways, to restrict egress.
 */
import { Stack } from 'aws-cdk-lib';
import * as cr from 'aws-cdk-lib/custom-resources';
import { Construct } from 'constructs';
import { acknowledge } from './nag.ts';

/** Singleton function id aws-cdk-lib gives every AwsCustomResource's provider in a stack. */
const AWS_CUSTOM_RESOURCE_SINGLETON = 'AWS679f53fac002430cb0da5b7982bd2287';

export class GatewayPrefixLists extends Construct {
  /** Prefix list id of S3 in the stack's region. */
  readonly s3: string;
  /** Prefix list id of DynamoDB in the stack's region. */
  readonly dynamoDb: string;

  constructor(scope: Construct, id: string) {
    super(scope, id);
    const stack = Stack.of(this);
    const lookup = (service: string) => {
      const call: cr.AwsSdkCall = {
        service: 'EC2',
        action: 'describeManagedPrefixLists',
        parameters: { Filters: [{ Name: 'prefix-list-name', Values: [`com.amazonaws.${stack.region}.${service}`] }] },
        physicalResourceId: cr.PhysicalResourceId.of(`${service}-prefix-list`),
        outputPaths: ['PrefixLists.0.PrefixListId'],
      };
      const resource = new cr.AwsCustomResource(this, service, {
        onCreate: call,
        onUpdate: call,
        // DescribeManagedPrefixLists has no resource-level permissions.
        policy: cr.AwsCustomResourcePolicy.fromSdkCalls({ resources: cr.AwsCustomResourcePolicy.ANY_RESOURCE }),
        installLatestAwsSdk: false,
      });
      return resource.getResponseField('PrefixLists.0.PrefixListId');
    };
    this.s3 = lookup('s3');
    this.dynamoDb = lookup('dynamodb');
    acknowledge(this, {
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: 'ec2:DescribeManagedPrefixLists (read only) has no resource-level permissions; IAM accepts only "*".',
    });
    const provider = stack.node.tryFindChild(AWS_CUSTOM_RESOURCE_SINGLETON);
    if (provider) {
      acknowledge(
        provider,
        {
          id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
          reason: 'aws-cdk-lib\'s AwsCustomResource provider (prefix list lookup at deploy time); its role is defined by aws-cdk-lib.',
        },
        { id: 'AwsSolutions-L1', reason: 'aws-cdk-lib\'s AwsCustomResource provider picks its own runtime.' },
      );
    }
  }
}
