/**
 * What `affinity upload <file> --video <id>` sends, decided from the cut (cli/video/segment-file.ts)
 * and one listing of the video's prefix: pure, so the resume rule is tested on its own.
 *
 * - A segment whose key is already in S3 with the same size is skipped: the cut is
 *   deterministic, so a rerun after an interruption sends only what did not land (an S3
 *   PUT is atomic: an object is there whole or not at all).
 * - A segment whose key is there with another size, or whose first frame is already
 *   covered by an object with another extension, is a conflict: the upload stops before
 *   sending anything. The first version the worker reads is the record of those frames
 *   (docs/decisions.md 48), so overwriting would change nothing the user could see; upload
 *   under another video id, or run `affinity replay` after replacing it deliberately.
 * - `--end` writes the end marker after the last segment; its body is the last frame.
 */
import { parseSourceKey } from '../../core/ingest/segment-keys.ts';

export interface PlannedSegment {
  readonly key: string;
  readonly firstFrame: number;
  readonly frames: number;
  readonly bytes: number;
}

export interface RemoteObject {
  readonly key: string;
  readonly size: number;
}

export interface UploadPlan<S extends PlannedSegment> {
  readonly upload: readonly S[];
  readonly skip: readonly S[];
  readonly conflicts: readonly { readonly segment: S; readonly remote: RemoteObject; readonly why: string }[];
  readonly bytesToUpload: number;
}

export function planUpload<S extends PlannedSegment>(segments: readonly S[], remote: Iterable<RemoteObject>): UploadPlan<S> {
  const byKey = new Map<string, RemoteObject>();
  const byFirstFrame = new Map<string, RemoteObject>();
  for (const r of remote) {
    byKey.set(r.key, r);
    const parsed = parseSourceKey(r.key);
    if (parsed.kind === 'source') byFirstFrame.set(`${parsed.videoId}/${parsed.firstFrame}`, r);
  }
  const upload: S[] = [];
  const skip: S[] = [];
  const conflicts: { segment: S; remote: RemoteObject; why: string }[] = [];
  for (const s of segments) {
    const same = byKey.get(s.key);
    if (same) {
      if (same.size === s.bytes) skip.push(s);
      else conflicts.push({ segment: s, remote: same, why: `${s.key} is already in S3 with ${same.size} bytes, not this cut's ${s.bytes}` });
      continue;
    }
    const parsed = parseSourceKey(s.key);
    const other = parsed.kind === 'source' ? byFirstFrame.get(`${parsed.videoId}/${parsed.firstFrame}`) : undefined;
    if (other) {
      conflicts.push({ segment: s, remote: other, why: `frame ${s.firstFrame} is already uploaded as ${other.key}` });
      continue;
    }
    upload.push(s);
  }
  return { upload, skip, conflicts, bytesToUpload: upload.reduce((sum, s) => sum + s.bytes, 0) };
}

/** The last frame number of a cut (the end marker's body), or undefined for an empty cut. */
export function lastFrameOf(segments: readonly PlannedSegment[]): number | undefined {
  let last: number | undefined;
  for (const s of segments) if (s.frames > 0) last = Math.max(last ?? -1, s.firstFrame + s.frames - 1);
  return last;
}
