/**
 * Runs every benchmark once, one after another (they share the machine's two cores, so
 * running them side by side would distort each other's figures), with their default
 * arguments. Each writes its own file under bench/results/; see bench/README.md.
 *
 * Run: npm run bench  (about 35 minutes on the 2-core development machine)
 * One benchmark: npx node bench/<name>.ts
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
/** In the order of bench/README.md. */
const BENCHMARKS = ['failover.ts', 'api-calls.ts', 'api-calls-live.ts', 'vision-throughput.ts', 'late-frames.ts', 'soak.ts', 'synth-size.ts', 'janitor-calls.ts', 'chaos.ts', 'compare.ts', 'worker-throughput.ts'];

const failed: string[] = [];
for (const script of BENCHMARKS) {
  console.log(`\n=== bench/${script} ===`);
  const run = spawnSync(process.execPath, [join(here, script)], { stdio: 'inherit' });
  if (run.status !== 0) failed.push(`${script} (exit ${run.status ?? run.signal})`);
}
if (failed.length > 0) {
  console.error(`\nFailed: ${failed.join(', ')}`);
  process.exitCode = 1;
} else {
  console.log('\nAll benchmarks ran; figures are in bench/results/.');
}
