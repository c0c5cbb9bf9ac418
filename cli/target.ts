/**
 * What the CLI talks to: the local stack (from `<stateDir>/stack.json`) or a deployed
 * CloudFormation stack (from its outputs). Every command receives a {@link Target} and
 * never cares which one it is.
 */
import { STACK_OUTPUT_KEYS } from '../core/stack-outputs.ts';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { SQSClient } from '@aws-sdk/client-sqs';
import { DEFAULT_TUNABLES, resourceNames } from '../core/config.ts';
import { clientConfig, type StackFile } from '../core/stack-file.ts';
import { createAwsClientsFrom } from '../core/aws/clients.ts';
import { CliError } from './io.ts';

/**
 * CloudFormation output keys the deployed stack must emit; infra imports these so the
 * names cannot drift apart.
 */
export { STACK_OUTPUT_KEYS };

export type StackOutputKey = (typeof STACK_OUTPUT_KEYS)[keyof typeof STACK_OUTPUT_KEYS];

/** Where the resources are, and clients for them. */
export interface Target {
  /** Human-readable origin, e.g. `local stack (.local/stack.json)`. */
  readonly description: string;
  readonly kind: 'local' | 'aws';
  readonly region: string;
  readonly bucket: string;
  readonly leasesTable: string;
  readonly resultsTable: string;
  /** The analytics events outbox (`affinity events`, `affinity counts`). */
  readonly eventsTable: string;
  readonly pinnedSlotIndex: string;
  readonly ingestQueueUrl: string;
  readonly ingestDlqUrl: string;
  readonly slotCount: number;
  readonly slotQueueUrls: readonly string[];
  readonly slotDlqUrls: readonly string[];
  /** How long a force-released video is kept before TTL may collect it. */
  readonly releasedVideoRetentionDays: number;
  /** First frame number of every video (tunables.firstFrameNumber). */
  readonly firstFrameNumber: number;
  /** Slot lease TTL, for judging heartbeat ages. */
  readonly slotLeaseTtlSeconds: number;
  readonly clients: { readonly s3: S3Client; readonly sqs: SQSClient; readonly ddb: DynamoDBDocumentClient };
  /** Releases the clients' sockets. */
  close(): void;
}

export interface TargetOptions {
  /** Directory holding the local stack's stack.json. @default '.local' */
  readonly stateDir?: string;
  /** CloudFormation stack name; when set, the deployed stack is the target. */
  readonly stack?: string;
  readonly region?: string;
}

/** Picks the target from the global flags. */
export async function resolveTarget(o: TargetOptions): Promise<Target> {
  if (o.stack) return loadAwsTarget(o.stack, o.region);
  return loadLocalTarget(o.stateDir ?? '.local');
}

/** Reads `<stateDir>/stack.json` written by the running local stack. */
export function loadLocalTarget(stateDir: string): Target {
  const file = join(resolve(stateDir), 'stack.json');
  if (!existsSync(file)) {
    throw new CliError(
      `no local stack found: ${file} does not exist.\n` +
        `Start one with \`npm start\` (or pass --state-dir DIR, or --stack NAME for a deployed stack).`,
    );
  }
  let s: StackFile;
  try {
    s = JSON.parse(readFileSync(file, 'utf8')) as StackFile;
  } catch (e) {
    throw new CliError(`cannot read ${file}: ${(e as Error).message}`);
  }
  const clients = createAwsClientsFrom(clientConfig(s));
  return {
    description: `local stack (${file})`,
    kind: 'local',
    region: s.region,
    bucket: s.bucket,
    leasesTable: s.tables.leases,
    resultsTable: s.tables.results,
    eventsTable: s.wiring.eventsTable,
    pinnedSlotIndex: s.wiring.pinnedSlotIndex,
    ingestQueueUrl: s.queues.ingest,
    ingestDlqUrl: s.queues.ingestDlq,
    slotCount: s.queues.slots.length,
    slotQueueUrls: s.queues.slots,
    slotDlqUrls: s.queues.slotDlqs,
    releasedVideoRetentionDays: s.tunables.releasedVideoRetentionDays,
    firstFrameNumber: s.tunables.firstFrameNumber,
    slotLeaseTtlSeconds: s.tunables.slotLeaseTtlSeconds,
    clients,
    close: () => clients.destroy(),
  };
}

/** The resource part of a target, derived from CloudFormation outputs (pure; throws on missing keys). */
export function resourcesFromOutputs(outputs: Readonly<Record<string, string>>, stackName: string) {
  const missing = Object.values(STACK_OUTPUT_KEYS).filter((k) => !outputs[k]);
  if (missing.length > 0) {
    throw new CliError(`stack ${stackName} lacks the outputs ${missing.join(', ')}; is it a frame-affinity stack, and fully deployed?`);
  }
  const slotCount = Number(outputs[STACK_OUTPUT_KEYS.slotCount]);
  if (!Number.isInteger(slotCount) || slotCount < 1) throw new CliError(`stack ${stackName}: output SlotCount is not a positive integer`);
  const prefix = outputs[STACK_OUTPUT_KEYS.slotQueueUrlPrefix]!;
  return {
    bucket: outputs[STACK_OUTPUT_KEYS.frameBucketName]!,
    leasesTable: outputs[STACK_OUTPUT_KEYS.leasesTableName]!,
    resultsTable: outputs[STACK_OUTPUT_KEYS.resultsTableName]!,
    eventsTable: outputs[STACK_OUTPUT_KEYS.eventsTableName]!,
    ingestQueueUrl: outputs[STACK_OUTPUT_KEYS.ingestQueueUrl]!,
    ingestDlqUrl: outputs[STACK_OUTPUT_KEYS.ingestDlqUrl]!,
    slotCount,
    slotQueueUrls: Array.from({ length: slotCount }, (_, i) => `${prefix}${i}.fifo`),
    slotDlqUrls: Array.from({ length: slotCount }, (_, i) => `${prefix}${i}-dlq.fifo`),
  };
}

/** Reads a deployed stack's outputs with the normal AWS credential chain. */
export async function loadAwsTarget(stackName: string, region?: string): Promise<Target> {
  const effectiveRegion = region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION;
  const common = effectiveRegion ? { region: effectiveRegion } : {};
  const cfn = new CloudFormationClient(common);
  let outputs: Record<string, string>;
  let resolvedRegion: string;
  try {
    const r = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
    const stack = r.Stacks?.[0];
    if (!stack) throw new CliError(`stack ${stackName} not found`);
    outputs = Object.fromEntries((stack.Outputs ?? []).filter((o) => o.OutputKey && o.OutputValue).map((o) => [o.OutputKey!, o.OutputValue!]));
    resolvedRegion = await cfn.config.region();
  } catch (e) {
    if (e instanceof CliError) throw e;
    throw new CliError(`cannot describe CloudFormation stack ${stackName}: ${(e as Error).message}`);
  } finally {
    cfn.destroy();
  }
  const res = resourcesFromOutputs(outputs, stackName);
  const clients = createAwsClientsFrom({ s3: { region: resolvedRegion }, sqs: { region: resolvedRegion }, dynamodb: { region: resolvedRegion } });
  return {
    description: `CloudFormation stack ${stackName} (${resolvedRegion})`,
    kind: 'aws',
    region: resolvedRegion,
    ...res,
    pinnedSlotIndex: resourceNames().pinnedSlotIndex,
    releasedVideoRetentionDays: DEFAULT_TUNABLES.releasedVideoRetentionDays,
    firstFrameNumber: DEFAULT_TUNABLES.firstFrameNumber,
    slotLeaseTtlSeconds: DEFAULT_TUNABLES.slotLeaseTtlSeconds,
    clients,
    close: () => clients.destroy(),
  };
}
