/**
 * Annotated frames: boxes and track IDs in colours derived from the track ID, so a
 * track keeps its colour across frames, videos and runs. Track IDs are drawn with a
 * tiny built-in bitmap font (SVG rects), because SVG `<text>` needs system fonts that
 * minimal images lack; the HTML page adds browser-rendered labels.
 */
import sharp from 'sharp';
import type { RulesDocument } from '../core/analytics/rules.ts';
import type { Detection } from '../core/ports.ts';

/** Every counting line is drawn in this one colour (and zones in {@link ZONE_COLOUR}), so rules read apart from the per-track box colours' varying hues. */
export const LINE_COLOUR = '#ffeb3b';
/** Zones are outlined (and lightly filled) in this colour. */
export const ZONE_COLOUR = '#00e5ff';

/** Stable colour of a track: hues spread by the golden angle, fixed saturation and lightness. */
export function trackColour(trackId: number): string {
  const hue = (((trackId * 137.508) % 360) + 360) % 360;
  return hslToHex(hue, 0.9, 0.55);
}

function hslToHex(h: number, s: number, l: number): string {
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    const c = l - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
    return Math.round(c * 255)
      .toString(16)
      .padStart(2, '0');
  };
  return `#${f(0)}${f(8)}${f(4)}`;
}

/** 3x5 glyphs, rows top to bottom, bits left to right. */
const GLYPHS: Record<string, readonly number[]> = {
  '0': [0b111, 0b101, 0b101, 0b101, 0b111],
  '1': [0b010, 0b110, 0b010, 0b010, 0b111],
  '2': [0b111, 0b001, 0b111, 0b100, 0b111],
  '3': [0b111, 0b001, 0b111, 0b001, 0b111],
  '4': [0b101, 0b101, 0b111, 0b001, 0b001],
  '5': [0b111, 0b100, 0b111, 0b001, 0b111],
  '6': [0b111, 0b100, 0b111, 0b101, 0b111],
  '7': [0b111, 0b001, 0b010, 0b010, 0b010],
  '8': [0b111, 0b101, 0b111, 0b101, 0b111],
  '9': [0b111, 0b101, 0b111, 0b001, 0b111],
  '#': [0b101, 0b111, 0b101, 0b111, 0b101],
  '-': [0b000, 0b000, 0b111, 0b000, 0b000],
};

/** Width in pixels of `text` drawn by {@link bitmapText} at `scale`. */
export function bitmapTextWidth(text: string, scale: number): number {
  return text.length === 0 ? 0 : text.length * 4 * scale - scale;
}

/** SVG rects drawing `text` (digits, '#', '-') with its top-left at x, y. */
export function bitmapText(text: string, x: number, y: number, scale: number, fill: string): string {
  const rects: string[] = [];
  [...text].forEach((ch, i) => {
    const rows = GLYPHS[ch];
    if (!rows) return;
    rows.forEach((bits, row) => {
      for (let col = 0; col < 3; col++) {
        if (bits & (0b100 >> col)) rects.push(`<rect x="${x + (i * 4 + col) * scale}" y="${y + row * scale}" width="${scale}" height="${scale}"/>`);
      }
    });
  });
  return `<g fill="${fill}">${rects.join('')}</g>`;
}

/** Black or white, whichever reads better on `hex`. */
function inkFor(hex: string): string {
  const n = parseInt(hex.slice(1), 16);
  const luma = 0.299 * ((n >> 16) & 255) + 0.587 * ((n >> 8) & 255) + 0.114 * (n & 255);
  return luma > 140 ? '#000' : '#fff';
}

/**
 * SVG for a rules document (source-image pixels): each zone as a lightly filled polygon
 * with its outline, each line as a segment with an arrow from its midpoint towards the
 * side a track moves to when it crosses `in` (the right-hand side of a→b on screen, as
 * core/analytics/rule-engine.ts sideOf counts), and the rule's index as a small tag so a
 * reader can match it to the legend (the bitmap font has digits only). Pure.
 */
export function rulesSvg(rules: RulesDocument, scale: number): string {
  const parts: string[] = [];
  rules.zones.forEach((z, i) => {
    const points = z.polygon.map(([x, y]) => `${x},${y}`).join(' ');
    parts.push(`<polygon points="${points}" fill="${ZONE_COLOUR}" fill-opacity="0.12" stroke="${ZONE_COLOUR}" stroke-width="2" stroke-dasharray="6 4"/>`);
    const [x, y] = z.polygon[0]!;
    parts.push(bitmapText(String(rules.lines.length + i + 1), x + 2 * scale, y + 2 * scale, scale, ZONE_COLOUR));
  });
  rules.lines.forEach((l, i) => {
    const [ax, ay] = l.a;
    const [bx, by] = l.b;
    parts.push(`<line x1="${ax}" y1="${ay}" x2="${bx}" y2="${by}" stroke="${LINE_COLOUR}" stroke-width="2"/>`);
    // The 'in' normal of a→b with y down: (-dy, dx), as sideOf's sign.
    const len = Math.hypot(bx - ax, by - ay) || 1;
    const nx = -(by - ay) / len;
    const ny = (bx - ax) / len;
    const mx = (ax + bx) / 2;
    const my = (ay + by) / 2;
    const arrowPx = 6 * scale;
    const tx = mx + nx * arrowPx;
    const ty = my + ny * arrowPx;
    const headPx = 2 * scale;
    // Arrow head: two points beside the tip, back along the normal.
    const h1 = [tx - nx * headPx + ny * headPx, ty - ny * headPx - nx * headPx];
    const h2 = [tx - nx * headPx - ny * headPx, ty - ny * headPx + nx * headPx];
    parts.push(`<line x1="${mx}" y1="${my}" x2="${tx}" y2="${ty}" stroke="${LINE_COLOUR}" stroke-width="2"/>`);
    parts.push(`<polygon points="${tx},${ty} ${h1[0]},${h1[1]} ${h2[0]},${h2[1]}" fill="${LINE_COLOUR}"/>`);
    // The tag sits on the 'out' side of the midpoint, away from the arrow.
    parts.push(bitmapText(String(i + 1), Math.round(mx - nx * 4 * scale - 1.5 * scale), Math.round(my - ny * 4 * scale - 2.5 * scale), scale, LINE_COLOUR));
  });
  return `<g>${parts.join('')}</g>`;
}

/** The SVG overlay for one frame: the rules (when given) under a box and an ID tag per detection, the frame number in a corner. Pure. */
export function overlaySvg(
  width: number,
  height: number,
  detections: readonly Detection[],
  options: { frame?: number; status?: string; rules?: RulesDocument; out?: { width: number; height: number } } = {},
): string {
  const scale = Math.max(2, Math.round(width / 110));
  const parts: string[] = [];
  if (options.rules) parts.push(rulesSvg(options.rules, scale));
  for (const d of detections) {
    const colour = trackColour(d.trackId);
    const [x1, y1, x2, y2] = d.box.map((n) => Math.round(n)) as [number, number, number, number];
    parts.push(`<rect x="${x1}" y="${y1}" width="${Math.max(1, x2 - x1)}" height="${Math.max(1, y2 - y1)}" fill="none" stroke="${colour}" stroke-width="2"/>`);
    const label = String(d.trackId);
    const tagW = bitmapTextWidth(label, scale) + 2 * scale;
    const tagH = 5 * scale + 2 * scale;
    // Above the box when there is room, else inside its top edge.
    const tagX = Math.max(0, Math.min(width - tagW, x1));
    const tagY = y1 - tagH >= 0 ? y1 - tagH : Math.max(0, y1);
    parts.push(`<rect x="${tagX}" y="${tagY}" width="${tagW}" height="${tagH}" fill="${colour}"/>`);
    parts.push(bitmapText(label, tagX + scale, tagY + scale, scale, inkFor(colour)));
  }
  if (options.frame !== undefined) {
    const label = String(options.frame);
    const w = bitmapTextWidth(label, scale) + 2 * scale;
    const bg = options.status && options.status !== 'ok' ? '#c00' : '#000';
    parts.push(`<rect x="0" y="${height - 7 * scale}" width="${w}" height="${7 * scale}" fill="${bg}" fill-opacity="0.7"/>`);
    parts.push(bitmapText(label, scale, height - 6 * scale, scale, '#fff'));
  }
  // Drawn in source pixels; `out` rasterises it at another size (a viewBox scales every part alike).
  const out = options.out ?? { width, height };
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${out.width}" height="${out.height}" viewBox="0 0 ${width} ${height}" preserveAspectRatio="none">${parts.join('')}</svg>`;
}

export interface RenderFrame {
  readonly frame: number;
  readonly status: string;
  /** Encoded image (PNG/JPEG); absent for gaps. */
  readonly image?: Uint8Array;
  readonly detections: readonly Detection[];
}

export interface AnnotatedFrame {
  readonly frame: number;
  readonly status: string;
  readonly width: number;
  readonly height: number;
  /** Raw RGB pixels. */
  readonly rgb: Buffer;
}

/**
 * Draws one frame's overlay (and the rules, when given, in source-image pixels of this
 * size); frames without an image (gaps) become a dark placeholder. The result is `out`
 * pixels (default: the source size): drawing at a smaller size costs less everywhere after
 * (the GIF's encoder above all), and boxes and rules are scaled with the image.
 */
export async function annotateFrame(
  f: RenderFrame,
  fallbackSize: { width: number; height: number },
  options: { rules?: RulesDocument; out?: { width: number; height: number } } = {},
): Promise<AnnotatedFrame> {
  const { width, height } = options.out ?? fallbackSize;
  const base = f.image
    ? sharp(f.image).resize(width, height, { fit: 'fill' })
    : sharp({ create: { width, height, channels: 3, background: { r: 40, g: 0, b: 0 } } });
  const svg = overlaySvg(fallbackSize.width, fallbackSize.height, f.detections, {
    frame: f.frame,
    status: f.status,
    ...(options.rules ? { rules: options.rules } : {}),
    ...(options.out ? { out: options.out } : {}),
  });
  const rgb = await base
    .composite([{ input: Buffer.from(svg), top: 0, left: 0 }])
    .removeAlpha()
    .raw()
    .toBuffer();
  return { frame: f.frame, status: f.status, width, height, rgb };
}

/** Evenly spaced picks of at most `max` items, first and last included. Pure. */
export function sampleEvenly<T>(items: readonly T[], max: number): T[] {
  if (items.length <= max) return [...items];
  if (max <= 1) return items.slice(0, Math.max(0, max));
  return Array.from({ length: max }, (_, i) => items[Math.round((i * (items.length - 1)) / (max - 1))]!);
}

/** A grid of thumbnails (PNG). */
export async function contactSheet(frames: readonly AnnotatedFrame[], options: { columns?: number; thumbWidth?: number; gapPx?: number } = {}): Promise<Buffer> {
  if (frames.length === 0) throw new Error('no frames to put on a contact sheet');
  const columns = Math.min(options.columns ?? 6, frames.length);
  const gap = options.gapPx ?? 4;
  const first = frames[0]!;
  const thumbW = Math.min(options.thumbWidth ?? 240, first.width);
  const thumbH = Math.round((first.height * thumbW) / first.width);
  const rows = Math.ceil(frames.length / columns);
  const thumbs = await Promise.all(
    frames.map((f) => sharp(f.rgb, { raw: { width: f.width, height: f.height, channels: 3 } }).resize(thumbW, thumbH).png().toBuffer()),
  );
  return sharp({
    create: { width: columns * thumbW + (columns + 1) * gap, height: rows * thumbH + (rows + 1) * gap, channels: 3, background: { r: 24, g: 24, b: 24 } },
  })
    .composite(thumbs.map((input, i) => ({ input, left: gap + (i % columns) * (thumbW + gap), top: gap + Math.floor(i / columns) * (thumbH + gap) })))
    .png()
    .toBuffer();
}

/** Longest side of the animation's frames: the page shows it 640 px wide, and a GIF's encoder costs grow with its pixels. */
export const ANIMATION_MAX_WIDTH_PX = 480;

/** The size frames are drawn at for the animation and contact sheet: the source, scaled down to {@link ANIMATION_MAX_WIDTH_PX} wide. Pure. */
export function renderSize(source: { width: number; height: number }, maxWidth = ANIMATION_MAX_WIDTH_PX): { width: number; height: number } {
  if (source.width <= maxWidth) return { width: source.width, height: source.height };
  return { width: maxWidth, height: Math.max(1, Math.round((source.height * maxWidth) / source.width)) };
}

/**
 * An animated GIF of the frames (all the same size). The frames go to the encoder as one
 * raw image of stacked pages (no PNG per frame), with the encoder's cheapest settings
 * (effort 1, no dithering): at the default effort, 300 frames of 768x576 took minutes on
 * the 2-core machine, nearly all of it in palette quantisation.
 */
export async function animatedGif(frames: readonly AnnotatedFrame[], delayMs = 100): Promise<Buffer> {
  if (frames.length === 0) throw new Error('no frames to animate');
  const { width, height } = frames[0]!;
  if (frames.some((f) => f.width !== width || f.height !== height)) throw new Error('animation frames must all be one size');
  const pages = Buffer.concat(frames.map((f) => f.rgb));
  // pageHeight is a valid raw-input option of libvips that sharp's typings do not list.
  const raw = { width, height: height * frames.length, channels: 3, pageHeight: height } as { width: number; height: number; channels: 3 };
  return sharp(pages, { raw, limitInputPixels: false })
    .gif({ delay: frames.map(() => delayMs), loop: 0, effort: 1, dither: 0 })
    .toBuffer();
}

export interface TrackSummary {
  readonly trackId: number;
  readonly label: string;
  readonly firstFrame: number;
  readonly lastFrame: number;
  readonly frames: number;
  readonly colour: string;
}

/** Per-track first/last frame and label, by track id. Pure. */
export function summariseTracks(frames: readonly { frame: number; detections: readonly Detection[] }[]): TrackSummary[] {
  const by = new Map<number, { label: string; firstFrame: number; lastFrame: number; frames: number }>();
  for (const f of frames) {
    for (const d of f.detections) {
      const t = by.get(d.trackId);
      if (!t) by.set(d.trackId, { label: d.label, firstFrame: f.frame, lastFrame: f.frame, frames: 1 });
      else {
        t.firstFrame = Math.min(t.firstFrame, f.frame);
        t.lastFrame = Math.max(t.lastFrame, f.frame);
        t.frames++;
      }
    }
  }
  return [...by.entries()].sort((a, b) => a[0] - b[0]).map(([trackId, t]) => ({ trackId, ...t, colour: trackColour(trackId) }));
}

const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

/** A self-contained HTML page: the GIF and contact sheet inline, and a legend of tracks with labels. */
export function htmlPage(o: { videoId: string; gif: Buffer; sheet: Buffer; tracks: readonly TrackSummary[]; frames: number; note?: string; rules?: RulesDocument }): string {
  const ruleItems = o.rules
    ? [
        ...o.rules.lines.map((l, i) => `<li><b style="color:${LINE_COLOUR}">${i + 1}</b> line ${escapeHtml(l.id)} (${l.a.join(',')} → ${l.b.join(',')}; the arrow points to the side a track reaches when it crosses <i>in</i>)</li>`),
        ...o.rules.zones.map((z, i) => `<li><b style="color:${ZONE_COLOUR}">${o.rules!.lines.length + i + 1}</b> zone ${escapeHtml(z.id)} (${z.polygon.length} points${z.dwellSeconds !== undefined ? `, dwell ${z.dwellSeconds} s` : ''})</li>`),
      ]
    : [];
  const rulesHtml = ruleItems.length > 0 ? `<p>Rules drawn on every frame:</p><ul>${ruleItems.join('')}</ul>\n` : '';
  const rows = o.tracks
    .map(
      (t) =>
        `<tr><td><span class="sw" style="background:${t.colour}"></span> ${t.trackId}</td><td>${escapeHtml(t.label)}</td><td>${t.firstFrame}</td><td>${t.lastFrame}</td><td>${t.frames}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(o.videoId)} - tracks</title>
<style>
body{font-family:system-ui,sans-serif;background:#111;color:#eee;margin:2rem}
img{image-rendering:pixelated;border:1px solid #333;max-width:100%}
table{border-collapse:collapse;margin-top:1rem}td,th{padding:.25rem .75rem;border-bottom:1px solid #333;text-align:left}
.sw{display:inline-block;width:.9em;height:.9em;vertical-align:middle;border-radius:2px}
</style></head><body>
<h1>${escapeHtml(o.videoId)}</h1>
<p>${o.frames} frames, ${o.tracks.length} tracks.${o.note ? ` ${escapeHtml(o.note)}` : ''} Box colours follow the track id.</p>
${rulesHtml}<img alt="annotated frames (animated)" src="data:image/gif;base64,${o.gif.toString('base64')}" width="${640}">
<table><thead><tr><th>track</th><th>label</th><th>first frame</th><th>last frame</th><th>frames</th></tr></thead><tbody>
${rows}
</tbody></table>
<h2>Contact sheet</h2>
<img alt="contact sheet" src="data:image/png;base64,${o.sheet.toString('base64')}">
</body></html>
`;
}
