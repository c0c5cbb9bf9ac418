/**
 * `affinity render <id> [--out dir] [--max-frames N]`: annotated frames (boxes and
 * track IDs in stable colours) as a contact sheet PNG, an animated GIF and a
 * self-contained HTML page with a track legend.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import sharp from 'sharp';
import { parseFrameKey } from '../../core/keys.ts';
import type { FrameResultItem } from '../../core/results.ts';
import { CliError, type Io } from '../io.ts';
import { allResults } from '../read.ts';
import { annotateFrame, animatedGif, contactSheet, htmlPage, sampleEvenly, summariseTracks, type RenderFrame } from '../render.ts';
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

/** Renders from results already read (the demo calls this directly). */
export async function renderVideo(target: Target, videoId: string, results: readonly FrameResultItem[], o: Omit<RenderOptions, 'videoId'> = {}): Promise<RenderOutput> {
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
  const frames: RenderFrame[] = [];
  for (let i = 0; i < chosen.length; i += 16) {
    const slice = chosen.slice(i, i + 16);
    frames.push(
      ...(await Promise.all(
        slice.map(async (r): Promise<RenderFrame> => {
          const key = r.key ?? listed.get(r.frame);
          let image: Uint8Array | undefined;
          if (key && r.status !== 'gap') {
            try {
              image = await getObject(target, key);
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
  const annotated = [];
  for (const f of frames) annotated.push(await annotateFrame(f, size));
  const sheet = await contactSheet(sampleEvenly(annotated, o.sheetFrames ?? 24));
  const gif = await animatedGif(annotated);
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
    htmlPage({ videoId, gif, sheet, tracks, frames: results.length, ...(annotated.length < results.length ? { note: `The animation shows ${annotated.length} of them.` } : {}) }),
  );
  return out;
}

export async function renderCommand(target: Target, o: RenderOptions, io: Io): Promise<RenderOutput> {
  if (o.maxFrames !== undefined && (!Number.isInteger(o.maxFrames) || o.maxFrames < 1)) throw new CliError('--max-frames must be a positive integer', 2);
  const results = await allResults(target, o.videoId);
  if (results.length === 0) throw new CliError(`no results for video "${o.videoId}" in ${target.description}; nothing to render`);
  io.err(`rendering ${Math.min(results.length, o.maxFrames ?? 300)} frame(s) of ${o.videoId}...`);
  const out = await renderVideo(target, o.videoId, results, o);
  io.out(`contact sheet  ${out.contactSheet}`);
  io.out(`animation      ${out.gif}`);
  io.out(`page           ${out.html}`);
  io.out(`${out.frames} frame(s), ${out.tracks} track(s)`);
  return out;
}
