import { runSeed } from './run.ts';
let shown = 0;
for (let seed = 1; seed <= 300 && shown < 2; seed++) {
  const r = await runSeed(seed);
  if ((r.faults['replay-race-reached'] ?? 0) > (r.faults['replay-race-met'] ?? 0)) {
    shown++;
    console.log('seed', seed);
    const i = r.trace.findIndex((t) => t.what.includes('replay race'));
    for (const t of r.trace.slice(Math.max(0, i - 6), i + 25)) console.log(t.atMs, t.what.slice(0, 200));
  }
}
