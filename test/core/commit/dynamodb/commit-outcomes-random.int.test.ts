/**
 * Randomized commits on DynamoDB Local through a fault-injecting client (issue 19, "a commit
 * whose outcome is known"). A driver plays the worker for a few videos over many rounds;
 * every transaction may be applied or not, its answer lost or not, cancelled by a conflict;
 * re-reads may fail; units are big, so most commits span several transactions and a later
 * group can fail after an earlier one landed; leases are moved under the driver now and then.
 *
 * The driver applies outcomes as the worker must: landed -> committed = unit.checkpoint;
 * not-landed -> roll back; unknown -> re-read later (resolveUnit), never roll back blind;
 * fenced / stale -> re-adopt and restore from the stored checkpoint; a result conflict
 * would mean a landed unit was rolled back and written again, so it fails the run.
 *
 * After each run: every video's records are exactly its frames (each once), the summary's
 * counts equal the records, and the stored checkpoint equals the driver's committed one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLocalStack, type LocalStack } from '../../../../local/stack.ts';
import { sharedStackOptions } from '../../../../harness/shared-dynamodb.ts';
import { createAwsClientsFrom, type AwsClients } from '../../../../core/aws/clients.ts';
import { LeaseStore, packUnits, type CommitUnit, type SlotFence, type UnitOutcome } from '../../../../core/leases/dynamodb/lease-store.ts';
import { newCommitId, summaryOf, type VideoCheckpoint } from '../../../../core/commit/checkpoint.ts';
import type { FrameResultItem } from '../../../../core/commit/results.ts';
import { allResults, getSummary } from '../../../../core/commit/dynamodb/results-reader.ts';
import { rng } from '../../../../core/random.ts';
import { DdbCommitFaults } from '../../../support/ddb-commit-faults.ts';
import { moveLease, readopt, type DrivenVideo } from '../../../support/commit-driver.ts';

let stack: LocalStack;
/** A clean store for setup, lease moves and the final checks. */
let clean: LeaseStore;

beforeAll(async () => {
  stack = await startLocalStack({ ...sharedStackOptions(), quiet: true, routerHandler: false, janitorHandler: false, stateDir: `.local/test-commit-random-${process.pid}` });
  clean = LeaseStore.forWiring(stack.clients.ddb, stack.wiring, stack.tunables);
});

afterAll(async () => {
  await stack?.stop();
});

const VIDEOS = 3;
/** Frames each video drives to. */
const TARGET_FRAMES = 400;
/** Results per unit: 52 items, so no two units share a transaction (99 items) and every commit spans groups. */
const UNIT_FRAMES = 50;
/** Rounds with faults; then faults stop and the driver finishes. */
const FAULT_ROUNDS = 40;
/** Chance per video per round that its lease is moved under the driver (fenced). */
const LEASE_MOVE_SHARE = 0.08;

interface RunStats {
  commits: number;
  outcomes: Map<string, number>;
  /** Commits of several groups where one group landed and another did not (or is unknown). */
  laterGroupFailed: number;
  resolvedLanded: number;
  conflicts: { videoId: string; frame: number }[];
}

/** A unit of the next `count` frames on top of the committed checkpoint; a fresh commit id and tracker state. */
function buildUnit(v: DrivenVideo, count: number, fence: SlotFence, nowMs: number): CommitUnit {
  const prev = v.committed;
  const first = prev.sequencer.nextFrame;
  const commitId = newCommitId();
  const checkpoint: VideoCheckpoint = {
    ...prev,
    seq: prev.seq + 1,
    commitId,
    sequencer: { ...prev.sequencer, nextFrame: first + count },
    // Tracker state unique to this attempt: a wrong "landed" shows as a checkpoint mismatch.
    processor: `tracker-after-${first + count - 1}-${commitId}`,
    framesOk: prev.framesOk + count,
    firstFrame: prev.firstFrame ?? first,
    lastFrame: first + count - 1,
    complete: first + count >= TARGET_FRAMES,
  };
  const results: FrameResultItem[] = Array.from({ length: count }, (_, i) => ({
    videoId: v.videoId,
    frame: first + i,
    status: 'ok',
    detections: [],
    token: v.token,
    worker: fence.workerId,
    committedAtMs: nowMs,
  }));
  return {
    videoId: v.videoId,
    token: v.token,
    expectedSeq: prev.seq,
    expectedCommitId: prev.commitId,
    checkpoint,
    results,
    summary: summaryOf(v.videoId, checkpoint, { token: v.token, worker: fence.workerId, slot: fence.slot }, nowMs),
  };
}

async function drive(seed: number, slot: number): Promise<{ stats: RunStats; videos: DrivenVideo[]; faults: DdbCommitFaults; fence: SlotFence }> {
  const draw = rng(seed);
  const faults = new DdbCommitFaults(rng(seed ^ 0x5eed));
  const clients: AwsClients = createAwsClientsFrom({
    s3: { region: stack.region, credentials: { ...stack.credentials }, endpoint: stack.endpoints.s3, forcePathStyle: true },
    sqs: { region: stack.region, credentials: { ...stack.credentials }, endpoint: stack.endpoints.sqs },
    dynamodb: { region: stack.region, credentials: { ...stack.credentials }, endpoint: stack.endpoints.dynamodb },
  });
  faults.install(clients.dynamodb);
  const store = LeaseStore.forWiring(clients.ddb, stack.wiring, stack.tunables);
  const workerId = `driver-${seed}`;
  // A claim whose first attempt applied but timed out (a cold DynamoDB Local) is retried by
  // the SDK and fails its condition: read the slot to see whose it is.
  const claimed = (await clean.claimSlot(slot, workerId, Date.now(), 600_000))?.epoch ?? (await clean.getSlot(slot));
  const epoch = typeof claimed === 'number' ? claimed : claimed.owner === workerId ? claimed.epoch : undefined;
  if (epoch === undefined) throw new Error(`slot ${slot} not claimed`);
  const fence: SlotFence = { slot, workerId, epoch };
  const videos: DrivenVideo[] = [];
  for (let i = 0; i < VIDEOS; i++) {
    const videoId = `rnd-${seed}-${i}`;
    await clean.pinVideo(videoId, slot, Date.now());
    const r = await clean.adoptVideo(videoId, fence, Date.now());
    if (typeof r === 'string') throw new Error(r);
    videos.push({ videoId, token: r.token, committed: r.checkpoint });
  }
  const stats: RunStats = { commits: 0, outcomes: new Map(), laterGroupFailed: 0, resolvedLanded: 0, conflicts: [] };
  const done = (v: DrivenVideo) => !v.unknown && v.committed.sequencer.nextFrame >= TARGET_FRAMES;
  for (let round = 0; round < 400 && !videos.every(done); round++) {
    faults.enabled = round < FAULT_ROUNDS;
    const units: CommitUnit[] = [];
    for (const v of videos) {
      if (v.unknown) {
        // Never roll back an unknown unit: re-read first (the re-read may fail again).
        let decision;
        try {
          decision = await store.resolveUnit(fence, v.unknown);
        } catch {
          continue;
        }
        if (decision === 'landed') {
          v.committed = v.unknown.checkpoint;
          stats.resolvedLanded++;
        } else if (decision === 'fenced' || decision === 'stale') {
          await readopt(store, v, fence);
        }
        delete v.unknown; // not-landed: it did not land; the committed checkpoint stands
        continue;
      }
      const left = TARGET_FRAMES - v.committed.sequencer.nextFrame;
      if (left <= 0) continue;
      units.push(buildUnit(v, Math.min(left, UNIT_FRAMES), fence, Date.now()));
      // Now and then (and surely once, in round 1) the lease moves under the driver.
      if (faults.enabled && (draw() < LEASE_MOVE_SHARE || (round === 1 && v === videos[0]))) await moveLease(clean, v.videoId, fence);
    }
    if (units.length === 0) continue;
    const outcome = await store.commit(fence, units, Date.now());
    stats.commits++;
    expect(outcome.kind, `seed ${seed}: the slot stays ours`).toBe('settled');
    const groups = packUnits(units);
    const landedIn = groups.map((g) => g.some((u) => outcome.outcomes.get(u.videoId) === 'landed'));
    const failedIn = groups.map((g) => g.some((u) => outcome.outcomes.get(u.videoId) !== 'landed'));
    if (groups.length > 1 && landedIn.some((l, i) => l && failedIn.slice(i + 1).some(Boolean))) stats.laterGroupFailed++;
    for (const u of units) {
      const v = videos.find((x) => x.videoId === u.videoId)!;
      const o: UnitOutcome | undefined = outcome.outcomes.get(u.videoId);
      const key = typeof o === 'object' ? 'conflict' : String(o);
      stats.outcomes.set(key, (stats.outcomes.get(key) ?? 0) + 1);
      if (o === 'landed') v.committed = u.checkpoint;
      else if (o === 'unknown') v.unknown = u;
      else if (o === 'fenced' || o === 'stale') await readopt(store, v, fence);
      else if (typeof o === 'object' && 'conflict' in o) stats.conflicts.push({ videoId: u.videoId, frame: o.conflict });
      else if (typeof o === 'object') expect.fail(`seed ${seed}: a well-formed unit was refused as invalid: ${o.invalid}`);
      else expect(o, `seed ${seed}: every unit has an outcome`).toBe('not-landed');
    }
  }
  clients.destroy();
  return { stats, videos, faults, fence };
}

describe('commits through lost answers, failed re-reads and later failing groups', () => {
  it.each([{ seed: 19 }, { seed: 4242 }])('seed $seed: records, summary counts and stored checkpoint match what the driver committed', async ({ seed }) => {
    const slot = 60 + (seed % 30);
    const { stats, videos, faults } = await drive(seed, slot);
    const why = `seed ${seed} (outcomes ${JSON.stringify(Object.fromEntries(stats.outcomes))}, faults ${JSON.stringify(Object.fromEntries(faults.counts))})`;
    // The run met every kind of fault it is about.
    expect(faults.count('TransactWriteItems', 'apply-then-lose'), why).toBeGreaterThan(0);
    expect(faults.count('TransactWriteItems', 'fail-before'), why).toBeGreaterThan(0);
    expect(faults.count('GetItem', 'fail-before'), why).toBeGreaterThan(0);
    expect(stats.outcomes.get('unknown') ?? 0, why).toBeGreaterThan(0);
    expect(stats.outcomes.get('fenced') ?? 0, why).toBeGreaterThan(0);
    expect(stats.laterGroupFailed, why).toBeGreaterThan(0);
    // No landed unit was ever rolled back and written again.
    expect(stats.conflicts, why).toEqual([]);
    const source = { ddb: stack.clients.ddb, resultsTable: stack.wiring.resultsTable };
    for (const v of videos) {
      const records = await allResults(source, v.videoId);
      const frames = records.map((r) => r.frame).sort((a, b) => a - b);
      expect(frames, `${why}: ${v.videoId} records`).toEqual(Array.from({ length: TARGET_FRAMES }, (_, i) => i));
      const summary = await getSummary(source, v.videoId);
      expect(summary, `${why}: ${v.videoId} summary`).toMatchObject({ status: 'complete', framesOk: records.length, framesFailed: 0, framesGap: 0, framesLate: 0 });
      const stored = await clean.readCommitState(v.videoId);
      expect(stored.checkpoint, `${why}: ${v.videoId} stored checkpoint`).toEqual(v.committed);
      expect(stored.token, `${why}: ${v.videoId} token`).toBe(v.token);
    }
  });
});
