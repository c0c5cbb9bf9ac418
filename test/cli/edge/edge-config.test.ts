/**
 * The camera list of `affinity edge`: the YAML subset (and JSON), `${NAME}` from the
 * environment, defaults, a camera's own mistakes kept to that camera, file-wide ones refused.
 */
import { describe, expect, it } from 'vitest';
import { bytes, EdgeConfigError, parseEdgeConfig, sameCamera, substitute } from '../../../cli/edge/edge-config.ts';
import { MiniYamlError, parseMiniYaml } from '../../../cli/edge/mini-yaml.ts';

const YAML = `---
# a site's cameras
stateDir: /var/lib/affinity-edge   # journals and spools
defaults:
  segmentSeconds: 2
  spoolMaxBytes: 512MiB
cameras:
  - video: door-1
    url: rtsp://admin:\${DOOR1_PASSWORD}@10.0.0.5:554/h264
  - video: yard-2
    url: "rtsp://10.0.0.6/stream1#frag"
    segmentSeconds: 4
    container: mkv
  - video: bad id
    url: rtsp://x
  - video: gate-3
    url: rtsp://u:\${MISSING}@10.0.0.7/
`;

describe('parseMiniYaml', () => {
  it.each([
    ['a: 1\nb: true\nc: ~\nd: "x # y"\ne: \'it\'\'s\'', { a: 1, b: true, c: null, d: 'x # y', e: "it's" }],
    ['list:\n- 1\n- two\n', { list: [1, 'two'] }],
    ['list:\n  - a: 1\n    b: 2\n  - a: 3\n', { list: [{ a: 1, b: 2 }, { a: 3 }] }],
    ['m:\n  n:\n    o: rtsp://h:554/p\n', { m: { n: { o: 'rtsp://h:554/p' } } }],
    ['e: []\nf: {}\n', { e: [], f: {} }],
    ['k: a#b\n', { k: 'a#b' }],
  ])('reads %j', (text, expected) => {
    expect(parseMiniYaml(text)).toEqual(expected);
  });

  it.each([
    ['a: [1, 2]', /line 1: .*flow collections/],
    ['a: &x 1', /line 1: .*anchors/],
    ['a: 1\n  b: 2', /line 2: unexpected indentation/],
    ['a: 1\na: 2', /line 2: key "a" appears twice/],
    ['\ta: 1', /line 1: tabs/],
    ['a: "open', /line 1: unterminated double-quoted/],
    ['just text', /line 1: expected "key: value"/],
  ])('refuses %j with the line', (text, message) => {
    expect(() => parseMiniYaml(text)).toThrow(MiniYamlError);
    expect(() => parseMiniYaml(text)).toThrow(message);
  });
});

describe('parseEdgeConfig', () => {
  const env = { DOOR1_PASSWORD: 'p@ss:w/rd' };

  it('resolves the cameras, keeps a camera\'s mistake to that camera, and never needs a secret in the file', () => {
    const c = parseEdgeConfig(YAML, 'cameras.yaml', env);
    expect(c.stateDir).toBe('/var/lib/affinity-edge');
    expect(c.credentials).toBe('target');
    expect(c.cameras).toEqual([
      { video: 'door-1', url: 'rtsp://admin:p%40ss%3Aw%2Frd@10.0.0.5:554/h264', segmentSeconds: 2, container: 'mpegts', spoolMaxBytes: 512 * 1024 ** 2, readTimeoutSeconds: 10, firstFrame: 0 },
      { video: 'yard-2', url: 'rtsp://10.0.0.6/stream1#frag', segmentSeconds: 4, container: 'matroska', spoolMaxBytes: 512 * 1024 ** 2, readTimeoutSeconds: 10, firstFrame: 0 },
    ]);
    expect(c.problems).toEqual([
      { camera: 'bad id', message: expect.stringMatching(/"video" must be a video id/) },
      { camera: 'gate-3', message: expect.stringMatching(/environment variable MISSING is not set/) },
    ]);
  });

  it('reads the same list from JSON, with the SDK chain and a profile', () => {
    const json = JSON.stringify({ profile: 'site-a', cameras: [{ video: 'c1', url: 'rtsp://h/a', spoolMaxBytes: 1000 }] });
    const c = parseEdgeConfig(json, 'cameras.json', {});
    expect(c).toMatchObject({ credentials: 'chain', profile: 'site-a', stateDir: '.affinity-edge', cameras: [{ video: 'c1', spoolMaxBytes: 1000 }] });
  });

  it.each([
    ['cameras: 3', /needs "cameras"/],
    ['colour: red\ncameras: []', /unknown field "colour"/],
    ['credentials: keys\ncameras: []', /"credentials" must be "target"/],
    ['defaults:\n  video: x\ncameras: []', /"defaults" has an unknown field "video"/],
  ])('refuses a file-wide mistake: %j', (text, message) => {
    expect(() => parseEdgeConfig(text, 'c.yaml', {})).toThrow(EdgeConfigError);
    expect(() => parseEdgeConfig(text, 'c.yaml', {})).toThrow(message);
  });

  it.each([
    [{ video: 'a', url: 'rtsp://h', segmentSeconds: 0 }, /"segmentSeconds" must be a positive number/],
    [{ video: 'a', url: 'rtsp://h', container: 'avi' }, /"container" must be ts, mp4 or mkv/],
    [{ video: 'a', url: 'rtsp://h', spoolMaxBytes: '1 lot' }, /"spoolMaxBytes" must be a positive size/],
    [{ video: 'a' }, /needs "url"/],
    [{ video: 'a', url: 'rtsp://h', fps: 3 }, /unknown field "fps"/],
    [{ video: 'a', url: 'rtsp://h', bitrateKbps: '2M' }, /"bitrateKbps" must be a positive number of kbit\/s, the average rate of a transcoded camera/],
  ])('refuses camera %j on its own', (camera, message) => {
    const c = parseEdgeConfig(JSON.stringify({ cameras: [camera, { video: 'ok', url: 'rtsp://h' }] }), 'c.json', {});
    expect(c.cameras.map((x) => x.video)).toEqual(['ok']);
    expect(c.problems[0]!.message).toMatch(message);
  });

  it('takes a transcoded camera\'s bit rate (absent: constant quality), and a change of it restarts only that camera', () => {
    const c = parseEdgeConfig(JSON.stringify({ cameras: [{ video: 'a', url: 'rtsp://h/a', bitrateKbps: 1500 }, { video: 'b', url: 'rtsp://h/b' }] }), 'c.json', {});
    expect(c.cameras.map((x) => x.bitrateKbps)).toEqual([1500, undefined]);
    const d = parseEdgeConfig(JSON.stringify({ cameras: [{ video: 'a', url: 'rtsp://h/a', bitrateKbps: 800 }, { video: 'b', url: 'rtsp://h/b' }] }), 'c.json', {});
    expect(sameCamera(c.cameras[0]!, d.cameras[0]!)).toBe(false);
    expect(sameCamera(c.cameras[1]!, d.cameras[1]!)).toBe(true);
  });

  it('refuses, on its own, a camera whose video id is not of the uploader\'s site (issue 45), from "site" or AFFINITY_SITE', () => {
    const cameras = [{ video: 'store-042.door-1', url: 'rtsp://h/1' }, { video: 'door-2', url: 'rtsp://h/2' }, { video: 'store-7.door-3', url: 'rtsp://h/3' }];
    for (const [file, env] of [[{ site: 'store-042', cameras }, {}], [{ cameras }, { AFFINITY_SITE: 'store-042' }]] as const) {
      const c = parseEdgeConfig(JSON.stringify(file), 'c.json', env);
      expect(c.cameras.map((x) => x.video)).toEqual(['store-042.door-1']);
      expect(c.problems.map((p) => p.camera)).toEqual(['door-2', 'store-7.door-3']);
      expect(c.problems[0]!.message).toMatch(/not a camera of site "store-042".*"store-042\.door-2"/);
    }
    // Without a site, nothing is checked.
    expect(parseEdgeConfig(JSON.stringify({ cameras }), 'c.json', {}).cameras).toHaveLength(3);
    // A site name that cannot be one is refused for the whole file.
    expect(() => parseEdgeConfig(JSON.stringify({ site: 'a.b', cameras }), 'c.json', {})).toThrow(EdgeConfigError);
  });

  it('refuses a video id listed twice (the second one)', () => {
    const c = parseEdgeConfig(JSON.stringify({ cameras: [{ video: 'a', url: 'rtsp://h/1' }, { video: 'a', url: 'rtsp://h/2' }] }), 'c.json', {});
    expect(c.cameras.map((x) => x.url)).toEqual(['rtsp://h/1']);
    expect(c.problems).toEqual([{ camera: 'a', message: expect.stringMatching(/listed twice/) }]);
  });
});

describe('substitute and bytes', () => {
  it('encodes a value only inside the URL\'s user:password, keeps $${ literal', () => {
    expect(substitute('rtsp://${U}:${P}@h/${PATH}', { U: 'a b', P: '@/', PATH: 'x/y' })).toBe('rtsp://a%20b:%40%2F@h/x/y');
    expect(substitute('${WHOLE}', { WHOLE: 'rtsp://u:p@h/x' })).toBe('rtsp://u:p@h/x');
    expect(substitute('a$${B}', {})).toBe('a${B}');
    expect(() => substitute('${1X}', {})).toThrow(/no environment variable name/);
  });

  it.each([
    [1000, 1000],
    ['2GB', 2e9],
    ['1.5 KiB', 1536],
    ['512mib', 512 * 1024 ** 2],
  ])('%j is %d bytes', (v, n) => {
    expect(bytes(v)).toBe(n);
  });
});
