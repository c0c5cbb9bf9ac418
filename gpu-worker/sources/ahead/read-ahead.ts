/**
 * Which frames to read ahead by predicted key (decision 39), pure.
 *
 * Behind a backlog a video moves at most 10 frames per FIFO cycle: its next messages can
 * be received only once the commit of its last 10 has deleted them (decision 38), and the
 * cycle then waits for the slowest of the next 10 GETs. Those objects usually exist
 * already: a camera names its frames in sequence (`000041.jpg`, `000042.jpg`, ...), and a
 * receive that brought 10 consecutive frames of one video is the sign that more are
 * queued behind them. So the next frames' keys are predicted and their GETs sent while
 * the cycle's inference, commit and delete run; when their messages arrive, the bytes are
 * already here. A prediction is a hint: the bytes are used only if the GET's ETag equals
 * the one its message brings (frame-prefetch.ts), otherwise the frame is fetched as usual.
 *
 * Cost control: nothing is predicted unless the receive was full and consecutive, and
 * the last predicted key is fetched alone before the rest (frame-prefetch.ts
 * `readAhead`): cameras upload in order, so a video that ended, skips numbers or has not
 * uploaded that far wastes one GET, not ten.
 */
import { parseFrameKey } from '../../../core/ingest/keys.ts';

/** One frame a receive brought. */
export interface ReceivedFrame {
  readonly videoId: string;
  readonly frame: number;
  readonly key: string;
}

/** A video's predicted next frames, in order. */
export interface ReadAheadPlan {
  readonly videoId: string;
  /** The frame numbers and keys to fetch, ascending. */
  readonly frames: readonly { readonly frame: number; readonly key: string }[];
}

/**
 * The read-ahead plans for one receive's frames: for each video with at least `fullCount`
 * frames in it (a full FIFO receive), consecutive and of one key form, the `count` frames
 * after its highest. None when `count` is 0.
 */
export function readAheadPlans(received: readonly ReceivedFrame[], fullCount: number, count: number): ReadAheadPlan[] {
  if (count <= 0) return [];
  const byVideo = new Map<string, ReceivedFrame[]>();
  for (const f of received) {
    const list = byVideo.get(f.videoId);
    if (list) list.push(f);
    else byVideo.set(f.videoId, [f]);
  }
  const plans: ReadAheadPlan[] = [];
  for (const [videoId, frames] of byVideo) {
    if (frames.length < fullCount) continue;
    const sorted = [...frames].sort((a, b) => a.frame - b.frame);
    if (!consecutive(sorted)) continue;
    const last = sorted[sorted.length - 1]!;
    const form = keyForm(last.key, last.frame);
    // Every key of the batch must be what the form gives for its number: a video whose keys
    // mix forms (`41.jpg` beside `000042.jpg`) is not predicted.
    if (!form || sorted.some((f) => keyOf(form, f.frame) !== f.key)) continue;
    const next: { frame: number; key: string }[] = [];
    for (let i = 1; i <= count; i++) {
      const frame = last.frame + i;
      if (!Number.isSafeInteger(frame)) break;
      next.push({ frame, key: keyOf(form, frame) });
    }
    plans.push({ videoId, frames: next });
  }
  return plans;
}

/** Strictly consecutive frame numbers (a duplicate or a skip breaks the prediction). */
function consecutive(sorted: readonly ReceivedFrame[]): boolean {
  return sorted.every((f, i) => i === 0 || f.frame === sorted[i - 1]!.frame + 1);
}

/** A frame key's form: everything before the digits, the pad width (0: unpadded) and the extension as written. */
interface KeyForm {
  readonly prefix: string;
  readonly width: number;
  readonly extension: string;
}

/** `key`'s form; undefined when the key does not parse back to `frame`. */
function keyForm(key: string, frame: number): KeyForm | undefined {
  const parsed = parseFrameKey(key);
  if (parsed.kind !== 'frame' || parsed.frame !== frame) return undefined;
  const m = /^(.*\/)(\d+)\.([^./]+)$/.exec(key);
  if (!m) return undefined;
  const digits = m[2]!;
  return { prefix: m[1]!, width: digits.length > 1 && digits.startsWith('0') ? digits.length : 0, extension: m[3]! };
}

/** The key `form` gives frame `frame`. */
function keyOf(form: KeyForm, frame: number): string {
  return `${form.prefix}${String(frame).padStart(form.width, '0')}.${form.extension}`;
}
