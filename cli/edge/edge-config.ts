/**
 * The camera list of `affinity edge --config <file>` (JSON, or the YAML subset of
 * cli/edge/mini-yaml.ts), checked and resolved. Pure: the caller reads the file and passes
 * the environment.
 *
 * Secrets never sit in the file: `${NAME}` in a camera's URL (or any string of it) is
 * replaced by the environment variable NAME when the file is read, and the resolved URL
 * lives only in memory (logs and the health output show it with the password as `***`;
 * state files hold the video id, never the URL; a camera transcoded by an `ffmpeg` child
 * gets its packets on the child's stdin, not its URL: cli/video/live-transcoder.ts). A camera whose variable is not set is
 * refused on its own, with the variable's name; the other cameras run.
 *
 * ```yaml
 * stateDir: /var/lib/affinity-edge      # journals and spools (default .affinity-edge)
 * defaults:                             # any camera field; a camera's own value wins
 *   segmentSeconds: 2
 *   spoolMaxBytes: 512MiB
 * cameras:
 *   - video: door-1
 *     url: rtsp://admin:${DOOR1_PASSWORD}@10.0.0.5:554/h264
 *   - video: yard-2
 *     url: rtsp://10.0.0.6/stream1
 *     segmentSeconds: 4
 * ```
 */
import { siteProblem, videoIdSiteProblem } from '../../core/ingest/site.ts';
import { SITE_ENV } from '../site.ts';
import { VIDEO_ID_PATTERN } from '../../core/ingest/keys.ts';
import type { SegmentContainer } from '../video/segment-file.ts';
import { MiniYamlError, parseMiniYaml } from './mini-yaml.ts';

/** One camera, resolved (placeholders replaced, defaults applied). */
export interface CameraConfig {
  /** The video id its segments go up under (frames/<video>/...); also the camera's name in logs. */
  readonly video: string;
  /** The source URL with its placeholders resolved (never logged as such: see redactSource). */
  readonly url: string;
  readonly segmentSeconds: number;
  readonly container: SegmentContainer;
  /** Bytes of closed segments the camera's spool may hold while S3 cannot take them; the oldest go first. */
  readonly spoolMaxBytes: number;
  /** A live read silent this long is a dropped connection. */
  readonly readTimeoutSeconds: number;
  /** Number of a new video's first frame. */
  readonly firstFrame: number;
  /** Average bit rate, kbit/s, when the camera is transcoded (another codec than H.264/H.265, or open GOPs); absent: constant quality. */
  readonly bitrateKbps?: number | undefined;
}

/** A camera the file names but that cannot run (the others do). */
export interface CameraProblem {
  /** The video id, or `cameras[i]` when it has none. */
  readonly camera: string;
  readonly message: string;
}

export interface EdgeConfig {
  readonly stateDir: string;
  /** `chain`: the AWS SDK's standard credential chain (optionally a profile), instead of the target's own credentials. */
  readonly credentials: 'target' | 'chain';
  readonly profile: string | undefined;
  readonly cameras: readonly CameraConfig[];
  readonly problems: readonly CameraProblem[];
}

export class EdgeConfigError extends Error {
  override name = 'EdgeConfigError';
}

export const EDGE_DEFAULTS = {
  stateDir: '.affinity-edge',
  segmentSeconds: 2,
  container: 'mpegts' as SegmentContainer,
  /** 1 GiB per camera: about 70 minutes of a 2-Mbit/s camera while the uplink is down. */
  spoolMaxBytes: 1024 ** 3,
  readTimeoutSeconds: 10,
  firstFrame: 0,
} as const;

const CAMERA_KEYS = ['video', 'url', 'segmentSeconds', 'container', 'spoolMaxBytes', 'readTimeoutSeconds', 'firstFrame', 'bitrateKbps'] as const;
const TOP_KEYS = ['stateDir', 'credentials', 'profile', 'site', 'defaults', 'cameras'] as const;
const CONTAINERS: Readonly<Record<string, SegmentContainer>> = { ts: 'mpegts', mpegts: 'mpegts', mp4: 'mp4', mkv: 'matroska', matroska: 'matroska' };
const UNITS: Readonly<Record<string, number>> = { '': 1, b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 };

/** Parses the file's text (`.json` as JSON, anything else as the YAML subset), then {@link resolveEdgeConfig}. */
export function parseEdgeConfig(text: string, fileName: string, env: Readonly<Record<string, string | undefined>>): EdgeConfig {
  let raw: unknown;
  try {
    raw = fileName.toLowerCase().endsWith('.json') ? JSON.parse(text) : parseMiniYaml(text);
  } catch (e) {
    if (e instanceof SyntaxError || e instanceof MiniYamlError) throw new EdgeConfigError(`${fileName}: ${e.message}`);
    throw e;
  }
  return resolveEdgeConfig(raw, env);
}

/** Checks the parsed document; file-wide mistakes throw, a camera's own mistakes become {@link CameraProblem}s. */
export function resolveEdgeConfig(raw: unknown, env: Readonly<Record<string, string | undefined>>): EdgeConfig {
  if (!isRecord(raw)) throw new EdgeConfigError('the config must be a mapping with a "cameras" list');
  unknownKeys(raw, TOP_KEYS, 'the config');
  if (!Array.isArray(raw.cameras)) throw new EdgeConfigError('the config needs "cameras": a list of cameras, each with "video" and "url"');
  const defaults = raw.defaults ?? {};
  if (!isRecord(defaults)) throw new EdgeConfigError('"defaults" must be a mapping of camera fields');
  unknownKeys(defaults, CAMERA_KEYS.filter((k) => k !== 'video' && k !== 'url'), '"defaults"');
  const credentials = raw.credentials ?? 'target';
  if (credentials !== 'target' && credentials !== 'chain') throw new EdgeConfigError(`"credentials" must be "target" (the stack's own) or "chain" (the AWS SDK's standard chain), not ${JSON.stringify(credentials)}`);
  if (raw.profile !== undefined && raw.profile !== null && typeof raw.profile !== 'string') throw new EdgeConfigError('"profile" must be the name of an AWS config profile');
  const stateDir = raw.stateDir ?? EDGE_DEFAULTS.stateDir;
  if (typeof stateDir !== 'string' || stateDir === '') throw new EdgeConfigError('"stateDir" must be a folder path');

  // The uploader's site (issue 45, cli/site.ts): `site:` in the file, else AFFINITY_SITE. A
  // camera whose video id is not `<site>.<camera>` is refused on its own, as the uploader
  // policy would refuse its writes.
  if (raw.site !== undefined && raw.site !== null && typeof raw.site !== 'string') throw new EdgeConfigError('"site" must be the uploader\'s site name (video ids are <site>.<camera>)');
  const site = typeof raw.site === 'string' && raw.site !== '' ? raw.site : env[SITE_ENV] || undefined;
  if (site !== undefined && siteProblem(site)) throw new EdgeConfigError(`${siteProblem(site)} (the site from ${typeof raw.site === 'string' && raw.site !== '' ? '"site"' : SITE_ENV})`);
  const cameras: CameraConfig[] = [];
  const problems: CameraProblem[] = [];
  const seen = new Set<string>();
  raw.cameras.forEach((c: unknown, i: number) => {
    const name = isRecord(c) && typeof c.video === 'string' ? c.video : `cameras[${i}]`;
    try {
      if (!isRecord(c)) throw new EdgeConfigError('must be a mapping with "video" and "url"');
      const camera = resolveCamera({ ...defaults, ...c }, env);
      if (seen.has(camera.video)) throw new EdgeConfigError(`video id "${camera.video}" is listed twice; each camera needs its own`);
      const offSite = site === undefined ? undefined : videoIdSiteProblem(camera.video, site);
      if (offSite) throw new EdgeConfigError(offSite);
      seen.add(camera.video);
      cameras.push(camera);
    } catch (e) {
      if (!(e instanceof EdgeConfigError)) throw e;
      problems.push({ camera: name, message: e.message });
    }
  });
  return { stateDir, credentials: raw.profile ? 'chain' : credentials, profile: typeof raw.profile === 'string' ? raw.profile : undefined, cameras, problems };
}

function resolveCamera(c: Record<string, unknown>, env: Readonly<Record<string, string | undefined>>): CameraConfig {
  unknownKeys(c, CAMERA_KEYS, 'a camera');
  if (typeof c.video !== 'string' || !VIDEO_ID_PATTERN.test(c.video) || c.video === '.' || c.video === '..') {
    throw new EdgeConfigError(`"video" must be a video id of 1-128 of A-Z a-z 0-9 . _ - (got ${JSON.stringify(c.video)})`);
  }
  if (typeof c.url !== 'string' || c.url === '') throw new EdgeConfigError('needs "url": the camera\'s RTSP URL (or any URL FFmpeg opens)');
  const container = CONTAINERS[String(c.container ?? 'ts')];
  if (!container) throw new EdgeConfigError(`"container" must be ts, mp4 or mkv (got ${JSON.stringify(c.container)})`);
  return {
    video: c.video,
    url: substitute(c.url, env),
    segmentSeconds: positive(c.segmentSeconds ?? EDGE_DEFAULTS.segmentSeconds, 'segmentSeconds'),
    container,
    spoolMaxBytes: bytes(c.spoolMaxBytes ?? EDGE_DEFAULTS.spoolMaxBytes),
    readTimeoutSeconds: positive(c.readTimeoutSeconds ?? EDGE_DEFAULTS.readTimeoutSeconds, 'readTimeoutSeconds'),
    firstFrame: nonNegativeInt(c.firstFrame ?? EDGE_DEFAULTS.firstFrame, 'firstFrame'),
    ...(c.bitrateKbps !== undefined ? { bitrateKbps: kbps(c.bitrateKbps) } : {}),
  };
}

/** Replaces `${NAME}` with the environment's NAME; `$${` stays a literal `${`. */
export function substitute(text: string, env: Readonly<Record<string, string | undefined>>): string {
  // the user:password part of a URL: a value there is percent-encoded, so a password with @ : / in it keeps the URL's meaning
  const scheme = text.indexOf('://');
  const authorityEnd = scheme < 0 ? -1 : text.indexOf('/', scheme + 3) < 0 ? text.length : text.indexOf('/', scheme + 3);
  const userinfoEnd = scheme < 0 ? -1 : text.lastIndexOf('@', authorityEnd);
  return text.replace(/\$(\$)?\{([^}]*)\}/g, (whole, escaped: string | undefined, name: string, offset: number) => {
    if (escaped) return whole.slice(1);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new EdgeConfigError(`"\${${name}}" is no environment variable name`);
    const value = env[name];
    if (value === undefined) throw new EdgeConfigError(`the environment variable ${name} is not set (the URL names \${${name}}); set it in the edge process's environment, e.g. an EnvironmentFile of its systemd unit`);
    return offset > scheme && offset < userinfoEnd ? encodeURIComponent(value) : value;
  });
}

/** `512MiB`, `2GB`, `1000000` → bytes. */
export function bytes(v: unknown): number {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v > 0) return v;
  const m = typeof v === 'string' ? /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(v.trim()) : null;
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined || !(Number(m[1]) > 0)) throw new EdgeConfigError(`"spoolMaxBytes" must be a positive size such as 1073741824, 512MiB or 2GB (got ${JSON.stringify(v)})`);
  return Math.floor(Number(m[1]) * unit);
}

function kbps(v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new EdgeConfigError(`"bitrateKbps" must be a positive number of kbit/s, the average rate of a transcoded camera (got ${JSON.stringify(v)})`);
  return v;
}

function positive(v: unknown, name: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) throw new EdgeConfigError(`"${name}" must be a positive number of seconds (got ${JSON.stringify(v)})`);
  return v;
}

function nonNegativeInt(v: unknown, name: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new EdgeConfigError(`"${name}" must be a whole number, 0 or more (got ${JSON.stringify(v)})`);
  return v;
}

function unknownKeys(o: Record<string, unknown>, known: readonly string[], what: string): void {
  for (const k of Object.keys(o)) if (!known.includes(k)) throw new EdgeConfigError(`${what} has an unknown field "${k}" (known: ${known.join(', ')})`);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Whether two resolved cameras would run the same way (a changed one is restarted; an unchanged one is left alone). */
export function sameCamera(a: CameraConfig, b: CameraConfig): boolean {
  return CAMERA_KEYS.every((k) => a[k] === b[k]);
}
