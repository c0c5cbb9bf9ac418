/**
 * A processor snapshot that is binary (the tracker's, issue 44, decision 76). The
 * FrameProcessor port passes snapshots as text, so a binary one travels as this prefix
 * followed by its base64; the checkpoint stores such a snapshot as raw bytes in a binary
 * attribute of its own beside the compressed rest (checkpoint.ts), not as base64 inside
 * the DEFLATE stream, where it would cost a third more and compress no better.
 */

/** The prefix of a binary snapshot's text form (no JSON text and no base64 begins with it). */
export const BINARY_SNAPSHOT_PREFIX = '~b64:';

/** The text form of binary snapshot bytes. */
export function binarySnapshot(bytes: Uint8Array): string {
  return BINARY_SNAPSHOT_PREFIX + Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** The bytes of a binary snapshot's text form, or undefined for any other text (JSON). */
export function binarySnapshotBytes(snapshot: string): Uint8Array | undefined {
  if (!snapshot.startsWith(BINARY_SNAPSHOT_PREFIX)) return undefined;
  return new Uint8Array(Buffer.from(snapshot.slice(BINARY_SNAPSHOT_PREFIX.length), 'base64'));
}

/** UTF-8 bytes of the text form of `n` snapshot bytes. */
export function binarySnapshotLength(n: number): number {
  return BINARY_SNAPSHOT_PREFIX.length + 4 * Math.ceil(n / 3);
}
