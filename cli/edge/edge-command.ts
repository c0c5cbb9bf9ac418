/**
 * `affinity edge --config cameras.yaml [--json] [--status-seconds N]`: a fleet of
 * cameras from one edge process (issue 41, part 4). One {@link Camera} supervisor per
 * camera of the config file (cli/edge/edge-config.ts), each reconnecting, spooling and
 * uploading on its own; the file is watched, and a camera added, changed or removed is
 * started, restarted or stopped without touching the others (cli/edge/fleet.ts).
 *
 * Reports: each camera's `source.stalled` / `source.resumed` (one pair per outage) and
 * spool drops as lines on stderr and, with `--json`, as JSON lines on stdout; every
 * `--status-seconds` one status line per camera (stderr), one `health` JSON line (stdout,
 * with `--json`) and `<stateDir>/health.json` (written atomically: the container's
 * health check reads it).
 *
 * Credentials: the target's own (the local stack's, or the SDK chain for `--stack`), or
 * with `credentials: chain` / `profile:` in the config the AWS SDK's standard chain, e.g. a
 * `credential_process` (IAM Roles Anywhere) that renews short-lived credentials. A
 * failure to get or use them is retried with backoff and said in words
 * (cli/edge/upload-errors.ts); segments wait within the spool's bound.
 */
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import path from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { createAwsClientsFrom, type AwsClients } from '../../core/aws/clients.ts';
import { CliError, type Io } from '../io.ts';
import type { Target } from '../target.ts';
import type { BackoffOptions } from '../video/stream-segmenter.ts';
import { writeJsonFile } from '../video/stream-state.ts';
import { Camera, type CameraHealth } from './camera.ts';
import { EdgeConfigError, parseEdgeConfig, type CameraProblem, type EdgeConfig } from './edge-config.ts';
import { edgeEvent, eventLine, planFleet, statusLine, type EdgeEvent } from './fleet.ts';

export interface EdgeOptions {
  readonly configFile: string;
  readonly json?: boolean;
  /** Status lines and health output every N s. @default 10 */
  readonly statusSeconds?: number;
  /** How often the config file is checked for changes. @default 2 */
  readonly watchSeconds?: number;
  /** How long a stopping camera waits for its journaled segments to land. @default 30 */
  readonly drainSeconds?: number;
  /** Per-segment upload lines. */
  readonly verbose?: boolean;
  readonly backoff?: BackoffOptions;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Stops the fleet (the CLI wires SIGINT and SIGTERM to it). */
  readonly signal?: AbortSignal;
}

export interface EdgeHealth {
  readonly type: 'health';
  readonly atMs: number;
  readonly configFile: string;
  readonly cameras: readonly CameraHealth[];
  /** Cameras the file names that cannot run, with why. */
  readonly problems: readonly CameraProblem[];
}

export interface EdgeSummary {
  readonly cameras: readonly CameraHealth[];
  readonly events: readonly EdgeEvent[];
}

/** The S3 client the cameras use: the target's, or one over the target's endpoint with the SDK's standard credential chain. */
async function s3For(target: Target, config: EdgeConfig): Promise<{ s3: S3Client; own: AwsClients | undefined }> {
  if (config.credentials !== 'chain') return { s3: target.clients.s3, own: undefined };
  const given = target.clients.s3.config;
  const ep = given.endpoint ? await given.endpoint() : undefined;
  const endpoint = ep ? `${ep.protocol}//${ep.hostname}${ep.port ? `:${ep.port}` : ''}${ep.path && ep.path !== '/' ? ep.path : ''}` : undefined;
  const s3Config = {
    region: target.region,
    ...(endpoint ? { endpoint } : {}),
    ...(given.forcePathStyle ? { forcePathStyle: true } : {}),
    // no `credentials`: the SDK's default chain (env, SSO, ini profile with credential_process, container and instance roles)
    ...(config.profile ? { profile: config.profile } : {}),
  };
  const own = createAwsClientsFrom({ s3: s3Config, sqs: { region: target.region }, dynamodb: { region: target.region } });
  return { s3: own.s3, own };
}

export async function edgeCommand(target: Target, o: EdgeOptions, io: Io): Promise<EdgeSummary> {
  const env = o.env ?? process.env;
  const configFile = path.resolve(o.configFile);
  const signal = o.signal ?? new AbortController().signal;
  const load = (): EdgeConfig => parseEdgeConfig(readFileSync(configFile, 'utf8'), configFile, env);
  let config: EdgeConfig;
  try {
    config = load();
  } catch (e) {
    if (e instanceof EdgeConfigError || (e as NodeJS.ErrnoException).code === 'ENOENT') throw new CliError(`cannot use ${configFile}: ${(e as Error).message}`, 2);
    throw e;
  }
  const stateDir = path.resolve(path.dirname(configFile), config.stateDir);
  const { s3, own } = await s3For(target, config);
  const events: EdgeEvent[] = [];
  const cameras = new Map<string, Camera>();
  let problems: readonly CameraProblem[] = [];
  const width = (): number => Math.max(8, ...[...cameras.keys()].map((v) => v.length));
  const say = (video: string, line: string): void => io.err(`${video}: ${line}`);
  const emit = (e: EdgeEvent): void => {
    events.push(e);
    say(e.videoId, eventLine(e));
    if (o.json) io.out(JSON.stringify(e));
  };

  const startCamera = (c: Camera['config']): void => {
    const camera = new Camera(c, {
      s3,
      bucket: target.bucket,
      stateDir,
      ...(o.backoff ? { backoff: o.backoff } : {}),
      drainSeconds: o.drainSeconds ?? 30,
      verbose: Boolean(o.verbose),
      profile: config.profile,
      log: (line) => say(c.video, line),
      onOutage: (e, frame) => emit(edgeEvent(c.video, e, frame)),
      onDropped: (d) => {
        if (o.json) io.out(JSON.stringify({ type: 'spool.dropped', source: 'edge', videoId: c.video, atMs: Date.now(), ...d }));
      },
    });
    cameras.set(c.video, camera);
    void camera.start();
  };
  const reportProblems = (list: readonly CameraProblem[]): void => {
    for (const p of list) io.err(`${p.camera}: not started: ${p.message}`);
  };

  // apply a config: changes are serialised, so a burst of saves applies in order
  let applying = Promise.resolve();
  const apply = (next: EdgeConfig, first: boolean): Promise<void> =>
    (applying = applying.then(async () => {
      if (!first) {
        if (path.resolve(path.dirname(configFile), next.stateDir) !== stateDir) io.err(`warning: stateDir changed in ${configFile}; it applies when affinity edge restarts`);
        if (next.credentials !== config.credentials || next.profile !== config.profile) io.err(`warning: credentials / profile changed in ${configFile}; they apply when affinity edge restarts`);
      }
      const running = new Map([...cameras].map(([v, c]) => [v, c.config]));
      const plan = planFleet(running, next.cameras);
      problems = next.problems;
      reportProblems(next.problems);
      if (!first && plan.start.length + plan.stop.length + plan.restart.length > 0) {
        io.err(`${configFile} changed: ${plan.start.length} camera(s) to start, ${plan.restart.length} to restart, ${plan.stop.length} to stop, ${plan.unchanged.length} left running`);
      }
      const stopping = [...plan.stop, ...plan.restart.map((c) => c.video)];
      await Promise.all(
        stopping.map(async (v) => {
          const c = cameras.get(v)!;
          say(v, plan.stop.includes(v) ? 'removed from the config: stopping' : 'settings changed: restarting');
          await c.stop();
          cameras.delete(v);
        }),
      );
      for (const c of [...plan.start, ...plan.restart]) startCamera(c);
      config = next;
    }));

  io.err(`affinity edge: ${config.cameras.length} camera(s) from ${configFile} into s3://${target.bucket}/frames/<video>/ (${target.description}); state in ${stateDir}; credentials: ${config.credentials === 'chain' ? `the AWS SDK chain${config.profile ? `, profile ${config.profile}` : ''}` : 'the target\'s'}`);
  await apply(config, true);
  if (config.cameras.length === 0) io.err(`warning: ${configFile} lists no camera that can run; waiting for the file to change`);

  // the config file is polled (stat), not watched with inotify: editors and config tools replace files by rename
  let lastText = readFileSync(configFile, 'utf8');
  const onChange = (): void => {
    let text: string;
    try {
      text = readFileSync(configFile, 'utf8');
    } catch (e) {
      io.err(`warning: cannot read ${configFile} (${(e as Error).message}); the cameras keep running as they are`);
      return;
    }
    if (text === lastText) return;
    lastText = text;
    try {
      void apply(parseEdgeConfig(text, configFile, env), false);
    } catch (e) {
      if (!(e instanceof EdgeConfigError)) throw e;
      io.err(`warning: ${configFile} changed but cannot be used (${e.message}); the cameras keep running as they are`);
    }
  };
  watchFile(configFile, { interval: Math.round((o.watchSeconds ?? 2) * 1000) }, onChange);

  const healthFile = path.join(stateDir, 'health.json');
  const health = (): EdgeHealth => ({ type: 'health', atMs: Date.now(), configFile, cameras: [...cameras.values()].map((c) => c.health()), problems });
  const report = (): void => {
    const h = health();
    for (const c of h.cameras) io.err(statusLine(c, h.atMs, width()));
    if (o.json) io.out(JSON.stringify(h));
    try {
      writeJsonFile(healthFile, h);
    } catch (e) {
      io.err(`warning: cannot write ${healthFile}: ${(e as Error).message}`);
    }
  };
  const timer = setInterval(report, Math.round((o.statusSeconds ?? 10) * 1000));

  await new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })));
  unwatchFile(configFile, onChange);
  clearInterval(timer);
  await applying;
  io.err(`stopping ${cameras.size} camera(s): closing their open segments and uploading what is journaled`);
  await Promise.all([...cameras.values()].map((c) => c.stop()));
  report();
  own?.destroy();
  const final = [...cameras.values()].map((c) => c.health());
  const left = final.reduce((n, c) => n + (c.spool?.pendingSegments ?? 0), 0);
  if (left > 0) throw new CliError(`${left} segment(s) not uploaded yet; they stay journaled in ${stateDir} and go up on the next run`);
  return { cameras: final, events };
}
