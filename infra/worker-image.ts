/**
 * Where the worker image comes from: a prebuilt ECR image pinned by digest (what a team
 * whose CI builds images deploys, with no Docker on the deploying machine), or the
 * Dockerfile built and pushed by `cdk deploy`.
 */
import * as path from 'node:path';
import { Aws, CfnRule, Fn, Stack, Token } from 'aws-cdk-lib';
import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import * as ecr from 'aws-cdk-lib/aws-ecr';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import type { Construct } from 'constructs';
import { ConfigError } from '../core/config.ts';
import { parseWorkerImage } from './config.ts';
import { REPO_ROOT } from './lambda-defaults.ts';

export interface WorkerImageOptions {
  /**
   * Tasks may reach any HTTPS address through a NAT gateway (`natGateways` >= 1 and
   * `allowInternetEgress`): an image in another region is then pulled over the internet.
   * @default false: the image must be in the stack's region
   */
  readonly internetEgress?: boolean;
}

/** What to do about an image in another region; the synth error and the template rule say it. */
export function crossRegionImageMessage(imageRegion: string, stackRegion: string): string {
  return (
    `workerImage is in ${imageRegion}, the stack in ${stackRegion}: tasks pull through this region's VPC endpoints, so every pull would fail ` +
    `(CannotPullContainerError) and the janitor would relaunch in a loop. Replicate the repository to ${stackRegion} (ECR replication) and use that URI, ` +
    'or deploy with natGateways=1 allowInternetEgress=true to pull over the internet'
  );
}

/**
 * Refuses an image from another region (issue 35, item 8): at synthesis when the stack's
 * region is known; otherwise (an environment-agnostic synth) with a template rule, which
 * CloudFormation checks before it creates or updates anything.
 */
function requireStackRegion(scope: Construct, id: string, imageRegion: string): void {
  const region = Stack.of(scope).region;
  if (!Token.isUnresolved(region)) {
    if (region !== imageRegion) throw new ConfigError(crossRegionImageMessage(imageRegion, region));
    return;
  }
  new CfnRule(scope, `${id}InStackRegion`, {
    assertions: [{ assert: Fn.conditionEquals(Aws.REGION, imageRegion), assertDescription: crossRegionImageMessage(imageRegion, 'the region deployed to') }],
  });
}

/** The image `cdk deploy` builds from gpu-worker/Dockerfile (needs Docker with buildx, and the internet). */
export function workerImageFromDockerfile(): ecs.ContainerImage {
  return ecs.ContainerImage.fromAsset(REPO_ROOT, { file: path.join('gpu-worker', 'Dockerfile'), platform: ecrAssets.Platform.LINUX_AMD64 });
}

/**
 * A prebuilt image, `<account>.dkr.ecr.<region>.amazonaws.com/<repository>@sha256:<digest>`.
 * `ContainerImage.fromEcrRepository` grants the task execution role the pull
 * (ecr:BatchGetImage, ecr:GetDownloadUrlForLayer, ecr:BatchCheckLayerAvailability on this
 * repository, and ecr:GetAuthorizationToken) when the task definition binds it. A
 * repository in another account must also allow this account in its repository policy;
 * one in another region cannot be pulled through the VPC endpoints: refused unless the
 * tasks have internet egress (`options.internetEgress`).
 */
export function workerImageFromEcr(scope: Construct, id: string, uri: string, options: WorkerImageOptions = {}): ecs.ContainerImage {
  const parts = parseWorkerImage(uri);
  if (!parts) throw new ConfigError(`workerImage must be an ECR image pinned by digest, <account>.dkr.ecr.<region>.amazonaws.com/<repository>@sha256:<digest> (got "${uri}")`);
  if (!options.internetEgress) requireStackRegion(scope, id, parts.region);
  const repository = ecr.Repository.fromRepositoryAttributes(scope, id, {
    repositoryName: parts.repository,
    repositoryArn: `arn:${parts.partition}:ecr:${parts.region}:${parts.account}:repository/${parts.repository}`,
  });
  return ecs.ContainerImage.fromEcrRepository(repository, parts.digest);
}
