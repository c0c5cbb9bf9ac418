/**
 * The frames each stored object of a video covers, for the operator commands that compare
 * objects with records (`reconcile`, `replay`): an image covers its frame; a segment
 * (core/ingest/segment-keys.ts) covers `[n, n + k)`, with `k` the uploader's declaration
 * (`x-amz-meta-frames`, one HEAD per segment), or, undeclared, up to the next object (the
 * worker's own count can only be smaller: then the frames after it are gaps, which the
 * re-sent segment changes nothing about). The end marker covers none.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { declaredFrameCount, parseSourceKey } from '../../core/ingest/segment-keys.ts';
import type { StoredObject } from '../read.ts';
import type { Target } from '../target.ts';

/** An object and the frames `[first, first + count)` it covers. */
export interface ObjectRange {
  readonly object: StoredObject;
  readonly first: number;
  readonly count: number;
  readonly segment: boolean;
}

/** The frame objects of `objects` (images and segments), ascending, each with its range; `head` reads a segment's declared count. */
export async function objectRanges(objects: readonly StoredObject[], head: (key: string) => Promise<number | undefined>): Promise<ObjectRange[]> {
  const parsed = objects
    .map((object) => ({ object, p: parseSourceKey(object.key) }))
    .flatMap(({ object, p }) => (p.kind === 'source' ? [{ object, first: p.firstFrame, segment: p.container !== 'image' }] : []))
    .sort((a, b) => a.first - b.first);
  const out: ObjectRange[] = [];
  for (const [i, o] of parsed.entries()) {
    if (!o.segment) {
      out.push({ ...o, count: 1 });
      continue;
    }
    const next = parsed.slice(i + 1).find((x) => x.first > o.first)?.first;
    const declared = await head(o.object.key);
    out.push({ ...o, count: declared ?? (next !== undefined ? next - o.first : 1) });
  }
  return out;
}

/** {@link objectRanges} with the target's S3 for the HEADs. */
export function storedObjectRanges(target: Pick<Target, 'clients' | 'bucket'>, objects: readonly StoredObject[]): Promise<ObjectRange[]> {
  return objectRanges(objects, async (key) => declaredFrameCount((await target.clients.s3.send(new HeadObjectCommand({ Bucket: target.bucket, Key: key }))).Metadata));
}
