/**
 * Defaults and the builder shared by the router and janitor Lambdas, kept in one
 * place (aws-solutions-constructs style): runtime, architecture, bundling, logging,
 * and an execution role without AWS-managed policies.
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** Repository root (infra/..): the esbuild project root and the worker image build context. */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Node.js 24 is the newest Lambda runtime aws-cdk-lib 2.276 knows. */
export const LAMBDA_RUNTIME = lambda.Runtime.NODEJS_24_X;

/**
 * esbuild options: ESM output, everything bundled (AWS SDK included, so the
 * deployed code runs the SDK version the tests ran), minified with source maps.
 * The banner gives bundled CommonJS dependencies a `require` in the ESM bundle.
 */
export const BUNDLING: nodejs.BundlingOptions = {
  format: nodejs.OutputFormat.ESM,
  target: 'node24',
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  externalModules: [],
  mainFields: ['module', 'main'],
  forceDockerBundling: false,
  banner: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
};

export interface ServiceFunctionProps {
  /** Path of the handler module, relative to the repository root. */
  readonly entry: string;
  readonly description: string;
  readonly environment: Record<string, string>;
  readonly timeout: Duration;
  readonly memorySize: number;
  readonly logRetention: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
}

/** A bundled Node.js function with its own log group and a role that can write only to it. */
export function buildServiceFunction(scope: Construct, id: string, props: ServiceFunctionProps): nodejs.NodejsFunction {
  const logGroup = new logs.LogGroup(scope, `${id}Logs`, { retention: props.logRetention, removalPolicy: props.removalPolicy });
  const role = new iam.Role(scope, `${id}Role`, {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: `${props.description} (execution role)`,
  });
  // In place of AWSLambdaBasicExecutionRole (managed, account-wide log access): this function's log group only.
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ actions: ['logs:CreateLogStream', 'logs:PutLogEvents'], resources: [logGroup.logGroupArn] }),
  );
  return new nodejs.NodejsFunction(scope, id, {
    entry: path.join(REPO_ROOT, props.entry),
    handler: 'handler',
    projectRoot: REPO_ROOT,
    depsLockFilePath: path.join(REPO_ROOT, 'package-lock.json'),
    runtime: LAMBDA_RUNTIME,
    architecture: lambda.Architecture.ARM_64,
    description: props.description,
    memorySize: props.memorySize,
    timeout: props.timeout,
    role,
    logGroup,
    environment: { NODE_OPTIONS: '--enable-source-maps', ...props.environment },
    bundling: BUNDLING,
  });
}
