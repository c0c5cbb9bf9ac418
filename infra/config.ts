/**
 * Stack configuration: the tunables from core/config.ts plus the settings only the
 * deployment has (instance type, network, retention). Defaults live here and in
 * `DEFAULT_TUNABLES`; values come from CDK context (`cdk.json` or `-c key=value`).
 */
import { ConfigError, DEFAULT_TUNABLES, validateTunables, type Tunables } from '../core/config.ts';
import { INTERFACE_ENDPOINTS } from './network.ts';
import { planWorkloadSubnets, type SubnetPlan } from './subnet-plan.ts';

/** Deployment settings that are not runtime tunables. */
export interface DeploymentSettings {
  /** Prefix of every physical resource name (see `resourceNames`). */
  readonly namePrefix: string;
  /** EC2 instance type of the GPU container instances; must have at least one NVIDIA GPU. */
  readonly instanceType: string;
  /** Most GPU instances the capacity provider may run. 0 means one per slot. */
  readonly maxInstances: number;
  /** CPU units reserved by one worker task (1024 = one vCPU). */
  readonly taskCpuUnits: number;
  /** Memory reserved by one worker task. */
  readonly taskMemoryMiB: number;
  /** Root EBS volume of each GPU instance. */
  readonly rootVolumeGiB: number;
  /** Availability zones of the VPC. */
  readonly maxAzs: number;
  /** NAT gateways for egress; 0 keeps the subnets isolated and reaches AWS through VPC endpoints only. */
  readonly natGateways: number;
  /** Uploaded frames under `frames/` expire after this many days. */
  readonly frameRetentionDays: number;
  /**
   * GPU instance types of a mixed-instances group, comma-separated, in order of
   * preference (e.g. `g5.xlarge,g6.xlarge,g4dn.xlarge`): when one type runs out in an AZ,
   * the group launches the next. Empty = `instanceType` alone. Every type must fit one
   * worker task (`taskCpuUnits`, `taskMemoryMiB`, one GPU).
   */
  readonly instanceTypes: string;
  /** Availability zones of the VPC, comma-separated (e.g. `us-east-1a,us-east-1c`); empty = the region's first `maxAzs`. Choose zones that offer the instance types. */
  readonly availabilityZones: string;
  /**
   * Prefix length of each workload subnet; 0 = sized from `slotCount` (see
   * `planWorkloadSubnets`). A fixed value that cannot hold the fleet fails synthesis.
   */
  readonly workloadSubnetMask: number;
  /**
   * Size each workload subnet for the whole fleet, so that every instance can run in one
   * AZ when a GPU type runs out in the other(s). false = the fleet spread over the AZs.
   */
  readonly oneAzHoldsFleet: boolean;
  /**
   * Prebuilt worker image, `<account>.dkr.ecr.<region>.amazonaws.com/<repository>@sha256:<digest>`:
   * deploying needs no Docker. Empty = built from gpu-worker/Dockerfile at deploy time.
   */
  readonly workerImage: string;
  /** SHA-256 (hex) the model named by `modelUri` must have; the worker refuses any other bytes. Empty = not checked. */
  readonly modelSha256: string;
  /**
   * IAM role ARN that alone may write or delete objects under `models/` in the frame
   * bucket (a bucket-policy Deny covers every other principal). Empty = nobody may.
   */
  readonly modelWriterRoleArn: string;
  /** Reserved concurrency of the janitor Lambda (bounds a task-stopped storm); 0 = none. */
  readonly janitorReservedConcurrency: number;
  /**
   * With `natGateways` >= 1, let tasks and instances reach any HTTPS address (a model
   * hosted outside AWS). false = only the VPC endpoints and the S3/DynamoDB prefix lists.
   */
  readonly allowInternetEgress: boolean;
  /** Retention of every CloudWatch log group the stack creates. */
  readonly logRetentionDays: number;
  /** Ingest queue age (seconds) above which the ingest-age alarm fires. */
  readonly ingestAgeAlarmSeconds: number;
  /** Address subscribed to the alarm topic; empty = no subscription. */
  readonly alarmEmail: string;
  /** Keep (retain) or delete the bucket, tables and log buckets when the stack is deleted. */
  readonly retainData: boolean;
}

export type StackConfig = Tunables & DeploymentSettings;

export const DEFAULT_DEPLOYMENT_SETTINGS: DeploymentSettings = Object.freeze({
  namePrefix: 'FrameAffinity',
  instanceType: 'g5.xlarge',
  maxInstances: 0,
  taskCpuUnits: 3072,
  taskMemoryMiB: 12288,
  rootVolumeGiB: 100,
  maxAzs: 2,
  natGateways: 0,
  instanceTypes: '',
  availabilityZones: '',
  workloadSubnetMask: 0,
  oneAzHoldsFleet: true,
  workerImage: '',
  modelSha256: '',
  modelWriterRoleArn: '',
  janitorReservedConcurrency: 4,
  allowInternetEgress: false,
  frameRetentionDays: 30,
  logRetentionDays: 30,
  ingestAgeAlarmSeconds: 300,
  alarmEmail: '',
  retainData: true,
});

export const DEFAULT_STACK_CONFIG: StackConfig = Object.freeze({ ...DEFAULT_TUNABLES, ...DEFAULT_DEPLOYMENT_SETTINGS });

/** CloudWatch Logs accepts only these retention values. */
const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653];

/** Instance families with NVIDIA GPUs that the ECS GPU AMI supports. */
const GPU_INSTANCE_TYPE = /^(g4dn|g5|g6|g6e|gr6|p3|p3dn|p4d|p4de|p5|p5e|p5en)\.(\d*x?large|metal(-\d+xl)?)$/;

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
  const intIn = (k: keyof DeploymentSettings, min: number, max: number) => {
    const v = config[k] as number;
    if (!Number.isInteger(v) || v < min || v > max) problems.push(`${k} must be an integer between ${min} and ${max} (got ${v})`);
  };
  if (!/^[A-Za-z][A-Za-z0-9-]{0,39}$/.test(config.namePrefix)) {
    problems.push(`namePrefix must start with a letter and hold at most 40 letters, digits or dashes (got "${config.namePrefix}")`);
  }
  if (!GPU_INSTANCE_TYPE.test(config.instanceType)) {
    problems.push(`instanceType must be an NVIDIA GPU instance type such as g5.xlarge or g6.xlarge (got "${config.instanceType}")`);
  }
  intIn('maxInstances', 0, 1000);
  intIn('taskCpuUnits', 256, 196_608);
  intIn('taskMemoryMiB', 512, 2_097_152);
  intIn('rootVolumeGiB', 30, 16_384);
  intIn('maxAzs', 1, 6);
  intIn('natGateways', 0, 6);
  intIn('frameRetentionDays', 1, 36_500);
  intIn('ingestAgeAlarmSeconds', 60, 1_209_600);
  if (!LOG_RETENTION_DAYS.includes(config.logRetentionDays)) {
    problems.push(`logRetentionDays must be one of ${LOG_RETENTION_DAYS.join(', ')} (got ${config.logRetentionDays})`);
  }
  if (config.alarmEmail !== '' && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(config.alarmEmail)) {
    problems.push(`alarmEmail must be an e-mail address or empty (got "${config.alarmEmail}")`);
  }
  const azs = listOf(config.availabilityZones);
  if (azs.length > 0) {
    const bad = azs.filter((az) => !AVAILABILITY_ZONE.test(az));
    if (bad.length > 0) problems.push(`availabilityZones must be zone names such as us-east-1a (got ${bad.join(', ')})`);
    if (azs.length > 6 || new Set(azs).size !== azs.length) problems.push(`availabilityZones must list 1 to 6 distinct zones (got ${azs.join(', ')})`);
    if (config.natGateways > azs.length) problems.push(`natGateways (${config.natGateways}) cannot exceed the ${azs.length} availabilityZones`);
  } else if (config.natGateways > config.maxAzs) {
    problems.push(`natGateways (${config.natGateways}) cannot exceed maxAzs (${config.maxAzs})`);
  }
  const types = listOf(config.instanceTypes);
  const badTypes = types.filter((t) => !GPU_INSTANCE_TYPE.test(t));
  if (badTypes.length > 0) problems.push(`instanceTypes must list NVIDIA GPU instance types such as g5.xlarge,g6.xlarge,g4dn.xlarge (got ${badTypes.join(', ')})`);
  if (types.length > 20 || new Set(types).size !== types.length) problems.push(`instanceTypes must list at most 20 distinct types (got ${types.length})`);
  if (config.workloadSubnetMask !== 0) intIn('workloadSubnetMask', 16, 28);
  intIn('janitorReservedConcurrency', 0, 1000);
  if (config.workerImage !== '' && !parseWorkerImage(config.workerImage)) {
    problems.push(`workerImage must be an ECR image pinned by digest, <account>.dkr.ecr.<region>.amazonaws.com/<repository>@sha256:<64 hex digits> (got "${config.workerImage}")`);
  }
  if (config.modelSha256 !== '' && !/^[0-9a-f]{64}$/.test(config.modelSha256)) problems.push(`modelSha256 must be 64 lowercase hex digits (got "${config.modelSha256}")`);
  if (config.modelSha256 !== '' && config.modelUri === '') problems.push('modelSha256 pins the model named by modelUri: set modelUri too');
  if (config.modelWriterRoleArn !== '' && !/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@/-]+$/.test(config.modelWriterRoleArn)) {
    problems.push(`modelWriterRoleArn must be an IAM role ARN, arn:aws:iam::<account>:role/<name> (got "${config.modelWriterRoleArn}")`);
  }
  if (problems.length === 0) {
    const plan = workloadSubnetPlan(config);
    if (plan.problem) problems.push(plan.problem);
  }
  if (routerTimeoutSeconds(config) * 6 > config.ingestVisibilitySeconds) {
    problems.push(`ingestVisibilitySeconds (${config.ingestVisibilitySeconds}) must be at least 60 (six router timeouts of 10 s)`);
  }
  if (problems.length > 0) throw new ConfigError(`Invalid stack configuration:\n  - ${problems.join('\n  - ')}`);
  return config;
}

/** Zone names: `us-east-1a`, and Local Zones such as `us-west-2-lax-1a`. */
const AVAILABILITY_ZONE = /^[a-z]{2}(-[a-z]+)+-\d+(-[a-z]+-\d+)?[a-z]$/;

/** ECR image pinned by digest: account, region, repository, digest. */
const ECR_IMAGE = /^(\d{12})\.dkr\.ecr\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com(\.cn)?\/([a-z0-9]+(?:[._-][a-z0-9]+)*(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*)@(sha256:[0-9a-f]{64})$/;

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
    slotCount: config.slotCount,
    maxInstances: config.maxInstances,
    azCount: azCountOf(config),
    interfaceEndpoints: Object.keys(INTERFACE_ENDPOINTS).length,
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

function parseValue(key: string, raw: unknown, fallback: unknown): unknown {
  if (typeof fallback === 'number') {
    const n = typeof raw === 'number' ? raw : Number(String(raw).trim());
    if (String(raw).trim() === '' || !Number.isFinite(n)) throw new ConfigError(`context ${key} must be a number (got "${String(raw)}")`);
    return n;
  }
  if (typeof fallback === 'boolean') {
    if (typeof raw === 'boolean') return raw;
    const s = String(raw).trim().toLowerCase();
    if (s === 'true') return true;
    if (s === 'false') return false;
    throw new ConfigError(`context ${key} must be true or false (got "${String(raw)}")`);
  }
  return String(raw);
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
    out[key] = parseValue(key, raw, DEFAULT_STACK_CONFIG[key]);
  }
  return validateStackConfig(out as unknown as StackConfig);
}
