/**
 * What an S3 listing of a video's frames proves absent: pure reasoning about lexicographic
 * key order, kept apart from the S3 adapter (core/ingest/s3/frame-store.ts).
 *
 * S3 lists keys in byte order, so a listing (optionally started after a key, optionally
 * cut short after its last page) covers a *lexicographic* window, not a numeric one. A frame
 * number is covered only when its key must lie inside that window. Frame keys of one video
 * are written in one form: zero-padded to `padWidth` (`%06d`: `000041.jpg`), which widens
 * naturally past the pad (`1000000.jpg`), or unpadded (`41.jpg`). Within one width the
 * byte order is the numeric order; across widths it is not (`1000000.jpg` sorts between
 * `100000.jpg` and `100001.jpg`, `10.jpg` before `5.jpg`). So coverage is worked out one
 * width at a time, and it stops at the first width the window does not hold whole.
 *
 * The result `coveredThrough` means: every frame in `[fromFrame, coveredThrough]` whose key
 * exists was in the listing. The sequencer may declare absent only frames in that range.
 */

/** The largest frame number a key can carry (keys.ts: at most 15 digits). */
const MAX_FRAME_DIGITS = 15;

/** The stem a frame's key has in the video's form: padded to `padWidth`, or unpadded. */
export function frameStem(frame: number, padWidth?: number): string {
  return padWidth !== undefined ? String(frame).padStart(padWidth, '0') : String(frame);
}

/** The digits of a frame key's file name (`frames/v/000041.jpg` → `000041`), or undefined. */
export function stemOfKey(key: string): string | undefined {
  return /\/(\d+)\.[^./]+$/.exec(key)?.[1];
}

export interface ListingWindow {
  /** The first frame the listing is about. */
  readonly fromFrame: number;
  /** The video's zero-padding width; undefined for unpadded keys. */
  readonly padWidth?: number;
  /** The file name the listing started after (`StartAfter` minus the video prefix); undefined when it started at the prefix. */
  readonly startAfterName?: string;
  /** The file name of the last key listed when the listing was cut short; undefined when it reached the end of the prefix. */
  readonly lastName?: string;
}

/**
 * The highest frame number such that every existing frame from `fromFrame` up to it was
 * in the listing; `fromFrame - 1` when the listing proves nothing, and
 * `Number.MAX_SAFE_INTEGER` when it proves everything from `fromFrame` on.
 */
export function coveredThrough(w: ListingWindow): number {
  const fmt = (n: number) => frameStem(n, w.padWidth);
  let through = w.fromFrame - 1;
  for (const [groupLo, groupHi] of widthGroups(w.padWidth)) {
    if (groupHi < w.fromFrame) continue;
    const lo = Math.max(groupLo, w.fromFrame);
    // Lower edge: a key sorts after `startAfterName` iff its stem is >= it (a shorter stem
    // that is a prefix of it is followed by '.', which sorts before every digit).
    if (w.startAfterName !== undefined && fmt(lo) < w.startAfterName) return through;
    if (w.lastName === undefined) {
      through = groupHi;
      continue;
    }
    // Upper edge: frame n's key is at or before the last key iff `stem.` <= it (a key that
    // shares the stem but sorts after it has the same frame number, which was listed).
    const last = w.lastName;
    const inside = (n: number) => `${fmt(n)}.` <= last;
    if (!inside(lo)) return through;
    if (inside(groupHi)) {
      through = groupHi;
      continue;
    }
    let a = lo;
    let b = groupHi;
    while (a < b) {
      const mid = a + Math.ceil((b - a) / 2);
      if (inside(mid)) a = mid;
      else b = mid - 1;
    }
    return a;
  }
  return Number.MAX_SAFE_INTEGER;
}

/**
 * The ranges of frame numbers whose stems share one width, in ascending order: with a pad
 * width p, `[0, 10^p - 1]` and then one range per extra digit; unpadded, one per digit count.
 */
function widthGroups(padWidth?: number): [number, number][] {
  const groups: [number, number][] = [];
  const firstDigits = padWidth !== undefined ? Math.min(Math.max(padWidth, 1), MAX_FRAME_DIGITS) : 1;
  groups.push([0, 10 ** firstDigits - 1]);
  for (let d = firstDigits + 1; d <= MAX_FRAME_DIGITS; d++) groups.push([10 ** (d - 1), 10 ** d - 1]);
  return groups;
}
