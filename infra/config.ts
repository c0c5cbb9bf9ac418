/**
 * Stack configuration: the tunables from core/config.ts plus the settings only the
 * deployment has (instance type, network, retention), declared once in
 * {@link DEPLOYMENT_SETTINGS} the way core/config/tunables.ts declares the tunables
 * (default, range, unit, meaning; docs/deploy.md's table is generated from it). Values
 * come from CDK context (`cdk.json` or `-c key=value`).
 */
import {
  ConfigError,
  DEFAULT_TUNABLES,
  TUNABLES,
  defaultsOf,
  rangeProblems,
  settingsMarkdownTable,
  validateTunables,
  type SettingsOf,
  type SettingsTable,
  type Tunables,
} from '../core/config.ts';
import { INTERFACE_ENDPOINTS } from './network.ts';
import { DEFAULT_SITE_TAG } from './uploader-access.ts';
import { planWorkloadSubnets, type SubnetPlan } from './subnet-plan.ts';
import { gpuInstanceProblem, gpuInstanceSpec, perGpuShare } from './gpu-instances.ts';
import { SPARE_WORKER_MIB, workerMemoryProblems } from '../core/config/worker-memory.ts';

/** CloudWatch Logs accepts only these retention values. */
const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653] as const;

/** NVIDIA GPU instance types (families the ECS GPU AMI supports). */
const GPU_INSTANCE_TYPE = /^(g4dn|g5|g6|g6e|gr6|p3|p3dn|p4d|p4de|p5|p5e|p5en)\.(\d*x?large|metal(-\d+xl)?)$/;

/** Zone names: `us-east-1a`, and Local Zones such as `us-west-2-lax-1a`. */
const AVAILABILITY_ZONE = /^[a-z]{2}(-[a-z]+)+-\d+(-[a-z]+-\d+)?[a-z]$/;

/** ECR image pinned by digest: account, region, repository, digest. */
const ECR_IMAGE = /^(\d{12})\.dkr\.ecr\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(\.cn)?\/([a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*)@(sha256:[0-9a-f]{64})$/;

/** A comma-separated list of `item`s (spaces around the commas allowed), as a pattern. */
function listPattern(item: RegExp): RegExp {
  const one = `\\s*(?:${item.source.replace(/^\^|\$$/g, '')})\\s*`;
  return new RegExp(`^${one}(?:,${one})*$`);
}

/** Deployment settings that are not runtime tunables: default, range, unit, meaning. */
export const DEPLOYMENT_SETTINGS = {
  /** Prefix of every physical resource name (see `resourceNames`). */
  namePrefix: {
    kind: 'text', default: 'FrameAffinity', pattern: /^[A-Za-z][A-Za-z0-9-]{0,39}$/, rule: 'start with a letter and hold at most 40 letters, digits or dashes',
    meaning: 'Prefix of physical names (tables, queues, task family, dashboard) and the stack name (override the stack name alone with `-c stackName=...`)',
  },
  /** EC2 instance type of the GPU container instances; must have at least one NVIDIA GPU (families the ECS GPU AMI supports). */
  instanceType: {
    kind: 'text', default: 'g5.xlarge', pattern: GPU_INSTANCE_TYPE,
    rule: 'be an NVIDIA GPU instance type such as g5.xlarge or g6.xlarge',
    meaning: 'GPU instance type (g4dn/g5/g6/g6e/gr6/p4/p5 families; p3, V100, is refused: infra/gpu-instances.ts). `g6.xlarge` (L4) is cheaper per hour; `g5.xlarge` (A10G) faster per frame',
  },
  /** Most GPU instances the capacity provider may run. 0 means one per slot. */
  maxInstances: { kind: 'integer', default: 0, min: 0, max: 1000, unit: 'instances', meaning: 'Most GPU instances; 0 = `slotCount` (one worker per single-GPU instance)' },
  /** CPU units reserved by one worker task (1024 = one vCPU). */
  taskCpuUnits: { kind: 'integer', default: 3072, min: 256, max: 196_608, unit: 'CPU units', meaning: 'CPU reserved per worker, 1024 = one vCPU (fits a 4-vCPU instance with the agent)' },
  /** Memory reserved by one worker task. */
  taskMemoryMiB: { kind: 'integer', default: 12288, min: 512, max: 2_097_152, unit: 'MiB', meaning: 'Memory reserved per worker (fits a 16 GiB instance)' },
  /**
   * The worker container's hard memory limit (`memoryLimitMiB`): past it the kernel kills
   * the worker (exit 137) instead of the instance running out. Above `taskMemoryMiB`, below
   * each instance type's memory per GPU less 1 GiB for the OS and the ECS agent; the
   * segment decoders must fit it (`maxOpenSegments`, `maxSegmentBytes`: checked at synth).
   */
  taskMemoryLimitMiB: {
    kind: 'integer', default: 14336, min: 1024, max: 2_097_152, unit: 'MiB',
    meaning: 'Hard memory limit of the worker container (killed past it); above `taskMemoryMiB`, at most the instance\'s memory per GPU less 1 GiB; `maxOpenSegments` decoders of `maxSegmentBytes` must fit it',
  },
  /**
   * The ECS GPU AMI, pinned: an AMI id (`ami-...`) every instance launches from. Empty: the
   * ECS-optimized Amazon Linux 2023 GPU AMI, looked up once at synth and kept in
   * cdk.context.json when the stack's account and region are known (an environment-agnostic
   * synth resolves the SSM parameter at each deploy instead: a warning says so).
   */
  gpuAmiId: {
    kind: 'text', default: '', pattern: /^ami-[0-9a-f]{8,17}$/, emptyMeans: 'the ECS GPU AMI, looked up once and cached in cdk.context.json',
    rule: 'be an AMI id (ami- and 8 or 17 hex digits) or empty',
    meaning: 'AMI of the GPU instances, pinned (an ECS GPU AMI id of the region); empty = the ECS-optimized AL2023 GPU AMI looked up at synth and kept in cdk.context.json (`cdk context --reset` to move on)',
  },
  /** Root EBS volume of each GPU instance. */
  rootVolumeGiB: { kind: 'integer', default: 100, min: 30, max: 16_384, unit: 'GiB', meaning: 'Encrypted gp3 root volume (AMI + CUDA image layers)' },
  /** Availability zones of the VPC. */
  maxAzs: { kind: 'integer', default: 2, min: 1, max: 6, unit: 'zones', meaning: 'Availability zones (the region\'s first `maxAzs`; ignored when `availabilityZones` is set)' },
  /** NAT gateways for egress; 0 keeps the subnets isolated and reaches AWS through VPC endpoints only. */
  natGateways: { kind: 'integer', default: 0, min: 0, max: 6, unit: 'gateways', meaning: 'NAT gateways, at most `maxAzs` (or the listed `availabilityZones`); 0 = isolated subnets, endpoints only (see §4)' },
  /**
   * The seven interface endpoints (ECS x3, ECR x2, Logs, SQS) in every zone, about $14.60
   * a zone-month each (issue 44). false (only with `natGateways` >= 1): none; the tasks
   * reach those APIs through the NAT, S3 and DynamoDB still through the free gateway
   * endpoints. The small-fleet profile (docs/deploy.md §8): it gives up private
   * connectivity and egress limited to AWS (the tasks may then reach any HTTPS address).
   */
  interfaceEndpoints: { kind: 'flag', default: true, meaning: 'The 7 interface endpoints (ECS x3, ECR x2, Logs, SQS) in every zone, ≈ $102 a month in 2 zones. false (needs `natGateways` ≥ 1): none, those APIs through the NAT (a gateway ≈ $36.50 a month with its Elastic IP; a `natInstanceType` instance ≈ $7.50) and egress to any HTTPS address: the small-fleet profile (§4, §8)' },
  /**
   * NAT instances instead of NAT gateways (issue 44, decision 79): with `natGateways` = N,
   * N instances of this type (one per zone, Amazon Linux 2023, `ec2.NatProvider.instanceV2`)
   * instead of N managed gateways. A t4g.nano is about $3.07 a month plus its public IPv4
   * address ($3.65) and an 8 GiB encrypted gp3 root volume ($0.64), against $32.85 a
   * gateway plus its address. Empty: NAT gateways. What it gives up (docs/deploy.md §4):
   * an instance to patch (a deploy replaces it with the latest AMI), a small instance's
   * bandwidth, no managed high availability (EC2's automatic recovery only).
   */
  natInstanceType: {
    kind: 'text', default: '', pattern: /^(t4g|t3|t3a|c6gn|c7gn)\.(nano|micro|small|medium|large|\d*xlarge)$/, emptyMeans: 'NAT gateways',
    rule: 'be a burstable or network-optimised instance type such as t4g.nano, t4g.micro or t3.micro, or empty',
    meaning: 'NAT instances of this type (`t4g.nano`: ≈ $3.07 a month + $3.65 for its public IPv4) instead of NAT gateways (≈ $32.85 each + their IPv4): `natGateways` of them, one per zone; needs `natGateways` ≥ 1. Egress restricted as with gateways; the instance admits only the workload subnets and sends only HTTPS. Gives up a managed, highly available NAT: an instance to patch (redeploy), a small instance\'s bandwidth (§4, §8)',
  },
  /**
   * Point-in-time recovery of the three DynamoDB tables (issue 44): $0.20 per GB-month of
   * table size. false: no restore to any second of the last 35 days (a corrupt or deleted
   * checkpoint or result can only be restored from an on-demand backup you made).
   */
  pointInTimeRecovery: {
    kind: 'flag', default: true,
    meaning: 'Point-in-time recovery of the leases, results and events tables ($0.20 per GB-month of table size; §8 prices it per camera). false: no restore to any second of the last 35 days; only on-demand backups you take yourself (§8)',
  },
  /**
   * Container Insights (standard) on the ECS cluster (issue 44): about 20 cluster and task
   * metrics at $0.30 a metric-month while instances run, plus its performance log events.
   * Nothing in the stack reads them (alarms and the dashboard use the stack's own metrics
   * and AWS/SQS); false loses only the console's per-task CPU, memory and network charts.
   */
  containerInsights: {
    kind: 'flag', default: true,
    meaning: 'Container Insights on the ECS cluster: about 20 cluster and task metrics ≈ $6 a month while workers run (prorated by the hour) plus its performance log events at $0.50/GB. No alarm or dashboard widget reads them; false loses the console\'s per-task CPU, memory and network charts (§8)',
  },
  /**
   * DynamoDB capacity (issue 44): 0 = on demand (the default: pay per request, no
   * throttling below the account's limits). N = provisioned, each table and index auto
   * scaling its reads and writes between 1 and N units at 70 % utilisation: a steady fleet
   * of cameras pays about 2.4 times less per write (docs/deploy.md §8), at the price of
   * throttling whatever runs past N or past auto scaling's reaction (minutes): a backlog
   * after an outage, a fleet that grew. The worker retries a throttled commit (it is an
   * unknown outcome, decided by commit id), so nothing is lost or doubled; it is late.
   */
  provisionedCapacityUnits: {
    kind: 'integer', default: 0, min: 1, max: 40_000, off: { value: 0, meaning: 'on demand' }, unit: 'units',
    meaning: 'DynamoDB capacity: 0 = on demand; N = provisioned, each table and index auto scaling reads and writes between 1 and N units at 70 % utilisation (about 2.4 times cheaper per write for a steady fleet; what runs past N or ahead of auto scaling is throttled and retried, late: §8)',
  },
  /** Uploaded frames under `frames/` expire after this many days. */
  frameRetentionDays: { kind: 'integer', default: 30, min: 1, max: 36_500, unit: 'days', meaning: 'Lifecycle expiry of `frames/` objects (results live in DynamoDB)' },
  /**
   * GPU instance types of a mixed-instances group, comma-separated, in order of
   * preference (e.g. `g5.xlarge,g6.xlarge,g4dn.xlarge`): when one type runs out in an AZ,
   * the group launches the next. Empty = `instanceType` alone. Every type must fit one
   * worker task (`taskCpuUnits`, `taskMemoryMiB`, one GPU). At most 20, distinct
   * ({@link instanceTypesProblems}).
   */
  instanceTypes: {
    kind: 'text', default: '', pattern: listPattern(GPU_INSTANCE_TYPE), emptyMeans: '`instanceType` alone',
    rule: 'be a list of NVIDIA GPU instance types such as g5.xlarge,g6.xlarge,g4dn.xlarge or empty',
    meaning: 'Several GPU types, in order of preference (`g5.xlarge,g6.xlarge,g4dn.xlarge`): the group becomes a prioritized on-demand mixed-instances group, so a type without capacity in an AZ is replaced by the next. Each must fit one task (`taskCpuUnits`, `taskMemoryMiB`, 1 GPU); at most 20, distinct',
  },
  /** Availability zones of the VPC, comma-separated (e.g. `us-east-1a,us-east-1c`); empty = the region's first `maxAzs`. Choose zones that offer the instance types. */
  availabilityZones: {
    kind: 'text', default: '', pattern: listPattern(AVAILABILITY_ZONE), emptyMeans: 'the region\'s first `maxAzs`',
    rule: 'be a list of zone names such as us-east-1a,us-east-1c or empty',
    meaning: 'Zones by name, 1 to 6 distinct (`us-east-1a,us-east-1c`); at least `natGateways`. Choose zones that offer your GPU types: `aws ec2 describe-instance-type-offerings --location-type availability-zone --filters Name=instance-type,Values=g5.xlarge,g6.xlarge --query \'InstanceTypeOfferings[].[InstanceType,Location]\' --output text`',
  },
  /**
   * Prefix length of each workload subnet; 0 = sized from `slotCount` (see
   * `planWorkloadSubnets`). A fixed value that cannot hold the fleet fails synthesis.
   */
  workloadSubnetMask: {
    kind: 'integer', default: 0, min: 16, max: 28, off: { value: 0, meaning: 'sized from `slotCount`' }, unit: 'prefix length',
    meaning: 'Prefix length of each workload subnet (§3, *Scaling to 1,000 slots*). A fixed value too small for the fleet fails synthesis',
  },
  /**
   * Size each workload subnet for the whole fleet, so that every instance can run in one
   * AZ when a GPU type runs out in the other(s). false = the fleet spread over the AZs.
   */
  oneAzHoldsFleet: { kind: 'flag', default: true, meaning: 'Size each workload subnet for the whole fleet, so every instance can run in one AZ when a GPU type runs out in the other(s); false = the fleet spread evenly' },
  /**
   * Prebuilt worker image, `<account>.dkr.ecr.<region>.amazonaws.com/<repository>@sha256:<digest>`:
   * deploying needs no Docker. Empty = built from gpu-worker/Dockerfile at deploy time.
   * {@link parseWorkerImage} reads its parts.
   */
  workerImage: {
    kind: 'text', default: '', pattern: ECR_IMAGE, emptyMeans: 'built from gpu-worker/Dockerfile at deploy time',
    rule: 'be an ECR image pinned by digest (<account>.dkr.ecr.<region>.amazonaws.com/<repository>@sha256:<64 hex digits>) or empty',
    meaning: 'Prebuilt worker image in ECR, pinned by digest; the execution role gets pull permission on that repository, and `cdk deploy` needs no Docker',
  },
  /** SHA-256 (hex) the model named by `modelUri` must have; the worker refuses any other bytes. Empty = not checked. Needs `modelUri`. */
  modelSha256: {
    kind: 'text', default: '', pattern: /^[0-9a-f]{64}$/, emptyMeans: 'not checked', rule: 'be 64 lowercase hex digits or empty',
    meaning: 'SHA-256 of the model named by `modelUri`; the worker refuses to start on other bytes (the task stops with the reason). Needs `modelUri`; reaches the worker as `MODEL_SHA256`',
  },
  /**
   * IAM role ARN that alone may write or delete objects in the model bucket (a
   * bucket-policy Deny covers every other principal), and delete the models an older
   * deploy left under the frame bucket's `models/` (decision 78). Empty = nobody may.
   */
  modelWriterRoleArn: {
    kind: 'text', default: '', pattern: /^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/, emptyMeans: 'the model bucket is read-only to everyone',
    rule: 'be an IAM role ARN (arn:aws:iam::<account>:role/<name>) or empty',
    meaning: 'The IAM role that alone may write or delete in the model bucket (output `ModelBucketName`; a bucket-policy Deny covers everyone else, account root included), and delete the old copies under the frame bucket\'s `models/` (§3, *Models: the model bucket*)',
  },
  /**
   * Memory of the router Lambda. Lambda gives CPU in proportion to memory (one vCPU at
   * 1,769 MB), and the router's cost per frame is CPU (about 0.38 CPU-ms per frame at
   * batch 1,000, bench/router-ingest.ts): more memory means fewer concurrent invocations
   * for the same ingest rate (docs/deploy.md, *Ingest capacity*).
   */
  routerMemoryMb: { kind: 'integer', default: 512, min: 128, max: 10_240, unit: 'MB', meaning: 'Memory of the router Lambda (its CPU share grows with it: 1,769 MB = one vCPU); raise it with large batches at high ingest rates' },
  /**
   * Reserved concurrency of the janitor Lambda (bounds a task-stopped storm); 0 = none, the
   * default: Lambda lets an account reserve only up to its concurrency quota minus 100, so
   * any default reservation fails the first deploy of a new account (quota 10 or 50).
   */
  janitorReservedConcurrency: {
    kind: 'integer', default: 0, min: 0, max: 1000, off: { value: 0, meaning: 'none' }, unit: 'invocations',
    meaning: 'Opt-in reserved concurrency of the janitor Lambda, so a storm of task-stopped events cannot take the router\'s concurrency. Lambda accepts a reservation only up to the account\'s concurrency quota minus 100 (new accounts often have 10 or 50: any value fails their deploy); scheduled runs are single-flight without it (a lock item in the leases table; §11)',
  },
  /**
   * With `natGateways` >= 1, let tasks and instances reach any HTTPS address (a model
   * hosted outside AWS). false = only the VPC endpoints and the S3/DynamoDB prefix lists.
   */
  allowInternetEgress: { kind: 'flag', default: false, meaning: 'With `natGateways` ≥ 1: let tasks and instances reach any HTTPS address (a model hosted outside AWS). false = only the VPC endpoints and the S3/DynamoDB prefix lists (§4)' },
  /**
   * The principal tag whose value names an edge uploader's site: the uploader policy grants
   * `frames/${aws:PrincipalTag/<tag>}.*` (infra/uploader-access.ts, issue 45).
   */
  uploaderSiteTag: {
    kind: 'text', default: DEFAULT_SITE_TAG, pattern: /^[A-Za-z0-9_.:/=+@-]{1,128}$/, rule: 'be an IAM tag key (1-128 of letters, digits and _ . : / = + - @)',
    meaning: 'Principal tag that names an uploader\'s site: the stack\'s uploader policy (output `UploaderPolicyArn`) lets a principal tagged `S` write only `frames/S.*`. With IAM Roles Anywhere, a certificate field such as `x509Subject/OU` (§14)',
  },
  /** An IAM Roles Anywhere trust anchor; set, the stack makes an uploader role for its certificates. */
  uploaderTrustAnchorArn: {
    kind: 'text', default: '', pattern: /^arn:aws[a-z-]*:rolesanywhere:[a-z0-9-]+:\d{12}:trust-anchor\/[0-9a-f-]{36}$/, emptyMeans: 'no uploader role: attach the policy to your own',
    rule: 'be an IAM Roles Anywhere trust anchor ARN (arn:aws:rolesanywhere:<region>:<account>:trust-anchor/<id>) or empty',
    meaning: 'IAM Roles Anywhere trust anchor whose certificates may take the stack\'s uploader role (output `UploaderRoleArn`): edge boxes without long-term keys (§14)',
  },
  /** Retention of every CloudWatch log group the stack creates. */
  logRetentionDays: { kind: 'choice', default: 30, values: LOG_RETENTION_DAYS, unit: 'days', meaning: 'Retention of every log group (a value CloudWatch Logs accepts)' },
  /** Ingest queue age (seconds) above which the ingest-age alarm fires. */
  ingestAgeAlarmSeconds: { kind: 'integer', default: 300, min: 60, max: 1_209_600, unit: 's', meaning: 'Ingest oldest-message age that raises the alarm (3 minutes in a row)' },
  /** Address subscribed to the alarm topic; empty = no subscription. */
  alarmEmail: {
    kind: 'text', default: '', pattern: /^[^@\s]+@[^@\s]+\.[^@\s]+$/, rule: 'be an e-mail address or empty', emptyMeans: 'no subscription',
    meaning: 'E-mail subscribed to the alarm topic (confirm the subscription mail; §9)',
  },
  /** Keep (retain) or delete the buckets, tables, alarm key and log groups when the stack is deleted (RetainExceptOnCreate: not after a failed create). */
  retainData: { kind: 'flag', default: true, meaning: 'Retain buckets, tables, the alarm key and log groups on stack deletion and replacement (RetainExceptOnCreate: a failed first deploy deletes them on rollback; §2)' },
} as const satisfies SettingsTable;

/** Deployment settings that are not runtime tunables, one field per entry of {@link DEPLOYMENT_SETTINGS}. */
export type DeploymentSettings = SettingsOf<typeof DEPLOYMENT_SETTINGS>;

export type StackConfig = Tunables & DeploymentSettings;

export const DEFAULT_DEPLOYMENT_SETTINGS: DeploymentSettings = defaultsOf(DEPLOYMENT_SETTINGS);

export const DEFAULT_STACK_CONFIG: StackConfig = Object.freeze({ ...DEFAULT_TUNABLES, ...DEFAULT_DEPLOYMENT_SETTINGS });

/** docs/deploy.md's table of deployment settings, generated from {@link DEPLOYMENT_SETTINGS}. */
export function deploymentSettingsMarkdownTable(): string {
  return settingsMarkdownTable(DEPLOYMENT_SETTINGS);
}

/**
 * Checks the deployment settings and the tunables together; throws one
 * {@link ConfigError} listing every problem.
 */
export function validateStackConfig(config: StackConfig): StackConfig {
  const problems: string[] = [];
  try {
    validateTunables(config);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.message.split('\n  - ').slice(1));
  }
  problems.push(...rangeProblems(DEPLOYMENT_SETTINGS, config));
  problems.push(...availabilityZoneProblems(config), ...instanceTypesProblems(config), ...workerFitProblems(config));
  if (config.natInstanceType !== '' && config.natGateways === 0) problems.push(`natInstanceType (${config.natInstanceType}) replaces NAT gateways by NAT instances: set natGateways=1 or more (how many, one per zone)`);
  if (!config.interfaceEndpoints && config.natGateways === 0) problems.push('interfaceEndpoints=false needs natGateways=1 or more: without endpoints or a NAT the workers cannot reach ECS, ECR, CloudWatch Logs or SQS');
  if (config.modelSha256 !== '' && config.modelUri === '') problems.push('modelSha256 pins the model named by modelUri: set modelUri too');
  // The subnet plan reads the other settings, so it is only asked once they are in range.
  if (problems.length === 0) {
    const plan = workloadSubnetPlan(config);
    if (plan.problem) problems.push(plan.problem);
  }
  // Results retention (docs/decisions.md 55): a frame's object must leave S3 before its record may,
  // or `affinity reconcile` would find an object with no record and process the frame a second time.
  if (config.resultsRetentionDays > 0 && config.resultsRetentionDays <= config.frameRetentionDays) {
    problems.push(`resultsRetentionDays (${config.resultsRetentionDays}) must be 0 (never expire) or more than frameRetentionDays (${config.frameRetentionDays}): a frame's object must leave S3 before its record may`);
  }
  if (routerTimeoutSeconds(config) * 6 > config.ingestVisibilitySeconds) {
    problems.push(`ingestVisibilitySeconds (${config.ingestVisibilitySeconds}) must be at least 60 (six router timeouts of 10 s)`);
  }
  if (problems.length > 0) throw new ConfigError(`Invalid stack configuration:\n  - ${problems.join('\n  - ')}`);
  return config;
}

/** The parts of a `workerImage` URI, or undefined when it is not an ECR image pinned by digest. */
export function parseWorkerImage(uri: string): { account: string; region: string; partition: string; repository: string; digest: string } | undefined {
  const m = ECR_IMAGE.exec(uri);
  if (!m) return undefined;
  return { account: m[1]!, region: m[2]!, partition: m[3] ? 'aws-cn' : 'aws', repository: m[4]!, digest: m[5]! };
}

/** A comma-separated setting as a list (empty entries dropped). */
export function listOf(value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

/** `availabilityZones` (when listed) names 1 to 6 distinct zones, and at least `natGateways` of them; else `natGateways` <= `maxAzs`. */
export function availabilityZoneProblems(config: Pick<DeploymentSettings, 'availabilityZones' | 'maxAzs' | 'natGateways'>): string[] {
  const azs = listOf(config.availabilityZones);
  const problems: string[] = [];
  if (azs.length > 0) {
    if (azs.length > 6 || new Set(azs).size !== azs.length) problems.push(`availabilityZones must list 1 to 6 distinct zones (got ${azs.join(', ')})`);
    if (config.natGateways > azs.length) problems.push(`natGateways (${config.natGateways}) cannot exceed the ${azs.length} availabilityZones`);
  } else if (config.natGateways > config.maxAzs) {
    problems.push(`natGateways (${config.natGateways}) cannot exceed maxAzs (${config.maxAzs})`);
  }
  return problems;
}

/** `instanceTypes` lists at most 20 distinct types (the mixed-instances group's limit). */
export function instanceTypesProblems(config: Pick<DeploymentSettings, 'instanceTypes'>): string[] {
  const types = listOf(config.instanceTypes);
  return types.length > 20 || new Set(types).size !== types.length ? [`instanceTypes must list at most 20 distinct types (got ${types.length})`] : [];
}

/**
 * Each instance type can run the worker image (no V100), and the worker's memory fits: the
 * hard limit above the reservation and within every type's memory per GPU, the segment
 * decoders within the limit (issue 43, items 3 and 4).
 */
export function workerFitProblems(
  config: Pick<StackConfig, 'instanceType' | 'instanceTypes' | 'taskMemoryMiB' | 'taskMemoryLimitMiB' | 'maxSegmentBytes' | 'maxOpenSegments' | 'segmentReadAheadBytes' | 'videosPerSlot'> & Partial<Pick<StackConfig, 'hotSpare'>>,
): string[] {
  const problems: string[] = [];
  for (const type of instanceTypesOf(config)) {
    const problem = gpuInstanceProblem(type);
    if (problem) {
      problems.push(problem);
      continue;
    }
    const room = perGpuShare(gpuInstanceSpec(type)!).memoryMiB - 1024;
    if (config.taskMemoryLimitMiB > room) problems.push(`taskMemoryLimitMiB (${config.taskMemoryLimitMiB}) does not fit ${type}: at most ${room} MiB per GPU (its memory per GPU less 1 GiB for the OS and the ECS agent)`);
  }
  if (config.taskMemoryLimitMiB <= config.taskMemoryMiB) problems.push(`taskMemoryLimitMiB (${config.taskMemoryLimitMiB}) must be above taskMemoryMiB (${config.taskMemoryMiB}), the reservation ECS places by`);
  problems.push(...workerMemoryProblems({ memoryLimitMiB: config.taskMemoryLimitMiB, maxSegmentBytes: config.maxSegmentBytes, segmentReadAheadBytes: config.segmentReadAheadBytes, maxOpenSegments: config.maxOpenSegments, videosPerSlot: config.videosPerSlot, spareMiB: config.hotSpare !== false ? SPARE_WORKER_MIB : 0 }));
  return problems;
}

/**
 * libuv's thread pool for the worker (`UV_THREADPOOL_SIZE`): node-av's decodes, sharp and
 * DNS lookups share it, and its default of 4 threads queues 8 camera streams behind one
 * another (on 2 cores, 8 CPU-decoded streams went from 39 to 84 frames/s with 16 threads;
 * noisy). Four threads per vCPU of a task's share of the smallest instance type (16 on a
 * g5.xlarge), within 8 to 256.
 */
export function workerThreadPoolSize(config: Pick<StackConfig, 'instanceType' | 'instanceTypes'>): number {
  const vcpus = Math.min(...instanceTypesOf(config).map((t) => gpuInstanceSpec(t)).filter((s) => s !== undefined).map((s) => perGpuShare(s).vcpus));
  return Number.isFinite(vcpus) ? Math.min(256, Math.max(8, 4 * vcpus)) : 16;
}

/** The GPU instance types of the group, in order of preference. */
export function instanceTypesOf(config: Pick<DeploymentSettings, 'instanceType' | 'instanceTypes'>): string[] {
  const types = listOf(config.instanceTypes);
  return types.length > 0 ? types : [config.instanceType];
}

/** Availability zones the VPC spans: the listed ones, or `maxAzs` of the region's. */
export function azCountOf(config: Pick<DeploymentSettings, 'availabilityZones' | 'maxAzs'>): number {
  const azs = listOf(config.availabilityZones);
  return azs.length > 0 ? azs.length : config.maxAzs;
}

/** The workload subnets' size for this configuration (see infra/subnet-plan.ts). */
export function workloadSubnetPlan(config: StackConfig): SubnetPlan {
  return planWorkloadSubnets({
    // Standby tasks (decision 75) take an ENI and an instance each, as a slot's task does.
    slotCount: config.slotCount + config.standbyWorkers,
    maxInstances: config.maxInstances,
    azCount: azCountOf(config),
    interfaceEndpoints: config.interfaceEndpoints ? Object.keys(INTERFACE_ENDPOINTS).length : 0,
    oneAzHoldsFleet: config.oneAzHoldsFleet,
    workloadSubnetMask: config.workloadSubnetMask,
    publicSubnets: config.natGateways > 0,
  });
}

/**
 * Router timeout: a sixth of the ingest visibility timeout (AWS's guidance for SQS
 * event sources), at least 10 s and at most 900 s.
 */
export function routerTimeoutSeconds(config: Pick<Tunables, 'ingestVisibilitySeconds'>): number {
  return Math.min(900, Math.max(10, Math.floor(config.ingestVisibilitySeconds / 6)));
}

/** Janitor schedule: EventBridge rates are whole minutes, so the interval rounds up to at least one. */
export function janitorRateMinutes(config: Pick<Tunables, 'janitorIntervalSeconds'>): number {
  return Math.max(1, Math.ceil(config.janitorIntervalSeconds / 60));
}

const SPECS: SettingsTable = { ...TUNABLES, ...DEPLOYMENT_SETTINGS };

function parseValue(key: string, raw: unknown): unknown {
  const kind = SPECS[key]!.kind;
  if (kind === 'flag') {
    if (typeof raw === 'boolean') return raw;
    const s = String(raw).trim().toLowerCase();
    if (s === 'true') return true;
    if (s === 'false') return false;
    throw new ConfigError(`context ${key} must be true or false (got "${String(raw)}")`);
  }
  if (kind === 'text') return String(raw);
  const n = typeof raw === 'number' ? raw : Number(String(raw).trim());
  if (String(raw).trim() === '' || !Number.isFinite(n)) throw new ConfigError(`context ${key} must be a number (got "${String(raw)}")`);
  return n;
}

/**
 * Builds the stack configuration from CDK context: every key of
 * {@link DEFAULT_STACK_CONFIG} can be set, by the same name, in `cdk.json` or with
 * `-c key=value` (CLI values arrive as strings and are parsed). Validates the result.
 */
export function stackConfigFromContext(tryGetContext: (key: string) => unknown): StackConfig {
  const out: Record<string, unknown> = { ...DEFAULT_STACK_CONFIG };
  for (const key of Object.keys(DEFAULT_STACK_CONFIG) as (keyof StackConfig)[]) {
    const raw = tryGetContext(key);
    if (raw === undefined || raw === null) continue;
    out[key] = parseValue(key, raw);
  }
  return validateStackConfig(out as unknown as StackConfig);
}
