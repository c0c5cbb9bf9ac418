/**
 * The frames each stored object of a video covers, for the operator operations that
 * compare objects with records (core/commit/operations/: `reconcile`, `replay`): an image
 * covers its frame; a segment (core/ingest/segment-keys.ts) covers `[n, n + k)`, with `k`
 * the uploader's declaration (`x-amz-meta-frames`), or, undeclared, up to the next object
 * (the worker's own count can only be smaller; `declared: false` says the range is such an
 * upper bound, and the segment's records then say where it really ends). The end marker
 * covers none. Pure but for the `declared` look-up it is given.
 */
import { parseSourceKey } from './segment-keys.ts';
import type { StoredObject } from './port.ts';

/** An object and the frames `[first, first + count)` it covers. */
export interface ObjectRange {
  readonly object: StoredObject;
  readonly first: number;
  readonly count: number;
  readonly segment: boolean;
  /** Whether `count` is known (an image, or a segment's declaration); false: an upper bound (up to the next object). */
  readonly declared: boolean;
}

/** The frame objects of `objects` (images and segments), ascending, each with its range; `declared` reads a segment's declared count. */
export async function objectRanges(objects: readonly StoredObject[], declared: (key: string) => Promise<number | undefined>): Promise<ObjectRange[]> {
  const parsed = objects
    .map((object) => ({ object, p: parseSourceKey(object.key) }))
    .flatMap(({ object, p }) => (p.kind === 'source' ? [{ object, first: p.firstFrame, segment: p.container !== 'image' }] : []))
    .sort((a, b) => a.first - b.first);
  const out: ObjectRange[] = [];
  for (const [i, o] of parsed.entries()) {
    if (!o.segment) {
      out.push({ ...o, count: 1, declared: true });
      continue;
    }
    const next = parsed.slice(i + 1).find((x) => x.first > o.first)?.first;
    const k = await declared(o.object.key);
    out.push({ ...o, count: k ?? (next !== undefined ? next - o.first : 1), declared: k !== undefined });
  }
  return out;
}
