/**
 * cdk-nag acknowledgements. Each one is made next to the resource it concerns, via
 * {@link acknowledge}, and is listed with its reason in docs/deploy.md.
 */
import { Stack, Token, Validations } from 'aws-cdk-lib';
import type { IConstruct } from 'constructs';

/** Acknowledges cdk-nag findings (`AwsSolutions-XX` or `AwsSolutions-XX[Finding]`) on one construct and its children. */
export function acknowledge(scope: IConstruct, ...rules: { readonly id: string; readonly reason: string }[]): void {
  Validations.of(scope).acknowledge(...rules);
}

/**
 * How cdk-nag prints `arn:${partition}:${service}:${region}:${account}:` for a
 * stack: pseudo parameters as `<AWS::X>` while they are tokens, literals once the
 * stack has an explicit environment.
 */
export function nagArnPrefix(stack: Stack, service: string): string {
  const show = (value: string, pseudo: string) => (Token.isUnresolved(value) ? `<AWS::${pseudo}>` : value);
  return `arn:${show(stack.partition, 'Partition')}:${service}:${show(stack.region, 'Region')}:${show(stack.account, 'AccountId')}:`;
}
