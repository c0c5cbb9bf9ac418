/**
 * FFmpeg's log, shared by every capture of one process. FFmpeg has one log callback per
 * process and its messages name no demuxer, so `affinity edge`, which runs one capture per
 * camera, cannot let each capture install its own (the last one would hear every camera's
 * messages, and the first to stop would silence the others: issue 41, part 4).
 *
 * One callback is installed while any capture listens, and removed with the last. Each
 * listener keeps the warnings and errors it may own: a message that names a host:port is
 * kept only by the listener of that host:port ("Connection to tcp://10.0.0.5:554 failed:
 * Connection refused"); one that names none ("Failed reading RTSP data: Connection timed
 * out") by every listener, and a capture reads only what came in the last
 * {@link RECENT_MS} before its own failure, so a reason is another camera's only when two
 * cameras fail within that second (then usually for the same cause).
 */
import { AV_LOG_WARNING } from 'node-av/constants';
import { Log } from 'node-av/lib';

/** How far back a failure's reason is looked for. */
export const RECENT_MS = 1_000;

export interface FfmpegLogListener {
  /** The newest warning or error this source may own, from the last {@link RECENT_MS}; null if none. */
  recent(nowMs?: number): string | null;
  /** Forgets what was heard (a new connection: what probing said is no reason for what comes later). */
  clear(): void;
  close(): void;
}

interface Entry {
  readonly hostPort: string | null;
  last: { readonly message: string; readonly atMs: number } | null;
}

const listeners = new Set<Entry>();

/** The `host:port` a message or URL names, lower case (RTSP's default port when a URL names none). */
export function hostPortOf(text: string): string | null {
  const m = /[a-z][a-z0-9+.-]*:\/\/(?:[^/@\s]*@)?(\[[^\]]+\]|[^/:?\s]+)(?::(\d+))?/i.exec(text);
  if (!m) return null;
  const port = m[2] ?? (/^rtsps:/i.test(m[0]) ? '322' : /^rtsp:/i.test(m[0]) ? '554' : '');
  return `${m[1]!.toLowerCase()}:${port}`;
}

/** Whether a listener of `hostPort` may own `message`. */
export function owns(hostPort: string | null, message: string): boolean {
  const named = hostPortOf(message);
  return named === null || hostPort === null || named === hostPort || named.endsWith(':') && hostPort.startsWith(named);
}

function dispatch(level: number, message: string): void {
  if (level > AV_LOG_WARNING) return;
  const text = message.trim();
  if (!text) return;
  const atMs = Date.now();
  for (const l of listeners) if (owns(l.hostPort, text)) l.last = { message: text, atMs };
}

/** Listens to FFmpeg's log for `source` until {@link FfmpegLogListener.close}. */
export function listenFfmpegLog(source: string): FfmpegLogListener {
  const entry: Entry = { hostPort: hostPortOf(source), last: null };
  // Only warnings and errors cross into JavaScript: a transcode's encoder and decoder threads log at info level all the time.
  if (listeners.size === 0) Log.setCallback(dispatch, { maxLevel: AV_LOG_WARNING });
  listeners.add(entry);
  return {
    recent: (nowMs = Date.now()) => (entry.last && nowMs - entry.last.atMs <= RECENT_MS ? entry.last.message : null),
    clear: () => void (entry.last = null),
    close: () => {
      if (!listeners.delete(entry)) return;
      if (listeners.size === 0) Log.resetCallback();
    },
  };
}
