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

/** CloudWatch Logs accepts only these retention values. */
const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653] as const;

/** Deployment settings that are not runtime tunables: default, range, unit, meaning. */
export const DEPLOYMENT_SETTINGS = {
  /** Prefix of every physical resource name (see `resourceNames`). */
  namePrefix: {
    kind: 'text', default: 'FrameAffinity', pattern: /^[A-Za-z][A-Za-z0-9-]{0,39}$/, rule: 'start with a letter and hold at most 40 letters, digits or dashes',
    meaning: 'Prefix of physical names (tables, queues, task family, dashboard) and the stack name (override the stack name alone with `-c stackName=...`)',
  },
  /** EC2 instance type of the GPU container instances; must have at least one NVIDIA GPU (families the ECS GPU AMI supports). */
  instanceType: {
    kind: 'text', default: 'g5.xlarge', pattern: /^(g4dn|g5|g6|g6e|gr6|p3|p3dn|p4d|p4de|p5|p5e|p5en)\.(\d*x?large|metal(-\d+xl)?)$/,
    rule: 'be an NVIDIA GPU instance type such as g5.xlarge or g6.xlarge',
    meaning: 'GPU instance type (g4dn/g5/g6/g6e/gr6/p3/p4/p5 families). `g6.xlarge` (L4) is cheaper per hour; `g5.xlarge` (A10G) faster per frame',
  },
  /** Most GPU instances the capacity provider may run. 0 means one per slot. */
  maxInstances: { kind: 'integer', default: 0, min: 0, max: 1000, unit: 'instances', meaning: 'Most GPU instances; 0 = `slotCount` (one worker per single-GPU instance)' },
  /** CPU units reserved by one worker task (1024 = one vCPU). */
  taskCpuUnits: { kind: 'integer', default: 3072, min: 256, max: 196_608, unit: 'CPU units', meaning: 'CPU reserved per worker, 1024 = one vCPU (fits a 4-vCPU instance with the agent)' },
  /** Memory reserved by one worker task. */
  taskMemoryMiB: { kind: 'integer', default: 12288, min: 512, max: 2_097_152, unit: 'MiB', meaning: 'Memory reserved per worker (fits a 16 GiB instance)' },
  /** Root EBS volume of each GPU instance. */
  rootVolumeGiB: { kind: 'integer', default: 100, min: 30, max: 16_384, unit: 'GiB', meaning: 'Encrypted gp3 root volume (AMI + CUDA image layers)' },
  /** Availability zones of the VPC. */
  maxAzs: { kind: 'integer', default: 2, min: 1, max: 6, unit: 'zones', meaning: 'Availability zones' },
  /** NAT gateways for egress; 0 keeps the subnets isolated and reaches AWS through VPC endpoints only. */
  natGateways: { kind: 'integer', default: 0, min: 0, max: 6, unit: 'gateways', meaning: 'NAT gateways, at most `maxAzs`; 0 = isolated subnets, endpoints only (see §4)' },
  /** Uploaded frames under `frames/` expire after this many days. */
  frameRetentionDays: { kind: 'integer', default: 30, min: 1, max: 36_500, unit: 'days', meaning: 'Lifecycle expiry of `frames/` objects (results live in DynamoDB)' },
  /** Retention of every CloudWatch log group the stack creates. */
  logRetentionDays: { kind: 'choice', default: 30, values: LOG_RETENTION_DAYS, unit: 'days', meaning: 'Retention of every log group (a value CloudWatch Logs accepts)' },
  /** Ingest queue age (seconds) above which the ingest-age alarm fires. */
  ingestAgeAlarmSeconds: { kind: 'integer', default: 300, min: 60, max: 1_209_600, unit: 's', meaning: 'Ingest oldest-message age that raises the alarm (3 minutes in a row)' },
  /** Address subscribed to the alarm topic; empty = no subscription. */
  alarmEmail: {
    kind: 'text', default: '', pattern: /^[^@\s]+@[^@\s]+\.[^@\s]+$/, rule: 'be an e-mail address or empty', emptyMeans: 'no subscription',
    meaning: 'E-mail subscribed to the alarm topic (confirm the subscription mail; §9)',
  },
  /** Keep (retain) or delete the bucket, tables and log buckets when the stack is deleted. */
  retainData: { kind: 'flag', default: true, meaning: 'Retain buckets, tables and log groups on stack deletion; tables get deletion protection' },
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
