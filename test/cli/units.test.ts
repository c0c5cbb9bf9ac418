/**
 * The CLI's and the demo's pure parts: argument handling, file planning, the demo's
 * schedule, failover and score, replay bookkeeping, output formats and rendering.
 */
import { describe, expect, it } from 'vitest';
import sharp from 'sharp';
import type { FrameResultItem } from '../../core/commit/results.ts';
import { planFrameNumbers, unreadableInput } from '../../cli/commands/upload.ts';
import { failureGroupLine, failureGroups, problemsOf } from '../../cli/commands/video.ts';
import { CSV_HEADER, formatResult } from '../../cli/commands/results.ts';
import { cameraSchedule, failoverSeconds, scoreVideo, summaryTable } from '../../cli/demo-lib.ts';
import { memoryIo } from '../../cli/io.ts';
import { main } from '../../cli/main.ts';
import { ANIMATION_MAX_WIDTH_PX, animatedGif, annotateFrame, bitmapText, contactSheet, overlaySvg, renderSize, sampleEvenly, summariseTracks, trackColour } from '../../cli/render.ts';
import { renderProgress } from '../../cli/commands/render.ts';
import { STACK_OUTPUT_KEYS, resourcesFromOutputs } from '../../cli/target.ts';

const item = (frame: number, over: Partial<FrameResultItem> = {}): FrameResultItem => ({
  videoId: 'v',
  frame,
  status: 'ok',
  detections: [],
  token: 1,
  worker: 'w1',
  committedAtMs: 1_000 + frame,
  ...over,
});

describe('argument handling', () => {
  const noTarget = async () => {
    throw new Error('must not resolve a target');
  };

  it('prints usage with exit 0 for --help and exit 2 without a command', async () => {
    // Prepare
    const helpIo = memoryIo();
    const bareIo = memoryIo();
    // Act
    const helpCode = await main(['--help'], helpIo, noTarget);
    const bareCode = await main([], bareIo, noTarget);
    // Assess
    expect(helpCode).toBe(0);
    expect(helpIo.lines.join('\n')).toMatch(/Commands:[\s\S]*upload[\s\S]*replay[\s\S]*render/);
    expect(bareCode).toBe(2);
    expect(bareIo.errors.join('\n')).toContain('Usage: affinity');
  });

  it.each(['upload', 'stream', 'status', 'video', 'results', 'release', 'replay', 'redrive', 'render'])('gives help for %s without touching a stack', async (command) => {
    // Prepare
    const io = memoryIo();
    // Act
    const code = await main([command, '--help'], io, noTarget);
    // Assess
    expect(code).toBe(0);
    expect(io.lines.join('\n')).toContain(`Usage: affinity ${command}`);
  });

  it('rejects unknown commands, unknown flags, missing arguments and bad integers with exit 2', async () => {
    // Prepare
    const cases: [string[], RegExp][] = [
      [['frobnicate'], /unknown command "frobnicate"/],
      [['status', '--bogus'], /Unknown option '--bogus'/],
      [['video'], /missing <id>/],
      [['video', 'a', 'b'], /unexpected argument "b"/],
      [['replay', 'v1', '--from', 'x'], /--from must be an integer/],
      [['results', 'v1', '--json', '--csv'], /choose one of --json and --csv/],
      [['stream', 'rtsp://cam/h264'], /stream needs --video <id>/],
      [['stream', 'rtsp://cam/h264', '--video', 'a/b'], /invalid video id "a\/b"/],
      [['stream', 'rtsp://cam/h264', '--video', 'v', '--segment-seconds', '0'], /--segment-seconds must be a number of seconds/],
      [['stream', 'rtsp://cam/h264', '--video', 'v', '--container', 'avi'], /--container must be one of/],
      [['stream', 'rtsp://cam/h264', '--video', 'v', '--realtime'], /--realtime paces a file/],
      [['stream', 'clip.mp4', '--video', 'v', '--first-frame=-3'], /--first-frame must be 0 or more/],
      [['stream', 'rtsp://cam/h264', '--video', 'door-1', '--site', 'store-042'], /video id "door-1" is not a camera of site "store-042".*"store-042\.door-1".*\(site from --site\)/],
      [['upload', 'clip.mp4', '--video', 'store-043.door-1', '--site', 'store-042'], /not a camera of site "store-042"/],
      [['upload', 'frames-dir', '--video', 'store-0421.door-1', '--site', 'store-042'], /not a camera of site "store-042"/],
      [['stream', 'rtsp://cam/h264', '--video', 'a.b.door-1', '--site', 'a.b'], /site "a\.b" must be 1-63 of/],
    ];
    for (const [argv, message] of cases) {
      const io = memoryIo();
      // Act
      const code = await main(argv, io, async () => ({ close() {} }) as never);
      // Assess
      expect(code, argv.join(' ')).toBe(2);
      expect(io.errors.join('\n'), argv.join(' ')).toMatch(message);
    }
  });

  it('takes the site from AFFINITY_SITE: refuses another site\'s camera before any upload, lets its own through', async () => {
    // Prepare
    const saved = process.env.AFFINITY_SITE;
    process.env.AFFINITY_SITE = 'store-042';
    const fakeTarget = async () => ({ close() {}, firstFrameNumber: 0 }) as never;
    const other = memoryIo();
    const own = memoryIo();
    try {
      // Act
      const otherCode = await main(['upload', '/nonexistent/frames', '--video', 'store-043.door-1'], other, fakeTarget);
      const ownCode = await main(['upload', '/nonexistent/frames', '--video', 'store-042.door-1'], own, fakeTarget);
      // Assess
      expect(otherCode).toBe(2);
      expect(other.errors.join('\n')).toMatch(/"store-043\.door-1" is not a camera of site "store-042".*\(site from AFFINITY_SITE\)/);
      expect(ownCode).toBe(1);
      expect(own.errors.join('\n')).toMatch(/\/nonexistent\/frames does not exist/);
    } finally {
      if (saved === undefined) delete process.env.AFFINITY_SITE;
      else process.env.AFFINITY_SITE = saved;
    }
  });

  it('reports a missing local stack clearly with exit 1', async () => {
    // Prepare
    const io = memoryIo();
    // Act
    const code = await main(['status', '--state-dir', '/nonexistent/state'], io);
    // Assess
    expect(code).toBe(1);
    expect(io.errors.join('\n')).toMatch(/no local stack found: .*stack\.json does not exist[\s\S]*npm start/);
  });
});

describe('deployed-stack outputs', () => {
  it('derives slot queue and DLQ urls from the outputs the CDK stack emits', () => {
    // Prepare
    const outputs = {
      [STACK_OUTPUT_KEYS.frameBucketName]: 'b',
      [STACK_OUTPUT_KEYS.leasesTableName]: 'l',
      [STACK_OUTPUT_KEYS.resultsTableName]: 'r',
      [STACK_OUTPUT_KEYS.ingestQueueUrl]: 'https://sqs/i',
      [STACK_OUTPUT_KEYS.ingestDlqUrl]: 'https://sqs/d',
      [STACK_OUTPUT_KEYS.slotQueueUrlPrefix]: 'https://sqs/123/S-slot-',
      [STACK_OUTPUT_KEYS.slotCount]: '2',
      [STACK_OUTPUT_KEYS.eventsTableName]: 'e',
      [STACK_OUTPUT_KEYS.eventBusName]: 'S-events',
      [STACK_OUTPUT_KEYS.eventBusArn]: 'arn:aws:events:eu-west-1:123:event-bus/S-events',
    };
    // Act
    const r = resourcesFromOutputs(outputs, 'S');
    // Assess
    expect(r.slotQueueUrls).toEqual(['https://sqs/123/S-slot-0.fifo', 'https://sqs/123/S-slot-1.fifo']);
    expect(r.slotDlqUrls).toEqual(['https://sqs/123/S-slot-0-dlq.fifo', 'https://sqs/123/S-slot-1-dlq.fifo']);
    expect(r.bucket).toBe('b');
    expect(r.eventsTable).toBe('e');
    expect(() => resourcesFromOutputs({ ...outputs, SlotCount: '' }, 'S')).toThrow(/lacks the outputs SlotCount/);
  });
});

describe('upload planning', () => {
  it('takes the number in the file name, sorts naturally, ignores non-images and numbers the rest by position', () => {
    // Prepare
    const names = ['frame10.png', 'frame2.png', 'notes.txt', 'frame1.JPG'];
    // Act
    const plan = planFrameNumbers(names, 0);
    const unnumbered = planFrameNumbers(['b.png', 'a.png', 'c.jpeg'], 5);
    // Assess
    expect(plan.map((p) => [p.name, p.frame, p.extension])).toEqual([
      ['frame1.JPG', 1, 'jpg'],
      ['frame2.png', 2, 'png'],
      ['frame10.png', 10, 'png'],
    ]);
    expect(unnumbered.map((p) => [p.name, p.frame])).toEqual([
      ['a.png', 5],
      ['b.png', 6],
      ['c.jpeg', 7],
    ]);
  });

  it('refuses two files that map to one frame', () => {
    expect(() => planFrameNumbers(['f1.png', 'f01.jpg'], 0)).toThrow(/both map to frame 1/);
  });
});

describe('demo schedule, failover and score', () => {
  it('interleaves cameras in time and displaces each upload only a little', () => {
    // Prepare
    const videos = ['a', 'b', 'c'].map((videoId) => ({ videoId, frames: Array.from({ length: 20 }, (_, i) => i) }));
    // Act
    const s = cameraSchedule(videos, 7, 3);
    // Assess
    expect(s).toHaveLength(60);
    expect(new Set(s.map((u) => `${u.videoId}:${u.frame}`)).size).toBe(60);
    s.forEach((u, i) => expect(Math.abs(i - (u.frame * 3 + ['a', 'b', 'c'].indexOf(u.videoId)))).toBeLessThan(3));
    const inOrder = Array.from({ length: 20 }, (_, frame) => ['a', 'b', 'c'].map((videoId) => ({ videoId, frame }))).flat();
    expect(s).not.toEqual(inOrder);
    expect(cameraSchedule(videos, 7, 3)).toEqual(s);
  });

  it('measures failover from the kill to the first result committed by the new owner', () => {
    // Prepare
    const results = [
      item(0, { worker: 'old', committedAtMs: 1_000 }),
      item(1, { worker: 'old', committedAtMs: 2_000 }),
      item(2, { worker: 'new', committedAtMs: 9_500 }),
      item(3, { worker: 'new', committedAtMs: 8_200 }),
    ];
    // Act / Assess
    expect(failoverSeconds(results, 2_500, 'old')).toBeCloseTo(5.7);
    expect(failoverSeconds(results, 2_500, 'someone-else')).toBeUndefined();
    expect(failoverSeconds(results.slice(0, 2), 2_500, 'old')).toBeUndefined();
  });

  it('scores tracks against ground truth and counts an ID switch when a track is renumbered', () => {
    // Prepare
    const box = (x: number): [number, number, number, number] => [x, 10, x + 20, 30];
    const gt = Array.from({ length: 10 }, (_, f) => ({ frame: f, objects: [{ id: 1, box: box(f * 5) }] }));
    const steady = gt.map((g) => item(g.frame, { detections: [{ trackId: 7, label: 'red', score: 0.9, box: box(g.frame * 5) }] }));
    const renumbered = steady.map((r) => (r.frame >= 5 ? { ...r, detections: [{ ...r.detections[0]!, trackId: 8 }] } : r));
    // Act
    const good = scoreVideo('v', steady, gt, { ownerChanges: 1 });
    const bad = scoreVideo('v', renumbered, gt, { ownerChanges: 2, killAtMs: 0, killedWorker: 'w1' });
    const lines = summaryTable([good, bad]);
    // Assess
    expect(good).toMatchObject({ frames: 10, framesOk: 10, tracks: 1, groundTruthTracks: 1, idf1: 1, idSwitches: 0 });
    expect(bad).toMatchObject({ tracks: 2, idSwitches: 1, ownerChanges: 2 });
    expect(bad.idf1).toBeLessThan(1);
    expect(lines[0]).toMatch(/video\s+frames\s+ok\s+tracks \(truth\)\s+IDF1\s+MOTA\s+ID switches\s+owner changes\s+failover/);
    expect(lines[2]).toContain('1.000');
  });
});

describe('video bookkeeping', () => {
  it('merges per-frame gap items into runs and lists failures with reasons', () => {
    // Prepare
    const items = [item(3, { status: 'gap', reason: 'missing-frame' }), item(4, { status: 'gap', reason: 'missing-frame' }), item(9, { status: 'failed', reason: 'oversized', detail: 'too big' }), item(7, { status: 'gap', throughFrame: 8, reason: 'missing-frame' })];
    // Act
    const p = problemsOf(items);
    // Assess
    expect(p.gaps).toEqual([
      { frame: 3, throughFrame: 4, reason: 'missing-frame' },
      { frame: 7, throughFrame: 8, reason: 'missing-frame' },
    ]);
    expect(p.failures).toEqual([{ frame: 9, reason: 'oversized', detail: 'too big', worker: 'w1' }]);
  });

  it.each([
    ['ENOENT', 'clip.mp4 does not exist: give a folder of frames (.jpg, .jpeg, .png) or a video file'],
    ['ENOTDIR', 'clip.mp4 is neither a folder of frames nor a video file'],
    ['EACCES', 'clip.mp4 cannot be read: permission denied'],
    ['EIO', 'cannot read clip.mp4: i/o error'],
  ])('says in words why an upload input cannot be read (%s)', (code, message) => {
    expect(unreadableInput('clip.mp4', { code, message: 'i/o error' })).toBe(message);
  });

  it('prints failures that share a reason as one line of frame ranges with a count, not a line per frame', () => {
    // Prepare: a damaged segment (250 frames, one reason, two workers), one oversized frame, one other decode error
    const failures = [
      ...Array.from({ length: 250 }, (_, i) => ({ frame: 200 + ((i * 7) % 250), reason: 'decode-error', detail: 'Invalid data found when processing input', worker: i < 100 ? 'w1' : 'w2' })),
      { frame: 9, reason: 'oversized', detail: 'too big', worker: 'w1' },
      { frame: 460, reason: 'decode-error', detail: 'Invalid data found when processing input', worker: 'w2' },
      { frame: 470, reason: 'decode-error', detail: 'truncated', worker: 'w2' },
    ];
    // Act
    const lines = failureGroups(failures).map(failureGroupLine);
    // Assess
    expect(lines).toEqual([
      '  9  oversized: too big  (w1)',
      '  200-449, 460 (251 frames)  decode-error: Invalid data found when processing input  (w1, w2)',
      '  470  decode-error: truncated  (w2)',
    ]);
    expect(failureGroupLine({ reason: 'crashed-worker', frames: [1, 2], workers: ['a', 'b', 'c'] })).toBe('  1-2 (2 frames)  crashed-worker  (a and 2 other workers)');
  });

  it('formats results as text, CSV and NDJSON, one line per detection or per frame', () => {
    // Prepare
    const r = item(4, { detections: [{ trackId: 2, label: 'red, dark', score: 0.5, box: [1, 2, 3.33, 4] }, { trackId: 3, label: 'blue', score: 0.25, box: [5, 6, 7, 8] }] });
    const failed = item(5, { status: 'failed', reason: 'corrupt-image' });
    // Act / Assess
    expect(formatResult(r, 'text')).toEqual(['4\tok\ttrack 2\tred, dark\t0.50\t[1, 2, 3, 4]', '4\tok\ttrack 3\tblue\t0.25\t[5, 6, 7, 8]']);
    expect(formatResult(r, 'csv')[0]).toBe('4,ok,2,"red, dark",0.500,1,2,3.3,4,,w1,1');
    expect(formatResult(failed, 'csv')).toEqual(['5,failed,,,,,,,,corrupt-image,w1,1']);
    expect(CSV_HEADER.split(',')).toHaveLength(formatResult(failed, 'csv')[0]!.split(',').length);
    expect(JSON.parse(formatResult(r, 'json')[0]!)).toMatchObject({ frame: 4, detections: [{ trackId: 2 }, { trackId: 3 }] });
  });
});

describe('rendering', () => {
  it('gives each track a stable, distinct colour', () => {
    // Act
    const colours = Array.from({ length: 12 }, (_, i) => trackColour(i + 1));
    // Assess
    expect(trackColour(5)).toBe(trackColour(5));
    expect(new Set(colours).size).toBe(12);
    colours.forEach((c) => expect(c).toMatch(/^#[0-9a-f]{6}$/));
  });

  it('draws digits as rects (no fonts needed) and a tagged box per detection', () => {
    // Act
    const one = bitmapText('1', 0, 0, 1, '#fff');
    const svg = overlaySvg(320, 240, [{ trackId: 12, label: 'red', score: 0.9, box: [50, 60, 90, 100] }], { frame: 7 });
    // Assess
    expect(one.match(/<rect/g)).toHaveLength(8); // the 3x5 glyph "1" has 8 pixels on
    expect(svg).not.toContain('<text');
    expect(svg).toContain(`stroke="${trackColour(12)}"`);
    expect(svg).toContain('x="50" y="60" width="40" height="40"');
  });

  it('draws the box in the track colour on the frame, and writes a contact sheet and an animated GIF', async () => {
    // Prepare
    const image = await sharp({ create: { width: 160, height: 120, channels: 3, background: { r: 0, g: 0, b: 0 } } }).png().toBuffer();
    const det = { trackId: 3, label: 'red', score: 0.9, box: [40, 40, 100, 100] as [number, number, number, number] };
    // Act
    const frames = await Promise.all([0, 1, 2].map((frame) => annotateFrame({ frame, status: 'ok', image, detections: [det] }, { width: 160, height: 120 })));
    const sheet = await contactSheet(frames, { columns: 2, thumbWidth: 80 });
    const gif = await animatedGif(frames, 50);
    // Assess
    const px = (x: number, y: number) => [...frames[0]!.rgb.subarray((y * 160 + x) * 3, (y * 160 + x) * 3 + 3)];
    const hex = trackColour(3);
    const want = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
    px(40, 70).forEach((v, i) => expect(Math.abs(v - want[i]!)).toBeLessThanOrEqual(2)); // left edge of the box
    expect(px(70, 70)).toEqual([0, 0, 0]); // inside stays untouched
    const sheetMeta = await sharp(sheet).metadata();
    expect([sheetMeta.format, sheetMeta.width]).toEqual(['png', 2 * 80 + 3 * 4]);
    const gifMeta = await sharp(gif, { animated: true }).metadata();
    expect([gifMeta.format, gifMeta.pages]).toEqual(['gif', 3]);
  });

  it('draws at a smaller size with the box scaled alike, and caps the animation\'s width', async () => {
    // Prepare: a 320x240 frame, its box in source pixels
    const image = await sharp({ create: { width: 320, height: 240, channels: 3, background: { r: 0, g: 0, b: 0 } } }).png().toBuffer();
    const det = { trackId: 3, label: 'red', score: 0.9, box: [80, 80, 200, 200] as [number, number, number, number] };
    // Act
    const half = await annotateFrame({ frame: 0, status: 'ok', image, detections: [det] }, { width: 320, height: 240 }, { out: { width: 160, height: 120 } });
    // Assess: the left edge of the box is at source x 80, so at x 40 in the half-size frame
    const px = (x: number, y: number) => [...half.rgb.subarray((y * 160 + x) * 3, (y * 160 + x) * 3 + 3)];
    expect([half.width, half.height]).toEqual([160, 120]);
    expect(px(40, 70)).not.toEqual([0, 0, 0]);
    expect(px(70, 70)).toEqual([0, 0, 0]);
    expect(renderSize({ width: 768, height: 576 })).toEqual({ width: ANIMATION_MAX_WIDTH_PX, height: 360 });
    expect(renderSize({ width: 320, height: 240 })).toEqual({ width: 320, height: 240 });
  });

  it('reports render progress on stderr: a line per stage and per quarter off a terminal, one line redrawn on a terminal', () => {
    // Prepare
    let now = 0;
    const io = memoryIo();
    const tty = { ...memoryIo({ interactive: true }), drawn: [] as string[] };
    tty.progress = (t) => void tty.drawn.push(t);
    // Act
    for (const p of [renderProgress(io, () => now), renderProgress(tty, () => now)]) {
      for (let i = 0; i <= 300; i += 16) p('fetching', Math.min(i, 300), 300);
      now = 12_000;
      p('animating', 0, 0);
      p('writing', 0, 0);
    }
    // Assess
    expect(io.errors).toEqual([
      'render: fetching and decoding frames 0/300 (0.0 s)',
      'render: fetching and decoding frames 80/300 (0.0 s)',
      'render: fetching and decoding frames 160/300 (0.0 s)',
      'render: fetching and decoding frames 240/300 (0.0 s)',
      'render: encoding the animation (12.0 s)',
      'render: writing the files (12.0 s)',
    ]);
    expect(tty.errors).toEqual([]);
    expect(tty.drawn.every((t) => t.startsWith('\r\x1b[K'))).toBe(true);
    expect(tty.drawn.at(-1)).toBe('\r\x1b[K');
  });

  it('samples evenly and summarises tracks by first and last frame', () => {
    // Act / Assess
    expect(sampleEvenly([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 4)).toEqual([0, 3, 6, 9]);
    expect(
      summariseTracks([
        { frame: 2, detections: [{ trackId: 5, label: 'red', score: 1, box: [0, 0, 1, 1] }] },
        { frame: 4, detections: [{ trackId: 5, label: 'red', score: 1, box: [0, 0, 1, 1] }] },
      ]),
    ).toEqual([{ trackId: 5, label: 'red', firstFrame: 2, lastFrame: 4, frames: 2, colour: trackColour(5) }]);
  });
});
