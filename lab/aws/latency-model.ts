/**
 * An AWS latency model for benches (`AWS_LATENCY_MODEL`): how long each call to S3, SQS
 * and DynamoDB takes from this process, as a seeded log-normal draw per call, given by
 * its median and its 99th percentile. Pure: lab/aws/latency-injection.ts applies it as
 * a delay middleware on the SDK clients (installed by the composition roots, like fault
 * injection), and benches apply it to in-process stand-ins (the SQS FIFO model) through
 * {@link LatencyModel.delayMs}. Reusable by any bench: the router's, the worker's.
 *
 * Default numbers (same-region calls from EC2/ECS, small payloads), and where they come from:
 * - S3 GET of a frame (< 512 KB): median 30 ms, p99 250 ms. AWS's whitepaper "Best
 *   Practices Design Patterns: Optimizing Amazon S3 Performance", section "Timeouts and
 *   Retries for Latency-Sensitive Applications": for small requests "median latencies
 *   are typically in the tens of milliseconds", and it advises retrying a GET after 2 s
 *   (so tails of hundreds of ms are normal, seconds are not). LIST: median 50 ms, p99 300 ms.
 * - SQS send / receive (messages available) / delete / change visibility: median 15 ms,
 *   p99 60 ms. AWS describes SQS latency as "tens of milliseconds"; single-client rates
 *   of tens of calls per second per thread (SQS developer guide, "Increasing throughput
 *   using horizontal scaling and action batching") imply round trips of 20-50 ms.
 * - DynamoDB single-item reads and writes (GetItem, PutItem, UpdateItem, Query): median
 *   6 ms, p99 20 ms. AWS Database Blog, "Understanding Amazon DynamoDB latency":
 *   "single-digit millisecond" service-side latency, plus the client's network round trip.
 * - DynamoDB transactions (TransactWriteItems / TransactGetItems): median 15 ms, p99 40 ms.
 *   Alex DeBrie, "DynamoDB Transactions Performance Testing" (alexdebrie.com): transactions
 *   of 5-25 items take a few times a single write (two-phase prepare and commit).
 * Anything not listed: median 10 ms, p99 40 ms.
 *
 * The JSON: `{"seed": 1, "scale": 1, "services": {"s3": {"GetObject": {"p50Ms": 30, "p99Ms": 250}}}}`,
 * every field optional (merged over the defaults); `scale` multiplies every delay
 * (0 = no delay, for a control run), `"default"` under a service sets its fallback.
 */
import { rng } from '../../core/random.ts';

/** A call's latency distribution: log-normal with this median and 99th percentile. */
export interface LatencySpec {
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** Per service (`s3`, `sqs`, `dynamodb`), per operation name (the SDK's command name without `Command`) or `default`. */
export type LatencyTable = Readonly<Record<string, Readonly<Record<string, LatencySpec>>>>;

/** The parsed `AWS_LATENCY_MODEL`. */
export interface LatencyModelConfig {
  readonly seed: number;
  /** Multiplies every delay. @default 1 */
  readonly scale: number;
  readonly services: LatencyTable;
}

const S3_SMALL: LatencySpec = { p50Ms: 30, p99Ms: 250 };
const SQS_CALL: LatencySpec = { p50Ms: 15, p99Ms: 60 };
const DDB_ITEM: LatencySpec = { p50Ms: 6, p99Ms: 20 };
const DDB_TRANSACTION: LatencySpec = { p50Ms: 15, p99Ms: 40 };

/** The default table (sources in the module comment). */
export const DEFAULT_LATENCY_TABLE: LatencyTable = Object.freeze({
  s3: { default: S3_SMALL, GetObject: S3_SMALL, PutObject: S3_SMALL, HeadObject: { p50Ms: 20, p99Ms: 150 }, ListObjectsV2: { p50Ms: 50, p99Ms: 300 } },
  sqs: { default: SQS_CALL },
  dynamodb: { default: DDB_ITEM, TransactWriteItems: DDB_TRANSACTION, TransactGetItems: DDB_TRANSACTION, BatchWriteItem: { p50Ms: 10, p99Ms: 30 }, BatchGetItem: { p50Ms: 8, p99Ms: 25 } },
});

const FALLBACK: LatencySpec = { p50Ms: 10, p99Ms: 40 };
/** z of the 99th percentile of a standard normal. */
const Z99 = 2.3263;

function specOf(v: unknown, where: string): LatencySpec {
  const o = v as Record<string, unknown> | null;
  const ok = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;
  if (typeof o !== 'object' || o === null || !ok(o.p50Ms) || !ok(o.p99Ms) || (o.p99Ms as number) < (o.p50Ms as number))
    throw new Error(`AWS_LATENCY_MODEL.${where} must be {p50Ms, p99Ms} with 0 <= p50Ms <= p99Ms (got ${JSON.stringify(v)})`);
  return { p50Ms: o.p50Ms as number, p99Ms: o.p99Ms as number };
}

/** Parses and validates `AWS_LATENCY_MODEL`; throws naming what is malformed (a bench must not run without its latencies). */
export function parseLatencyModel(text: string): LatencyModelConfig {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new Error(`AWS_LATENCY_MODEL is not JSON: ${text}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`AWS_LATENCY_MODEL must be a JSON object: ${text}`);
  const seed = raw.seed ?? 1;
  if (typeof seed !== 'number' || !Number.isInteger(seed)) throw new Error(`AWS_LATENCY_MODEL.seed must be an integer (got ${JSON.stringify(seed)})`);
  const scale = raw.scale ?? 1;
  if (typeof scale !== 'number' || !(scale >= 0 && scale <= 100)) throw new Error(`AWS_LATENCY_MODEL.scale must be a number in [0, 100] (got ${JSON.stringify(scale)})`);
  const services: Record<string, Record<string, LatencySpec>> = {};
  for (const [service, ops] of Object.entries(DEFAULT_LATENCY_TABLE)) services[service] = { ...ops };
  const given = raw.services ?? {};
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new Error('AWS_LATENCY_MODEL.services must be an object');
  for (const [service, ops] of Object.entries(given as Record<string, unknown>)) {
    if (typeof ops !== 'object' || ops === null) throw new Error(`AWS_LATENCY_MODEL.services.${service} must be an object`);
    services[service] = { ...services[service] };
    for (const [op, spec] of Object.entries(ops as Record<string, unknown>)) services[service]![op] = specOf(spec, `services.${service}.${op}`);
  }
  return { seed, scale, services };
}

/** Draws call latencies from a {@link LatencyModelConfig}, one seeded sequence per model. */
export class LatencyModel {
  readonly config: LatencyModelConfig;
  private readonly draw: () => number;
  private spare: number | undefined;

  /** @param salt varies the draws per process (role, worker id), so processes do not draw in lockstep */
  constructor(config: LatencyModelConfig, salt = '') {
    this.config = config;
    let a = config.seed >>> 0;
    for (let i = 0; i < salt.length; i++) a = Math.imul(a ^ salt.charCodeAt(i), 0x9e3779b1) >>> 0;
    this.draw = rng(a);
  }

  /** The distribution of `service`'s `operation` (its own entry, the service's default, or the global fallback). */
  specFor(service: string, operation: string): LatencySpec {
    const ops = this.config.services[service];
    return ops?.[operation.replace(/Command$/, '')] ?? ops?.default ?? FALLBACK;
  }

  /** One call's delay in ms: `p50 * exp(z * sigma)`, sigma from the p99, times `scale`. */
  delayMs(service: string, operation: string): number {
    const { p50Ms, p99Ms } = this.specFor(service, operation);
    if (p50Ms === 0 || this.config.scale === 0) return 0;
    const sigma = Math.log(p99Ms / p50Ms) / Z99;
    return p50Ms * Math.exp(this.normal() * sigma) * this.config.scale;
  }

  /** A standard normal draw (Box-Muller, both halves used). */
  private normal(): number {
    if (this.spare !== undefined) {
      const s = this.spare;
      this.spare = undefined;
      return s;
    }
    const u = Math.max(this.draw(), Number.MIN_VALUE);
    const v = this.draw();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }
}
