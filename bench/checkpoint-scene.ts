/**
 * What a commit writes with a real scene (issue 44): in process, on the lease table's
 * twin, through the production adapter. A synthetic street scene (lab/scene/synthetic-scene.ts:
 * `--detections` per frame on average, objects born, moving and leaving) runs through the
 * real ByteTrack tracker (gpu-worker/vision/tracker.ts), the real sequencer, the worker's
 * own commit builder (gpu-worker/runtime/commit-builder.ts) with 10 rules (5 lines, 5 zones
 * with dwell, {@link tenRules}) run by the real rule engine (core/analytics), and every unit is committed by
 * `LeaseStore.commit` on the twin, events outbox included. A commit carries one segment
 * (`--k` frames: 60 = 2 s at 30 fps), as a live worker's does, or one JPEG frame.
 *
 *   npx node bench/checkpoint-scene.ts [--seconds 300] [--detections 5]
 *
 * Per configuration: the checkpoint's size (its JSON; the lease item as stored now,
 * compressed, and as the previous version stored it, a plain map) with its distribution
 * over the commits, and the write units per frame of each item of the transaction, as
 * DynamoDB bills transactions (2 per KB, rounded up, of each item; an update billed on
 * the larger of the item before and after it; the slot's ConditionCheck as one KB). The
 * twin stores what DynamoDB would; the units are computed from those sizes (the twin does
 * not bill). `baseline` rows are the workload `bench/api-calls-live.ts` measured live (the
 * stats processor: one whole-frame detection, a 60-byte state, no rules), computed the same way.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { join } from 'node:path';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { MemoryLeaseTable } from '../core/leases/memory/memory-lease-table.ts';
import { itemBytes } from '../core/leases/memory/item-values.ts';
import { storedEventsOf, storedItemsOf } from '../core/commit/commit-packing.ts';
import { checkpointRules, type VideoCheckpoint } from '../core/commit/checkpoint.ts';
import { rulesItemKey } from '../core/commit/rules-ref.ts';
import { VideoSequencer, type SequencedStep } from '../core/ordering/sequencer.ts';
import { validateRules, type RulesDocument } from '../core/analytics/rules.ts';
import { isPacked, type PackedRecordsItem } from '../core/commit/record-packing.ts';
import { decodeRecords, encodeRecords } from '../core/commit/record-formats.ts';
import { frameKey } from '../core/ingest/keys.ts';
import { segmentKey } from '../core/ingest/segment-keys.ts';
import type { Detection, FrameOutcome } from '../core/ports.ts';
import type { SlotFence } from '../core/leases/port.ts';
import { DEFAULT_TUNABLES } from '../core/config.ts';
import { buildCommit } from '../gpu-worker/runtime/commit-builder.ts';
import { ByteTracker, readTrackerSnapshot } from '../gpu-worker/vision/tracker.ts';
import { sceneDetections } from '../lab/scene/synthetic-scene.ts';
import { benchMain, commandLine, machine, RESULTS_DIR, writeResult, type Bench } from './harness/main.ts';
import { parseFlags, type Flag } from './harness/options.ts';

const FLAGS = {
  seconds: { num: [300, 10, 7_200] },
  detections: { num: [5, 0, 100] },
  out: { text: join(RESULTS_DIR, 'checkpoint-scene.json') },
} as const satisfies Record<string, Flag>;

/**
 * 10 rules over a 1920x1080 image, as a camera over a street might have: 5 counting lines
 * of 600 px (doorways, lanes, a crossing) and 5 zones of 480 x 360 px (a bus stop, an
 * entrance, parking spots) with a 5-s dwell. Every live track keeps its side of each
 * line (sides are of the infinite line) and its zone memberships in the rule state.
 */
export function tenRules(fps: number): RulesDocument {
  const r = validateRules({
    fps,
    lines: Array.from({ length: 5 }, (_, i) => ({ id: `line-${i}`, a: [150 + 330 * i, 200 + 130 * i], b: [150 + 330 * i + 420, 200 + 130 * i + 430], classes: ['person', 'car'] })),
    zones: Array.from({ length: 5 }, (_, i) => {
      const x = 80 + 360 * i;
      const y = i % 2 ? 620 : 140;
      return { id: `zone-${i}`, polygon: [[x, y], [x + 480, y], [x + 480, y + 360], [x, y + 360]], dwellSeconds: 5 };
    }),
  });
  if (!r.ok) throw new Error(r.errors.join('; '));
  return r.rules;
}

/** Transactional write units of an item of `bytes`: 2 per KB, rounded up. */
const txUnits = (bytes: number) => 2 * Math.max(1, Math.ceil(bytes / 1024));

interface Config {
  readonly name: string;
  readonly fps: number;
  /** Frames per commit: a segment's (k), or 1 (a JPEG frame). */
  readonly k: number;
  readonly source: 'segments' | 'frames';
  /** 'scene' (tracker + rules) or 'baseline' (the stats processor's workload). */
  readonly workload: 'scene' | 'baseline';
}

function quantiles(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? 0;
  return { min: s[0] ?? 0, p50: q(0.5), p90: q(0.9), p99: q(0.99), max: s.at(-1) ?? 0, mean: Math.round(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)) };
}
const r4 = (x: number) => Math.round(x * 10_000) / 10_000;

/**
 * The checkpoint as it was before issue 44's leaner stored form (decision 76): the tracker
 * snapshot as version 1 JSON (rebuilt from the binary one: the same tracks, each number as
 * its JSON text), the rules inline. `plain`: a plain map, as stored before issue 44;
 * `deflated`: the raw DEFLATE of its JSON, no dictionary, as the first compressed form.
 */
function checkpointsBefore(ck: VideoCheckpoint, workload: Config['workload']): { plain: Record<string, unknown>; deflated: Record<string, unknown> } {
  const processor = workload === 'scene' && ck.processor !== undefined ? JSON.stringify({ v: 1, ...readTrackerSnapshot(ck.processor) }) : ck.processor;
  const plain = { ...ck, ...(processor !== undefined ? { processor } : {}) };
  const { commitId, seq, ...rest } = plain;
  return { plain, deflated: { commitId, seq, z: new Uint8Array(deflateRawSync(JSON.stringify(rest))) } };
}

/** A packed item's size had its records been stored in format 1 (before issue 44: the JSON array of each frame's fields) or 2 (before decision 77). */
function olderFormatItemBytes(item: PackedRecordsItem, format: 1 | 2): number {
  const older = deflateRawSync(encodeRecords(decodeRecords(inflateRawSync(item.packedRecords)), format)).byteLength;
  return itemBytes(item as unknown as Parameters<typeof itemBytes>[0]) - item.packedRecords.byteLength + older;
}

async function runConfig(c: Config, seconds: number, detections: number, bench: Bench) {
  const twin = new MemoryLeaseTable({ prefix: `scene${c.fps}${c.k}` });
  const leases = twin.leases({ firstFrameNumber: 1, withEvents: true });
  const slot = 0;
  // Whole milliseconds, as a real clock (Date.now()) gives.
  const now = () => 1_800_000_000_000 + Math.round(frame * (1000 / c.fps));
  let frame = 1;
  const claim = await leases.claimSlot(slot, 'w1', now(), 3_600_000_000);
  const fence: SlotFence = { slot, workerId: 'w1', epoch: claim!.epoch };
  const videoId = `cam-${c.fps}fps-${c.source}`;
  await leases.pinVideo(videoId, slot, now());
  const adopted = await leases.adoptVideo(videoId, fence, now());
  if (typeof adopted === 'string') throw new Error(adopted);
  let committed: VideoCheckpoint = adopted.checkpoint;
  const token = adopted.token;
  const tracker = new ByteTracker();
  const stats = { framesSeen: 0, meanLuma: 0, lastFrame: null as number | null };
  const rules = c.workload === 'scene' ? { etag: '"rules-v1"', rules: tenRules(c.fps) } : undefined;
  const sequencerOptions = { reorderWaitMs: DEFAULT_TUNABLES.reorderWaitMs, reorderBufferFrames: DEFAULT_TUNABLES.reorderBufferFrames, firstFrameNumber: 1 };
  const readItem = async () => (await twin.ddb.send(new GetCommand({ TableName: twin.wiring.leasesTable, Key: { pk: `video#${videoId}` }, ConsistentRead: true }))).Item!;
  let prevStored = itemBytes(await readItem());
  let prevPlain = prevStored;
  let prevDeflatedBefore = prevStored;
  const rulesWritten = new Set<string>();
  const totalFrames = Math.round(seconds * c.fps);
  const ckJson: number[] = [];
  const ckStored: number[] = [];
  const ckPlain: number[] = [];
  const ckZ: number[] = [];
  const ckP: number[] = [];
  const ckDeflatedBefore: number[] = [];
  const snapshotBytes: number[] = [];
  const analyticsBytes: number[] = [];
  const trackCounts: number[] = [];
  const units = { slot: 0, checkpointStored: 0, checkpointPlain: 0, checkpointDeflatedBefore: 0, rulesItems: 0, results: 0, resultsFormat1: 0, resultsFormat2: 0, summary: 0, events: 0, eventsSingle: 0 };
  let events = 0;
  let eventItems = 0;
  let eventItemBytes = 0;
  let resultBytes = 0;
  let format1Bytes = 0;
  let format2Bytes = 0;
  const packedBytes: number[] = [];
  const packedBytesFormat2: number[] = [];
  let packedItems = 0;
  let detectionsOut = 0;
  let commits = 0;
  while (frame + c.k - 1 <= totalFrames) {
    const first = frame;
    const sequencer = new VideoSequencer(sequencerOptions, committed.sequencer);
    const key = c.source === 'segments' ? segmentKey(videoId, first) : frameKey(videoId, first);
    for (let f = first; f < first + c.k; f++) sequencer.offer({ frame: f, bucket: 'frames', key, sizeBytes: c.source === 'segments' ? 1_000_000 : 300_000 }, now());
    frame = first + c.k;
    const steps: SequencedStep[] = sequencer.take(now());
    const outcomes = new Map<number, FrameOutcome>();
    for (const s of steps) {
      if (s.type !== 'frame') throw new Error(`unexpected step ${s.type} at ${JSON.stringify(s)}`);
      const f = s.ref.frame;
      const ptsMs = c.source === 'segments' ? Math.round(((f - 1) * 1000 * 100) / c.fps) / 100 : undefined;
      let dets: Detection[];
      if (c.workload === 'scene') {
        dets = tracker.update(f, sceneDetections(videoId, f, { fps: c.fps, detections })).map((t) => ({ trackId: t.trackId, label: t.label, score: t.score, box: t.box }));
      } else {
        stats.framesSeen++;
        stats.meanLuma += (120 - stats.meanLuma) / stats.framesSeen;
        stats.lastFrame = f;
        dets = [{ trackId: stats.framesSeen, label: 'frame', score: 0.47, box: [0, 0, 1920, 1080] }];
      }
      detectionsOut += dets.length;
      outcomes.set(f, { status: 'ok', detections: dets, ...(ptsMs !== undefined ? { ptsMs } : {}) });
    }
    const processor = c.workload === 'scene' ? tracker.serialize() : JSON.stringify(stats);
    const built = buildCommit({
      videoId,
      token,
      workerId: fence.workerId,
      slot,
      committed,
      steps,
      outcomes,
      sequencer: sequencer.checkpointState(),
      complete: false,
      processor,
      nowMs: now(),
      ...(rules ? { rules } : {}),
      resultsRetentionDays: 30,
    });
    const u = built.unit;
    const outcome = await leases.commit(fence, [u], now());
    if (outcome.outcomes.get(videoId) !== 'landed') throw new Error(`commit at frame ${first}: ${JSON.stringify([...outcome.outcomes])}`);
    committed = u.checkpoint;
    commits++;
    // The lease item as stored now (compressed checkpoint), and as the previous version stored it (a plain map).
    const item = await readItem();
    const stored = itemBytes(item);
    const before = checkpointsBefore(u.checkpoint, c.workload);
    const plain = itemBytes({ ...item, checkpoint: before.plain as Record<string, never> });
    const deflatedBefore = itemBytes({ ...item, checkpoint: before.deflated as Record<string, never> });
    // The rules document out of line (decision 76): written by the first commit that refers to it.
    const rulesDoc = checkpointRules(u.checkpoint);
    if (rulesDoc && !rulesWritten.has(rulesDoc.ref)) {
      rulesWritten.add(rulesDoc.ref);
      const rulesItem = (await twin.ddb.send(new GetCommand({ TableName: twin.wiring.leasesTable, Key: { pk: rulesItemKey(rulesDoc.ref) }, ConsistentRead: true }))).Item;
      if (!rulesItem) throw new Error(`rules item ${rulesDoc.ref} not written`);
      units.rulesItems += txUnits(itemBytes(rulesItem));
    }
    ckJson.push(Buffer.byteLength(JSON.stringify(u.checkpoint)));
    ckStored.push(stored);
    ckPlain.push(plain);
    ckZ.push((item.checkpoint as { d: Uint8Array }).d.byteLength);
    ckP.push((item.checkpoint as { p?: Uint8Array }).p?.byteLength ?? 0);
    ckDeflatedBefore.push(deflatedBefore);
    snapshotBytes.push(Buffer.byteLength(processor));
    analyticsBytes.push(u.checkpoint.analytics ? Buffer.byteLength(JSON.stringify(u.checkpoint.analytics)) : 0);
    if (c.workload === 'scene') trackCounts.push(readTrackerSnapshot(processor).t.length);
    units.slot += 2;
    units.checkpointStored += txUnits(Math.max(prevStored, stored));
    units.checkpointPlain += txUnits(Math.max(prevPlain, plain));
    units.checkpointDeflatedBefore += txUnits(Math.max(prevDeflatedBefore, deflatedBefore));
    prevDeflatedBefore = deflatedBefore;
    prevStored = stored;
    prevPlain = plain;
    for (const r of storedItemsOf(u)) {
      const b = itemBytes(r as unknown as Parameters<typeof itemBytes>[0]);
      units.results += txUnits(b);
      resultBytes += b;
      const b1 = isPacked(r) ? olderFormatItemBytes(r, 1) : b;
      units.resultsFormat1 += txUnits(b1);
      format1Bytes += b1;
      const b2 = isPacked(r) ? olderFormatItemBytes(r, 2) : b;
      units.resultsFormat2 += txUnits(b2);
      format2Bytes += b2;
      if (isPacked(r)) {
        packedItems++;
        packedBytes.push(b);
        packedBytesFormat2.push(b2);
      }
    }
    units.summary += txUnits(itemBytes(u.summary as unknown as Parameters<typeof itemBytes>[0]));
    // The outbox as written (rule events batched per unit, event-packing.ts), and as one item per event before.
    for (const e of storedEventsOf(u)) {
      const b = itemBytes(e as unknown as Parameters<typeof itemBytes>[0]);
      units.events += txUnits(b);
      eventItemBytes += b;
      eventItems++;
    }
    for (const e of u.events ?? []) units.eventsSingle += txUnits(itemBytes(e as unknown as Parameters<typeof itemBytes>[0]));
    events += u.events?.length ?? 0;
  }
  const frames = commits * c.k;
  const perFrame = (x: number) => r4(x / frames);
  const commitUnits = (ck: number, results = units.results, ev = units.events, rulesItems = units.rulesItems) => units.slot + ck + rulesItems + results + units.summary + ev;
  const row = {
    name: c.name,
    workload: c.workload,
    source: c.source,
    fps: c.fps,
    framesPerCommit: c.k,
    videoSeconds: seconds,
    frames,
    commits,
    detectionsPerFrame: r4(detectionsOut / frames),
    eventsPerFrame: r4(events / frames),
    /** Outbox items (each a transactional write, a Pipes request and a bus event): batches of rule events and life events. */
    eventItemsPerFrame: r4(eventItems / frames),
    eventItemBytes: eventItems > 0 ? Math.round(eventItemBytes / eventItems) : 0,
    checkpointBytes: {
      json: quantiles(ckJson),
      leaseItemStored: quantiles(ckStored),
      leaseItemPlain: quantiles(ckPlain),
      leaseItemDeflatedBefore: quantiles(ckDeflatedBefore),
      deflated: quantiles(ckZ),
      processorBinary: quantiles(ckP),
      trackerSnapshot: quantiles(snapshotBytes),
      analyticsState: quantiles(analyticsBytes),
    },
    ...(trackCounts.length > 0 ? { trackerTracks: quantiles(trackCounts) } : {}),
    checkpointBytesWrittenPerFrame: {
      stored: Math.round(ckStored.reduce((a, b) => a + b, 0) / frames),
      deflatedBefore: Math.round(ckDeflatedBefore.reduce((a, b) => a + b, 0) / frames),
      plain: Math.round(ckPlain.reduce((a, b) => a + b, 0) / frames),
    },
    resultItemBytesPerFrame: r4(resultBytes / frames),
    ...(packedItems > 0 ? { resultItemBytesPerFrameFormat1: r4(format1Bytes / frames), resultItemBytesPerFrameFormat2: r4(format2Bytes / frames) } : {}),
    /** A packed item's size (a segment's records), as stored (format 3) and in format 2. */
    ...(packedItems > 0 ? { packedItemBytes: { stored: quantiles(packedBytes), format2: quantiles(packedBytesFormat2) } } : {}),
    writeUnitsPerFrame: {
      slotCheck: perFrame(units.slot),
      checkpoint: perFrame(units.checkpointStored),
      /** The checkpoint as the first compressed form stored it (DEFLATE of all its JSON, rules inline). */
      checkpointDeflatedBefore: perFrame(units.checkpointDeflatedBefore),
      checkpointUncompressed: perFrame(units.checkpointPlain),
      /** The out-of-line rules documents written (once per document, with the first commit that refers to it). */
      rulesItems: perFrame(units.rulesItems),
      results: perFrame(units.results),
      resultsFormat1: perFrame(units.resultsFormat1),
      resultsFormat2: perFrame(units.resultsFormat2),
      summary: perFrame(units.summary),
      events: perFrame(units.events),
      /** The outbox as one item per event (before issue 44's batches). */
      eventsSingle: perFrame(units.eventsSingle),
      commit: perFrame(commitUnits(units.checkpointStored)),
      /** As the previous version wrote: the checkpoint a plain map, packed records in format 1, one outbox item per event. */
      commitBefore: perFrame(commitUnits(units.checkpointPlain, units.resultsFormat1, units.eventsSingle, 0)),
    },
  };
  bench.say(
    `${c.name} (${c.workload}): ${commits} commits, ${row.detectionsPerFrame} det/frame, ${row.eventsPerFrame} events/frame; ` +
      `lease item p50/max ${row.checkpointBytes.leaseItemStored.p50}/${row.checkpointBytes.leaseItemStored.max} B (uncompressed ${row.checkpointBytes.leaseItemPlain.p50}/${row.checkpointBytes.leaseItemPlain.max}); ` +
      `WCU/frame commit ${row.writeUnitsPerFrame.commit} (before: ${row.writeUnitsPerFrame.commitBefore}): checkpoint ${row.writeUnitsPerFrame.checkpoint} (first compressed form ${row.writeUnitsPerFrame.checkpointDeflatedBefore}, uncompressed ${row.writeUnitsPerFrame.checkpointUncompressed}), lease item mean/p99 ${row.checkpointBytes.leaseItemStored.mean}/${row.checkpointBytes.leaseItemStored.p99} B, results ${row.writeUnitsPerFrame.results} (${row.writeUnitsPerFrame.resultsFormat1}), events ${row.writeUnitsPerFrame.events} (${row.writeUnitsPerFrame.eventsSingle}) in ${row.eventItemsPerFrame} items/frame of ${row.eventItemBytes} B`,
  );
  return row;
}

async function main(bench: Bench, args: readonly string[]): Promise<number> {
  const o = parseFlags('checkpoint-scene.ts', FLAGS, args);
  if (!o) return 0;
  const configs: Config[] = [];
  for (const workload of ['scene', 'baseline'] as const) {
    configs.push({ name: '30 fps, 2-s segments', fps: 30, k: 60, source: 'segments', workload });
    configs.push({ name: '10 fps, 4-s segments', fps: 10, k: 40, source: 'segments', workload });
    configs.push({ name: '3 fps, 10-s segments', fps: 3, k: 30, source: 'segments', workload });
    configs.push({ name: '30 fps, JPEG frames (one frame per commit)', fps: 30, k: 1, source: 'frames', workload });
  }
  const rows = [];
  // JPEG frames commit once per frame: a fifth of the video time keeps the run short.
  for (const c of configs) rows.push(await runConfig(c, c.k === 1 ? Math.max(10, o.seconds / 5) : o.seconds, o.detections, bench));
  writeResult(o.out, {
    command: commandLine('checkpoint-scene.ts', args),
    date: new Date().toISOString(),
    machine: machine(),
    setup: { detectionsPerFrame: o.detections, scene: 'lab/scene/synthetic-scene.ts (1920x1080, objects live ~8 s, 4 % missed, 6 % low-score)', rules: '10 (5 lines of 600 px, 5 zones of 480 x 360 px with a 5-s dwell)', resultsRetentionDays: 30 },
    notes: [
      'In process, on the lease table\'s twin through the production adapter (LeaseStore.commit): real tracker, sequencer, commit builder, rule engine and packing. Sizes are the twin\'s (DynamoDB\'s item size rules); write units are computed from them (2 per KB of each item of the transaction, an update on the larger of before and after, the slot ConditionCheck as 1 KB): a model of the bill, not a measured one.',
      'A commit carries one segment (or one JPEG frame), as a worker that keeps up commits; a backlog commits several per transaction (fewer checkpoint writes per frame).',
      'leaseItemStored: the video\'s lease item as now stored (decision 76: the JSON deflated with a preset dictionary, the tracker\'s binary float32 snapshot as raw bytes, processorBinary; the rules document out of line, its item written once, rulesItems); leaseItemDeflatedBefore: the same item as issue 44\'s first compressed form stored it (raw DEFLATE of the whole JSON, tracker snapshot as version 1 JSON, rules inline); leaseItemPlain: as stored before issue 44 (a plain map). The version 1 tracker JSON is rebuilt from the float32 state, so its numbers are float32 values written as JSON (as long as doubles\' text). results / resultsFormat2 / resultsFormat1: packed records as now stored (format 3, decision 77), in format 2 (issue 44, decision 65) and in format 1 (before issue 44). events / eventsSingle: the outbox as now written (a unit\'s rule events one batch item, decision 72) and one item per event as before. commitBefore: all three as before.',
      'baseline: the workload bench/api-calls-live.ts ran live (the stats processor: one whole-frame detection, a 60-byte state, no rules), computed the same way, so that the scene\'s extra cost can be added to the live figures.',
    ],
    rows,
  }, bench.say);
  return 0;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  await benchMain('checkpoint-scene', (bench) => main(bench, args));
}
