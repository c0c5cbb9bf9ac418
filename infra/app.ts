/**
 * The CDK app: `npx cdk synth` / `npx cdk deploy` run this file under Node 24 type
 * stripping (see cdk.json). Configuration comes from CDK context (cdk.json or
 * `-c key=value`), validated before anything is built; cdk-nag's AwsSolutions pack
 * runs at synthesis and fails it on any unacknowledged finding.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { ConfigError } from '../core/config.ts';
import { stackConfigFromContext } from './config.ts';
import { FrameAffinityStack } from './stack.ts';

/** The `context` of cdk.json: the CLI passes it to the app; tests pass it themselves. */
export function cdkJsonContext(): Record<string, unknown> {
  const file = fileURLToPath(new URL('../cdk.json', import.meta.url));
  return (JSON.parse(readFileSync(file, 'utf8')) as { context?: Record<string, unknown> }).context ?? {};
}

/** Builds the app; exported so tests synthesise exactly what the CLI deploys. */
export function buildApp(app: App = new App()): { app: App; stack: FrameAffinityStack } {
  const config = stackConfigFromContext((key) => app.node.tryGetContext(key));
  const stack = new FrameAffinityStack(app, (app.node.tryGetContext('stackName') as string | undefined) ?? config.namePrefix, {
    config,
    description: 'FrameAffinity: lease-pinned S3 -> Lambda router -> SQS FIFO -> ECS GPU workers',
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { writeSuppressionsToCloudFormation: true }));
  return { app, stack };
}

if (import.meta.main) {
  try {
    buildApp().app.synth();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  }
}
