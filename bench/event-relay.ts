/**
 * Events per second through the local pipe (issue 22): N outbox items are written into
 * the events table (BatchWriteItem, 25 at a time, spread over videos) on DynamoDB Local
 * with no relay running; then the relay starts, reads them from the stream (from its
 * oldest record, as after a restart without a checkpoint) and puts them on the bus
 * stand-in queue on fauxqs, which a consumer drains. The relay's figure runs from its
 * start to the last event received, so the writer's speed (DynamoDB Local's, here the
 * slower side) does not bound it; the writer's rate is reported beside it. Each run also
 * checks every event arrived once and in order per video.
 *
 *   npx node bench/event-relay.ts [--events 2000] [--videos 8] [--runs 3]
 *
 * This is the laptop's relay, not AWS: Pipes' throughput is bounded by the stream's shards
 * and PutEvents quotas, not by this figure.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { EventRelay } from '../local/event-relay.ts';
import { drainBusQueue, sampleEvents, startEventEmulators, writeEvents } from '../harness/event-fixtures.ts';
import { benchMain, commandLine, machine, RESULTS_DIR, writeResult, type Bench } from './harness/main.ts';
import { numberOption, percentile } from './support.ts';

interface RunFigures {
  readonly events: number;
  readonly writeMs: number;
  readonly writerEventsPerSecond: number;
  readonly deliveredMs: number;
  readonly eventsPerSecond: number;
  readonly duplicates: number;
  readonly outOfOrderVideos: number;
}

export async function runEventRelayBench(o: { events: number; videos: number; runs: number }, bench: Bench): Promise<number> {
  const emu = await startEventEmulators('EvBench');
  const streams = new DynamoDBStreamsClient(emu.streamsConfig);
  const runs: RunFigures[] = [];
  try {
    for (let run = 0; run < o.runs && !bench.interrupted(); run++) {
      // A fresh table (and stream) per run, so no run reads another's records.
      const table = await emu.createTable(`EvBench-events-run${run}`);
      const perVideo = Math.ceil(o.events / o.videos);
      const byVideo = Array.from({ length: o.videos }, (_, v) => sampleEvents(`bench-${run}-${v}`, perVideo));
      const items = Array.from({ length: perVideo }, (_, i) => byVideo.map((events) => events[i]!)).flat().slice(0, o.events);
      const w0 = performance.now();
      await writeEvents(emu.ddb, table, items);
      const writeMs = performance.now() - w0;
      const t0 = performance.now();
      const relay = new EventRelay({ dynamodb: emu.dynamodb, streams, sqs: emu.sqs, tableName: table, queueUrl: emu.queueUrl, idlePollMs: 20 }).start();
      try {
        const received: string[][] = [];
        let count = 0;
        while (count < items.length && !bench.interrupted()) {
          const got = await drainBusQueue(emu.sqs, emu.queueUrl);
          received.push(got.map((e) => `${e.detail.videoId}\u0000${e.detail.eventId}`));
          count += got.length;
          if (got.length === 0) await new Promise((r) => setTimeout(r, 5));
        }
        const deliveredMs = performance.now() - t0;
        const all = received.flat();
        const order = new Map<string, string[]>();
        for (const key of all) {
          const [video, id] = key.split('\u0000') as [string, string];
          order.set(video, [...(order.get(video) ?? []), id]);
        }
        const outOfOrderVideos = [...order.values()].filter((ids) => ids.some((id, i) => i > 0 && id < ids[i - 1]!)).length;
        const figures = {
          events: items.length,
          writeMs: Math.round(writeMs),
          writerEventsPerSecond: Math.round((items.length / writeMs) * 1000),
          deliveredMs: Math.round(deliveredMs),
          eventsPerSecond: Math.round((items.length / deliveredMs) * 1000),
          duplicates: all.length - new Set(all).size,
          outOfOrderVideos,
        };
        runs.push(figures);
        bench.say(`${bench.clock()}  run ${run + 1}: ${figures.events} events written in ${figures.writeMs} ms (${figures.writerEventsPerSecond}/s); relay start -> all on the queue ${figures.deliveredMs} ms: ${figures.eventsPerSecond} events/s (duplicates ${figures.duplicates}, videos out of order ${figures.outOfOrderVideos})`);
      } finally {
        await relay.stop();
      }
    }
  } finally {
    streams.destroy();
    await emu.stop();
  }
  const rates = runs.map((r) => r.eventsPerSecond);
  const median = percentile(rates, 50);
  bench.say(`median ${median} events/s over ${runs.length} run(s)`);
  writeResult(join(RESULTS_DIR, 'event-relay.json'), { scenario: 'event-relay', command: commandLine('event-relay.ts'), machine: machine(), ...o, medianEventsPerSecond: median, runs }, bench.say);
  return runs.every((r) => r.duplicates === 0 && r.outOfOrderVideos === 0) ? 0 : 1;
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { events: { type: 'string', default: '2000' }, videos: { type: 'string', default: '8' }, runs: { type: 'string', default: '3' } } });
  const o = { events: numberOption(values, 'events', 1, 1_000_000), videos: numberOption(values, 'videos', 1, 10_000), runs: numberOption(values, 'runs', 1, 100) };
  await benchMain('event-relay', (bench) => runEventRelayBench(o, bench));
}
