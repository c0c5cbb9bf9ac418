/**
 * Model pinning (issue 23, hardening): the deployment names the SHA-256 of the model
 * (`modelSha256`), and the worker refuses to start on any other bytes, so a replaced
 * object under `models/` (or a changed object in another bucket) cannot silently change
 * what every GPU task runs.
 */
import { createHash } from 'node:crypto';

/** Worker environment variable holding the expected SHA-256 (hex) of the model; absent or empty = not checked. */
export const MODEL_SHA256_ENV = 'MODEL_SHA256';

/** SHA-256 of the bytes, lowercase hex. */
export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Throws when `expected` is set and the bytes hash to something else; the message names
 * the model, both digests and the setting, so the stopped task's reason says what to fix.
 */
export function verifyModelSha256(uri: string, bytes: Uint8Array, expected: string | undefined): void {
  if (!expected) return;
  const actual = sha256Hex(bytes);
  if (actual !== expected.toLowerCase()) {
    throw new Error(`model ${uri}: sha256 ${actual} does not match modelSha256 ${expected}; refusing to load it (upload the pinned model, or deploy with the new digest)`);
  }
}
