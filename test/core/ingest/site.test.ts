/**
 * Site prefixes of video ids (core/ingest/site.ts, issue 45): `{site}.{camera}`, the site
 * being what the uploader policy reads from the principal tag.
 */
import { describe, expect, it } from 'vitest';
import { siteOfVideoId, siteProblem, siteVideoId, videoIdSiteProblem } from '../../../core/ingest/site.ts';

describe('site names', () => {
  it.each(['store-042', 'siteA', 'a', 'north_yard', 'x'.repeat(63)])('accepts %s', (site) => {
    expect(siteProblem(site)).toBeUndefined();
  });

  it.each([
    ['', 'empty'],
    ['a.b', 'holds the separator: site a would own its cameras'],
    ['a/b', 'a slash'],
    ['a b', 'a space'],
    ['x'.repeat(64), 'too long for a video id with a camera'],
  ])('rejects "%s" (%s), naming the rule', (site) => {
    expect(siteProblem(site)).toMatch(/must be 1-63 of A-Z a-z 0-9 _ - \(no "\."/);
  });
});

describe('the site of a video id', () => {
  it.each([
    ['store-042.door-1', 'store-042'],
    ['a.b.c', 'a'],
    ['door-1', undefined],
    ['.door', undefined],
  ])('%s belongs to %s', (videoId, site) => {
    expect(siteOfVideoId(videoId)).toBe(site);
  });

  it('builds a camera id that belongs to its site', () => {
    expect(siteOfVideoId(siteVideoId('store-042', 'door-1'))).toBe('store-042');
  });
});

describe('an uploader configured for a site', () => {
  it.each(['store-042.door-1', 'store-042.a.b'])('may send %s', (videoId) => {
    expect(videoIdSiteProblem(videoId, 'store-042')).toBeUndefined();
  });

  it.each([
    ['door-1', 'no site', /"door-1" is not a camera of site "store-042".*start with "store-042\.".*"store-042\.door-1"/],
    ['store-043.door-1', "another site's camera", /not a camera of site "store-042"/],
    ['store-0421.door-1', 'a site whose name starts with ours', /not a camera of site "store-042"/],
    ['store-042', 'the site alone', /not a camera of site "store-042"/],
    ['store-042.', 'no camera after the separator', /not a camera of site "store-042"/],
    ['store-042.bad id', 'a camera the key contract refuses', /not a camera of site "store-042".*"store-042\.door-1"/],
    ['bad id', 'no site and an invalid name: a sample name is suggested', /for example "store-042\.door-1"/],
  ])('may not send %s (%s), and says what to do', (videoId, _why, message) => {
    expect(videoIdSiteProblem(videoId, 'store-042')).toMatch(message);
  });

  it('refuses a site that is no site name before looking at the video', () => {
    expect(videoIdSiteProblem('a.b.door-1', 'a.b')).toMatch(/site "a\.b" must be/);
  });
});
