/**
 * Where the worker image comes from: a prebuilt ECR image pinned by digest (what a team
 * whose CI builds images deploys, with no Docker on the deploying machine), or the
 * Dockerfile built and pushed by `cdk deploy`.
 */
import * as path from 'node:path';
import * as ecrAssets from 'aws-cdk-lib/aws-ecr-assets';
import * as ecr from 'aws-cdk-lib/aws-ecr';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import type { Construct } from 'constructs';
import { ConfigError } from '../core/config.ts';
import { parseWorkerImage } from './config.ts';
import { REPO_ROOT } from './lambda-defaults.ts';

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
 * one in another region cannot be pulled through the VPC endpoints (replicate it).
 */
export function workerImageFromEcr(scope: Construct, id: string, uri: string): ecs.ContainerImage {
  const parts = parseWorkerImage(uri);
  if (!parts) throw new ConfigError(`workerImage must be an ECR image pinned by digest, <account>.dkr.ecr.<region>.amazonaws.com/<repository>@sha256:<digest> (got "${uri}")`);
  const repository = ecr.Repository.fromRepositoryAttributes(scope, id, {
    repositoryName: parts.repository,
    repositoryArn: `arn:${parts.partition}:ecr:${parts.region}:${parts.account}:repository/${parts.repository}`,
  });
  return ecs.ContainerImage.fromEcrRepository(repository, parts.digest);
}
