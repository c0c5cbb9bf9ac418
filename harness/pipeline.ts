/**
 * Helpers for integration tests that drive the whole pipeline on the local stack.
 */
import { waitFor } from './wait.ts';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { allResults, getSummary } from '../core/commit/dynamodb/results-reader.ts';
import sharp from 'sharp';
import { frameKey } from '../core/ingest/keys.ts';
import type { Tunables } from '../core/config.ts';
import type { FrameResultItem, VideoSummaryItem } from '../core/commit/results.ts';
import { startLocalStack, type LocalStack, type LocalStackOptions } from '../local/stack.ts';
import { sharedStackOptions } from './shared-dynamodb.ts';

/** Short leases and waits so failover and gaps happen in seconds. */
export const FAST_TUNABLES: Partial<Tunables> = {
  slotLeaseTtlSeconds: 6,
  heartbeatIntervalSeconds: 2,
  reorderWaitMs: 1500,
  videoIdleReleaseSeconds: 30,
  // Must stay under videoIdleReleaseSeconds (validated): a cached pin outliving the video's
  // idle release would be unsafe.
  routerPinCacheSeconds: 10,
  slotQueueVisibilitySeconds: 6,
  taskStartGraceSeconds: 20,
};

export interface TestStack extends LocalStack {
  /** Every line every worker printed, for assertions on logs. */
  readonly workerLines: string[];
  /** The stack's own lines (router and janitor errors among them). */
  readonly stackLines: string[];
}

export async function startTestStack(options: Partial<LocalStackOptions> & { tunables?: Partial<Tunables>; workerEnv?: Record<string, string> } = {}): Promise<TestStack> {
  const workerLines: string[] = [];
  const stackLines: string[] = [];
  // The router and janitor run in this process: keep their logs and EMF lines out of the test output.
  process.env.POWERTOOLS_LOG_LEVEL ??= 'ERROR';
  process.env.POWERTOOLS_METRICS_DISABLED ??= 'true';
  const stack = await startLocalStack({
    // The lane's shared DynamoDB Local (a database of this stack's own), unless told a port.
    ...(options.ports?.dynamodb === undefined ? sharedStackOptions() : {}),
    quiet: true,
    stateDir: `.local/test-${process.pid}-${Date.now()}`,
    routerWaitTimeSeconds: 1,
    janitorIntervalMs: 1000,
    workerStopGraceMs: 10_000,
    ...options,
    tunables: { ...FAST_TUNABLES, ...options.tunables },
    workerEnv: { FRAME_PROCESSOR: 'stats', POWERTOOLS_LOG_LEVEL: 'DEBUG', METRICS_FLUSH_INTERVAL_MS: '500', ...options.workerEnv },
    onWorkerLine: (line) => workerLines.push(line),
    log: (line) => stackLines.push(line),
  });
  return Object.assign(stack, { workerLines, stackLines });
}

let imageCache: Buffer | undefined;
/** A small valid JPEG. */
export async function jpeg(): Promise<Buffer> {
  imageCache ??= await sharp({ create: { width: 32, height: 24, channels: 3, background: { r: 180, g: 40, b: 40 } } })
    .jpeg()
    .toBuffer();
  return imageCache;
}

export async function put(stack: LocalStack, key: string, body: Uint8Array | string): Promise<void> {
  await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: key, Body: body }));
}

export async function uploadFrames(stack: LocalStack, videoId: string, frames: readonly number[], opts: { end?: number } = {}): Promise<void> {
  const body = await jpeg();
  for (const f of frames) await put(stack, frameKey(videoId, f), body);
  if (opts.end !== undefined) await put(stack, `frames/${videoId}/_end`, String(opts.end));
}

/** Deterministic shuffle (so a failing order is reproducible). */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

export function results(stack: LocalStack, videoId: string): Promise<FrameResultItem[]> {
  return allResults({ ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable }, videoId);
}

export function summary(stack: LocalStack, videoId: string): Promise<VideoSummaryItem | undefined> {
  return getSummary({ ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable }, videoId);
}

export { waitFor };

/** Waits until the video has a result for every frame in 0..lastFrame. */
export async function waitForFrames(stack: LocalStack, videoId: string, count: number, timeoutMs = 60_000): Promise<FrameResultItem[]> {
  return waitFor(`${count} results for ${videoId}`, async () => {
    const r = await results(stack, videoId);
    return r.length >= count ? r : undefined;
  }, timeoutMs);
}

/** Drains a queue (e.g. a DLQ) and returns bodies with their string attributes. */
export async function drainQueue(stack: LocalStack, queueUrl: string): Promise<{ body: string; attributes: Record<string, string> }[]> {
  const out: { body: string; attributes: Record<string, string> }[] = [];
  for (let i = 0; i < 20; i++) {
    const r = await stack.clients.sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0, MessageAttributeNames: ['All'] }));
    const msgs = r.Messages ?? [];
    if (msgs.length === 0) break;
    for (const m of msgs) {
      const attributes: Record<string, string> = {};
      for (const [k, v] of Object.entries(m.MessageAttributes ?? {})) attributes[k] = v.StringValue ?? '';
      out.push({ body: m.Body ?? '', attributes });
    }
  }
  return out;
}

/**
 * Affinity check: within one video, each fencing token belongs to exactly one worker,
 * and the frames committed under successive tokens form disjoint, increasing ranges —
 * no two owners' tenures overlap.
 */
export function assertNoOverlappingTenure(items: readonly FrameResultItem[]): { tokens: number[]; workers: string[] } {
  const sorted = [...items].sort((a, b) => a.frame - b.frame);
  const workerOfToken = new Map<number, string>();
  let lastToken = -Infinity;
  for (const r of sorted) {
    const w = workerOfToken.get(r.token);
    if (w !== undefined && w !== r.worker) throw new Error(`token ${r.token} used by two workers: ${w} and ${r.worker}`);
    workerOfToken.set(r.token, r.worker);
    // A late record is written whenever its frame arrives, under the token of that
    // moment, so it may follow higher-numbered frames of an earlier tenure; only in-order
    // records must have tokens that never go down.
    if (r.status === 'late') continue;
    if (r.token < lastToken) throw new Error(`frame ${r.frame} committed under token ${r.token} after token ${lastToken}: tenures overlap`);
    lastToken = r.token;
  }
  return { tokens: [...workerOfToken.keys()], workers: [...workerOfToken.values()] };
}
