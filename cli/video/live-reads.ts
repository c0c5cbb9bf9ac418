/**
 * How a live source's reads are bounded (cli/video/stream-source.ts): every network read of
 * a live source has a timeout, by the protocol's own socket timeout where it has one, so that
 * a read of a silent source returns by itself; and a stopped source's demuxer is closed only
 * once such a read has returned (decision 74: node-av crashed the process when a demuxer was
 * closed under a read still waiting in its thread).
 */

/** FFmpeg options to open `source` with: a live source's reads time out after `readTimeoutSeconds`. */
export function openOptions(source: string, live: boolean, readTimeoutSeconds: number): Record<string, string> {
  if (!live) return {};
  const us = String(Math.round(readTimeoutSeconds * 1_000_000));
  // TCP interleaving: no UDP ports to open through a NAT, and no silent packet loss.
  if (/^rtsps?:/i.test(source)) return { rtsp_transport: 'tcp', timeout: us };
  // UDP's own socket timeout as well: with `rw_timeout` alone a read of a silent feed never
  // returns, and a stop that closes the demuxer under it crashes the process (decision 74).
  if (/^(udp|rtp):/i.test(source)) return { rw_timeout: us, timeout: us };
  return { rw_timeout: us };
}

/**
 * Before a stopped live source's demuxer is closed: when its last packet is older than a
 * moment, a read may still wait in node-av's thread (a stop's interrupt does not reach it),
 * and closing under it crashes the process (decision 74). The read returns by its own
 * timeout (`readTimeoutSeconds` after the last packet), so the close waits that out: at most
 * the read timeout and a second, and only when the source went silent.
 */
export async function settleSilentRead(lastPacketMs: number, readTimeoutSeconds: number): Promise<void> {
  const silentMs = Date.now() - lastPacketMs;
  if (silentMs < SILENT_AFTER_MS) return;
  const waitMs = lastPacketMs + readTimeoutSeconds * 1000 + 1000 - Date.now();
  if (waitMs > 0) await new Promise((r) => setTimeout(r, waitMs));
}

/** A live source quiet this long when stopped may have a read waiting in node-av's thread. */
const SILENT_AFTER_MS = 300;
