/**
 * Stack configuration: the tunables from core/config.ts plus the settings only the
 * deployment has (instance type, network, retention). Defaults live here and in
 * `DEFAULT_TUNABLES`; values come from CDK context (`cdk.json` or `-c key=value`).
 */
import { ConfigError, DEFAULT_TUNABLES, validateTunables, type Tunables } from '../core/config.ts';

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
  if (config.natGateways > config.maxAzs) problems.push(`natGateways (${config.natGateways}) cannot exceed maxAzs (${config.maxAzs})`);
  if (routerTimeoutSeconds(config) * 6 > config.ingestVisibilitySeconds) {
    problems.push(`ingestVisibilitySeconds (${config.ingestVisibilitySeconds}) must be at least 60 (six router timeouts of 10 s)`);
  }
  if (problems.length > 0) throw new ConfigError(`Invalid stack configuration:\n  - ${problems.join('\n  - ')}`);
  return config;
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
