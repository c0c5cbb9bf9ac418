/**
 * Runs every living benchmark once, one after another (they share the machine's two cores,
 * so running them side by side would distort each other's figures), in the order of
 * bench/README.md, with the arguments that write its current result file under
 * bench/results/ (the file each README section names). A benchmark whose tool is missing
 * (the YOLO graph in ../shared/models, the `ffmpeg` binary) says so and is skipped or fails
 * by itself; the others still run.
 *
 * Run: npm run bench  (about an hour on the 2-core development machine)
 * One benchmark: npx node bench/<name>.ts, with the arguments below for its committed file.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const results = (file: string) => join(here, 'results', file);

/** [script, arguments], in the order of bench/README.md. */
const GPU_SIM = ['--commits', 'model', '--scenario', 'all', '--batches', '8', '--frames', '600', '--seconds', '30'];
const BENCHMARKS: readonly (readonly [string, readonly string[]])[] = [
  ['failover.ts', []], // failover.json
  ['failover-aws.ts', []], // failover-aws.json (a model of AWS's timeline on lab/sim)
  ['outage.ts', []], // outage.json
  ['api-calls.ts', []], // api-calls.json
  ['api-calls-live.ts', ['--fps', '3,10,30', '--gather-ms', '250', '--seconds', '20']], // api-calls-live.json
  ['api-calls-live.ts', ['--source', 'segments', '--fps', '3,10,30', '--segment-seconds', '10,4,2', '--gather-ms', '250', '--seconds', '40']], // api-calls-live-segments.json
  ['checkpoint-scene.ts', []], // checkpoint-scene.json (in process, on the twin)
  ['api-calls-live.ts', ['--processor', 'scene', '--source', 'segments', '--fps', '3', '--segment-seconds', '10', '--gather-ms', '250', '--seconds', '40']], // api-calls-live-scene.json (the scene live: the model's cross-check)
  ['cost-model.ts', []], // cost-model.json, from the three files above and the synthesized template
  ['vision-throughput.ts', []], // vision-throughput.json
  ['pipeline-cpu.ts', ['--out', results('pipeline-cpu.json')]],
  ['worker-throughput.ts', []], // worker-throughput.json
  ['gpu-sim.ts', GPU_SIM], // gpu-sim.json
  ['gpu-sim.ts', [...GPU_SIM, '--source', 'segments', '--segment-seconds', '2', '--segment-size', '640x480', '--label', 'segments-640']],
  ['gpu-sim.ts', [...GPU_SIM, '--source', 'segments', '--segment-seconds', '2', '--segment-size', '160x120', '--label', 'segments-160']],
  ['video-decode.ts', ['--rounds', '5', '--out', results('video-decode.json')]],
  ['late-frames.ts', []], // late-frames.json
  ['soak.ts', []], // soak.json
  ['chaos.ts', ['--default-tunables', '--timeout-s', '420', '--out', results('chaos.json')]],
  ['sim.ts', ['--seeds', '20000', '--jobs', '2', '--out', results('sim.json')]],
  ['compare.ts', []], // compare.json
  ['router-ingest.ts', []], // router-ingest.json
  ['crash-loop.ts', []], // crash-loop.json
  ['analytics.ts', ['--clips', '4']], // analytics.json
  ['synth-size.ts', []], // prints its table; test/infra/scale.test.ts asserts the limits
  ['janitor-calls.ts', []], // janitor-calls.json
];

const failed: string[] = [];
for (const [script, args] of BENCHMARKS) {
  const line = [script, ...args].join(' ');
  console.log(`\n=== bench/${line} ===`);
  const run = spawnSync(process.execPath, [join(here, script), ...args], { stdio: 'inherit' });
  if (run.status !== 0) failed.push(`${line} (exit ${run.status ?? run.signal})`);
}
if (failed.length > 0) {
  console.error(`\nFailed: ${failed.join(', ')}`);
  process.exitCode = 1;
} else {
  console.log('\nAll benchmarks ran; figures are in bench/results/.');
}
