/**
 * Where the machine's CPU went during a benchmark window, by role: the GPU worker
 * process, DynamoDB Local (its JVM), and the bench process itself (which hosts fauxqs's
 * S3 and SQS, the router and the uploader). On a 2-core machine the emulators share the
 * cores with the model, which they would not do in AWS; this says how much they took.
 * Linux only (/proc); elsewhere every figure is NaN.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's utime/stime (USER_HZ, 100 on Linux). */
export const TICKS_PER_SECOND = 100;

/** The fields the benchmarks use of a `/proc/<pid>/stat` (or `/proc/<pid>/task/<tid>/stat`) line. */
export function parseProcStat(stat: string): { comm: string; ppid: number; ticks: number; startTicks: string } {
  // comm may hold spaces and parentheses; the fields after the last ')' are fixed.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  return { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]), startTicks: fields[19] ?? '' };
}

export type CpuRole = 'worker' | 'dynamodb-local' | 'bench process (S3, SQS, router, uploader)' | 'other children';

interface Snapshot {
  readonly atMs: number;
  /** Busy ticks of the whole machine (/proc/stat, all CPUs). */
  readonly machineBusyTicks: number;
  /** pid -> role and cumulative utime + stime ticks. */
  readonly processes: Map<number, { role: CpuRole; ticks: number }>;
}

/** CPU-seconds by role over a window, and the machine's capacity in it. */
export interface CpuWindow {
  readonly seconds: number;
  /** Wall seconds x cores. */
  readonly capacityCoreSeconds: number;
  readonly machineBusyCoreSeconds: number;
  readonly byRole: Record<CpuRole, number>;
}

const ROLES: CpuRole[] = ['worker', 'dynamodb-local', 'bench process (S3, SQS, router, uploader)', 'other children'];

/** Command lines by pid and start time: read once per process, not at every sample. */
const cmdlines = new Map<string, string>();

function readProcess(pid: number): { ppid: number; ticks: number; cmdline: string } | undefined {
  try {
    const stat = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    const identity = `${pid}:${stat.startTicks}`;
    let cmdline = cmdlines.get(identity);
    if (cmdline === undefined) {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      cmdlines.set(identity, cmdline);
    }
    return { ppid: stat.ppid, ticks: stat.ticks, cmdline };
  } catch {
    return undefined;
  }
}

function roleOf(pid: number, cmdline: string): CpuRole {
  if (pid === process.pid) return 'bench process (S3, SQS, router, uploader)';
  if (cmdline.includes('gpu-worker')) return 'worker';
  if (cmdline.includes('java') && cmdline.includes('DynamoDBLocal')) return 'dynamodb-local';
  return 'other children';
}

function snapshot(): Snapshot {
  const all = new Map<number, { ppid: number; ticks: number; cmdline: string }>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    const p = readProcess(pid);
    if (p) all.set(pid, p);
  }
  // This process and its descendants (workers are detached into their own groups but keep this parent).
  const ours = (pid: number): boolean => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
      if (p === process.pid) return true;
      p = all.get(p)?.ppid ?? 0;
    }
    return false;
  };
  const processes = new Map<number, { role: CpuRole; ticks: number }>();
  for (const [pid, p] of all) if (ours(pid)) processes.set(pid, { role: roleOf(pid, p.cmdline), ticks: p.ticks });
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal ...: busy = all but idle and iowait.
  const busy = cpu.reduce((a, b) => a + b, 0) - (cpu[3] ?? 0) - (cpu[4] ?? 0);
  return { atMs: Date.now(), machineBusyTicks: busy, processes };
}

/** Samples every process of this tree every `intervalMs` until stopped. */
export class CpuSampler {
  readonly #snapshots: Snapshot[] = [];
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #cores: number;

  constructor(cores: number, intervalMs = 250) {
    this.#cores = cores;
    if (process.platform !== 'linux') return;
    this.#snapshots.push(snapshot());
    this.#timer = setInterval(() => this.#snapshots.push(snapshot()), intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    if (process.platform === 'linux') this.#snapshots.push(snapshot());
  }

  /** CPU use between the snapshots nearest `fromMs` and `toMs` (epoch ms). */
  window(fromMs: number, toMs: number): CpuWindow {
    const nearest = (t: number) => this.#snapshots.reduce<Snapshot | undefined>((best, s) => (!best || Math.abs(s.atMs - t) < Math.abs(best.atMs - t) ? s : best), undefined);
    const a = nearest(fromMs);
    const b = nearest(toMs);
    const byRole = Object.fromEntries(ROLES.map((r) => [r, Number.NaN])) as Record<CpuRole, number>;
    if (!a || !b || a === b) return { seconds: Number.NaN, capacityCoreSeconds: Number.NaN, machineBusyCoreSeconds: Number.NaN, byRole };
    for (const r of ROLES) byRole[r] = 0;
    for (const [pid, end] of b.processes) {
      // A process born inside the window counts from 0.
      const start = a.processes.get(pid)?.ticks ?? 0;
      byRole[end.role] += (end.ticks - start) / TICKS_PER_SECOND;
    }
    const seconds = (b.atMs - a.atMs) / 1000;
    return { seconds, capacityCoreSeconds: seconds * this.#cores, machineBusyCoreSeconds: (b.machineBusyTicks - a.machineBusyTicks) / TICKS_PER_SECOND, byRole };
  }
}
