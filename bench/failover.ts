/**
 * Failover time: kill -9 of the worker that owns a video mid-stream, to the first
 * result committed by its successor. Default lease settings (slot TTL 15 s, heartbeat
 * 5 s); target: within slot TTL + 3 s.
 *
 *   npx node bench/failover.ts [kills=5]
 */
import { startLocalStack } from '../local/stack.ts';
import { frameKey } from '../core/keys.ts';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { allResults } from '../core/results-reader.ts';
import sharp from 'sharp';
import { writeFileSync, mkdirSync } from 'node:fs';

const kills = Number(process.argv[2] ?? 5);
const framesPerVideo = 60;
const stack = await startLocalStack({
  quiet: true,
  stateDir: '.local/bench-failover',
  workerEnv: { FRAME_PROCESSOR: 'stats', STATS_PROCESSOR_DELAY_MS: '100' },
  routerWaitTimeSeconds: 1,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const image = await sharp({ create: { width: 64, height: 48, channels: 3, background: { r: 90, g: 90, b: 200 } } }).jpeg().toBuffer();

const rows = (videoId: string) => allResults({ ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable }, videoId);

const measurements: { kill: number; failoverSeconds: number; lost: number; doubled: number }[] = [];
try {
  for (let k = 0; k < kills; k++) {
    const videoId = `failover-${k}-${Date.now()}`;
    for (let f = 0; f < framesPerVideo; f++) {
      await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: frameKey(videoId, f), Body: image }));
    }
    await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: `frames/${videoId}/_end`, Body: String(framesPerVideo - 1) }));
    while ((await rows(videoId)).length < 10) await sleep(100);
    const lease = await stack.clients.ddb.send(new GetCommand({ TableName: stack.wiring.leasesTable, Key: { pk: `video#${videoId}` }, ConsistentRead: true }));
    const owner = lease.Item?.owner as string;
    const victim = stack.launcher.workers().find((w) => w.alive && w.workerId === owner);
    if (!victim) throw new Error(`owner ${owner} of ${videoId} is not a live local worker`);
    const killedAtMs = Date.now();
    stack.launcher.kill({ pid: victim.pid }, 'SIGKILL');
    let firstNew: number | undefined;
    while (firstNew === undefined) {
      const r = await rows(videoId);
      const next = r.filter((x) => x.worker !== owner).sort((a, b) => a.committedAtMs - b.committedAtMs)[0];
      if (next) firstNew = next.committedAtMs as number;
      else await sleep(50);
      if (Date.now() - killedAtMs > 120_000) throw new Error('no takeover within 120 s');
    }
    while ((await rows(videoId)).length < framesPerVideo) await sleep(200);
    const r = await rows(videoId);
    const frames = r.map((x) => x.frame as number);
    const lost = framesPerVideo - new Set(frames).size;
    const doubled = frames.length - new Set(frames).size;
    const m = { kill: k + 1, failoverSeconds: (firstNew - killedAtMs) / 1000, lost, doubled };
    measurements.push(m);
    console.log(`kill ${m.kill}: failover ${m.failoverSeconds.toFixed(2)} s, lost ${lost}, doubled ${doubled}`);
  }
} finally {
  await stack.stop();
}
const s = measurements.map((m) => m.failoverSeconds).sort((a, b) => a - b);
const summary = {
  kills: s.length,
  slotLeaseTtlSeconds: stack.tunables.slotLeaseTtlSeconds,
  heartbeatIntervalSeconds: stack.tunables.heartbeatIntervalSeconds,
  minSeconds: s[0],
  medianSeconds: s[Math.floor(s.length / 2)],
  maxSeconds: s.at(-1),
  targetSeconds: stack.tunables.slotLeaseTtlSeconds + 3,
  withinTarget: s.every((x) => x <= stack.tunables.slotLeaseTtlSeconds + 3),
  framesLost: measurements.reduce((a, m) => a + m.lost, 0),
  framesDoubled: measurements.reduce((a, m) => a + m.doubled, 0),
  measurements,
};
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/failover.json', `${JSON.stringify(summary, null, 2)}\n`);
console.log(JSON.stringify(summary, null, 2));
