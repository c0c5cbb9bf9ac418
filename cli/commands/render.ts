/**
 * `affinity render <id> [--out dir] [--max-frames N]`: annotated frames (boxes and
 * track IDs in stable colours) as a contact sheet PNG, an animated GIF and a
 * self-contained HTML page with a track legend; the video's rules (lines, zones) are
 * drawn on every frame when the bucket has a rules document for it.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { parseRules, type RulesDocument } from '../../core/analytics/rules.ts';
import { DEFAULT_RULES_KEY, rulesKey } from '../../core/analytics/s3/rules-store.ts';
import { parseFrameKey } from '../../core/ingest/keys.ts';
import { parseSourceKey } from '../../core/ingest/segment-keys.ts';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { CliError, type Io } from '../io.ts';
import { allResults } from '../read.ts';
import { annotateFrame, animatedGif, contactSheet, htmlPage, renderSize, sampleEvenly, summariseTracks, type RenderFrame } from '../render.ts';
import type { Target } from '../target.ts';
import { existingObjects } from './upload.ts';

export interface RenderOptions {
  readonly videoId: string;
  /** @default `.local/render/<videoId>` */
  readonly outDir?: string;
  /** Most frames in the GIF. @default 300 */
  readonly maxFrames?: number;
  /** Thumbnails on the contact sheet. @default 24 */
  readonly sheetFrames?: number;
  /**
   * Rules drawn on every frame (lines with their `in` arrow, zones), in source-image
   * pixels. `renderCommand` reads the video's own (or the default) document from the
   * bucket when this is absent; `renderVideo` draws only what it is given.
   */
  readonly rules?: RulesDocument;
}

export interface RenderOutput {
  readonly contactSheet: string;
  readonly gif: string;
  readonly html: string;
  readonly frames: number;
  readonly tracks: number;
}

async function getObject(target: Target, key: string): Promise<Uint8Array> {
  const r = await target.clients.s3.send(new GetObjectCommand({ Bucket: target.bucket, Key: key }));
  return r.Body!.transformToByteArray();
}

function isNotFound(e: unknown): boolean {
  const err = e as { name?: string; $metadata?: { httpStatusCode?: number } };
  return err?.name === 'NoSuchKey' || err?.$metadata?.httpStatusCode === 404;
}

/**
 * The rules the worker would run for `videoId`: `rules/{videoId}.json`, else
 * `rules/_default.json`, else undefined. A document that does not validate is
 * reported on `warn` and not drawn (the worker keeps its last good rules, which this
 * command cannot know).
 */
export async function readRules(target: Target, videoId: string, warn: (line: string) => void = () => {}): Promise<RulesDocument | undefined> {
  for (const key of [rulesKey(videoId), DEFAULT_RULES_KEY]) {
    let text: string;
    try {
      text = new TextDecoder().decode(await getObject(target, key));
    } catch (e) {
      if (isNotFound(e)) continue;
      throw e;
    }
    const parsed = parseRules(text);
    if (parsed.ok) return parsed.rules;
    warn(`rules s3://${target.bucket}/${key} are invalid, not drawn: ${parsed.errors.join('; ')}`);
    return undefined;
  }
  return undefined;
}

function isSegmentKey(key: string): boolean {
  const p = parseSourceKey(key);
  return p.kind === 'source' && p.container !== 'image';
}

/**
 * Frames of encoded segments as images, for drawing: each segment is fetched and decoded
 * once (on the CPU), and only the frames the render samples are kept, as JPEG (a render
 * draws at most a few hundred; encoding every decoded frame as PNG cost more than the
 * decode itself).
 */
class SegmentFrames {
  private readonly decoded = new Map<string, Promise<Map<number, Uint8Array>>>();
  private readonly target: Target;
  private readonly wanted: ReadonlySet<number>;

  constructor(target: Target, wanted: ReadonlySet<number>) {
    this.target = target;
    this.wanted = wanted;
  }

  async image(key: string, frame: number): Promise<Uint8Array | undefined> {
    let frames = this.decoded.get(key);
    if (!frames) {
      frames = this.decode(key);
      this.decoded.set(key, frames);
    }
    return (await frames).get(frame);
  }

  private async decode(key: string): Promise<Map<number, Uint8Array>> {
    const p = parseSourceKey(key);
    const out = new Map<number, Uint8Array>();
    if (p.kind !== 'source' || p.container === 'image') return out;
    // FFmpeg loads only when a video has segments (the other commands never need it).
    const { decodeSegment } = await import('../../gpu-worker/video/segment-decoder.ts');
    for await (const item of decodeSegment(await getObject(this.target, key), { firstFrame: p.firstFrame, container: p.container })) {
      if (item.kind !== 'frame' || !this.wanted.has(item.frame)) continue;
      out.set(item.frame, await sharp(item.data, { raw: { width: item.width, height: item.height, channels: 3 } }).jpeg({ quality: 92 }).toBuffer());
    }
    return out;
  }
}

/** Where a render is: `stage` and, for the stages that count, how far (`done` of `total`). */
export type RenderProgress = (stage: 'fetching' | 'drawing' | 'animating' | 'writing', done: number, total: number) => void;

/** Renders from results already read (the demo calls this directly). */
export async function renderVideo(
  target: Target,
  videoId: string,
  results: readonly FrameResultItem[],
  o: Omit<RenderOptions, 'videoId'> & { progress?: RenderProgress } = {},
): Promise<RenderOutput> {
  const progress = o.progress ?? (() => {});
  const outDir = resolve(o.outDir ?? join('.local', 'render', videoId));
  // Result items carry their key; list once for those that do not (older items, gaps).
  const listed = new Map<number, string>();
  if (results.some((r) => !r.key && r.status !== 'gap')) {
    for (const key of (await existingObjects(target, videoId)).keys()) {
      const p = parseFrameKey(key);
      if (p.kind === 'frame') listed.set(p.frame, key);
    }
  }
  const chosen = sampleEvenly(
    results.filter((r) => r.status !== 'gap' || r.throughFrame === undefined),
    o.maxFrames ?? 300,
  );
  const segments = new SegmentFrames(target, new Set(chosen.map((r) => r.frame)));
  const frames: RenderFrame[] = [];
  for (let i = 0; i < chosen.length; i += 16) {
    progress('fetching', i, chosen.length);
    const slice = chosen.slice(i, i + 16);
    frames.push(
      ...(await Promise.all(
        slice.map(async (r): Promise<RenderFrame> => {
          const key = r.key ?? listed.get(r.frame);
          let image: Uint8Array | undefined;
          if (key && r.status !== 'gap') {
            try {
              image = isSegmentKey(key) ? await segments.image(key, r.frame) : await getObject(target, key);
              if (!image) throw new Error('frame not in its segment');
              await sharp(image).metadata();
            } catch {
              image = undefined; // corrupt or deleted: drawn as a placeholder
            }
          }
          return { frame: r.frame, status: r.status, detections: r.detections ?? [], ...(image ? { image } : {}) };
        }),
      )),
    );
  }
  const withImage = frames.find((f) => f.image);
  if (!withImage) throw new CliError(`no frame images of "${videoId}" could be read from s3://${target.bucket}`);
  const meta = await sharp(withImage.image!).metadata();
  const size = { width: meta.width ?? 320, height: meta.height ?? 240 };
  const drawSize = renderSize(size);
  const annotated = [];
  for (const f of frames) {
    if (annotated.length % 16 === 0) progress('drawing', annotated.length, frames.length);
    annotated.push(await annotateFrame(f, size, { ...(o.rules ? { rules: o.rules } : {}), out: drawSize }));
  }
  const sheet = await contactSheet(sampleEvenly(annotated, o.sheetFrames ?? 24));
  progress('animating', 0, 0);
  const gif = await animatedGif(annotated);
  progress('writing', 0, 0);
  const tracks = summariseTracks(results);
  await mkdir(outDir, { recursive: true });
  const out: RenderOutput = {
    contactSheet: join(outDir, `${videoId}-contact.png`),
    gif: join(outDir, `${videoId}.gif`),
    html: join(outDir, `${videoId}.html`),
    frames: annotated.length,
    tracks: tracks.length,
  };
  await writeFile(out.contactSheet, sheet);
  await writeFile(out.gif, gif);
  await writeFile(
    out.html,
    htmlPage({ videoId, gif, sheet, tracks, frames: results.length, ...(o.rules ? { rules: o.rules } : {}), ...(annotated.length < results.length ? { note: `The animation shows ${annotated.length} of them.` } : {}) }),
  );
  return out;
}

const STAGE_WORDS: Record<Parameters<RenderProgress>[0], string> = {
  fetching: 'fetching and decoding frames',
  drawing: 'drawing boxes',
  animating: 'encoding the animation',
  writing: 'writing the files',
};

/**
 * Progress on stderr: on a terminal one line redrawn in place; elsewhere (a log, CI) a line
 * when a stage starts and at each quarter of it, so a long render is never silent.
 */
export function renderProgress(io: Io, nowMs: () => number = Date.now): RenderProgress {
  const startMs = nowMs();
  let last = '';
  let lastQuarter = -1;
  return (stage, done, total) => {
    const elapsed = `${((nowMs() - startMs) / 1000).toFixed(1)} s`;
    const line = `render: ${STAGE_WORDS[stage]}${total > 0 ? ` ${done}/${total}` : ''} (${elapsed})`;
    if (io.interactive) {
      io.progress(`\r\x1b[K${line}`);
      if (stage === 'writing') io.progress('\r\x1b[K');
      return;
    }
    const quarter = total > 0 ? Math.floor((4 * done) / total) : 0;
    if (stage !== last || quarter !== lastQuarter) io.err(line);
    last = stage;
    lastQuarter = quarter;
  };
}

export async function renderCommand(target: Target, o: RenderOptions, io: Io): Promise<RenderOutput> {
  if (o.maxFrames !== undefined && (!Number.isInteger(o.maxFrames) || o.maxFrames < 1)) throw new CliError('--max-frames must be a positive integer', 2);
  const results = await allResults(target, o.videoId);
  if (results.length === 0) throw new CliError(`no results for video "${o.videoId}" in ${target.description}; nothing to render`);
  io.err(`rendering ${Math.min(results.length, o.maxFrames ?? 300)} frame(s) of ${o.videoId}...`);
  const rules = o.rules ?? (await readRules(target, o.videoId, (l) => io.err(l)));
  const out = await renderVideo(target, o.videoId, results, { ...o, ...(rules ? { rules } : {}), progress: renderProgress(io) });
  io.out(`contact sheet  ${out.contactSheet}`);
  io.out(`animation      ${out.gif}`);
  io.out(`page           ${out.html}`);
  io.out(`${out.frames} frame(s), ${out.tracks} track(s)${rules ? `, ${rules.lines.length} line(s) and ${rules.zones.length} zone(s) drawn` : ''}`);
  return out;
}
