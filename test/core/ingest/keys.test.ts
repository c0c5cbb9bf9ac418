import { describe, expect, it } from 'vitest';
import { decodeS3EventKey, parseEndMarkerBody, parseFrameKey } from '../../../core/ingest/keys.ts';
import { parseIngestBody } from '../../../core/ingest/s3-events.ts';

describe('parseFrameKey', () => {
  it('accepts the contract, comparing frame numbers numerically', () => {
    expect(parseFrameKey('frames/cam-1.a_b/000042.jpg')).toEqual({ kind: 'frame', videoId: 'cam-1.a_b', frame: 42, extension: 'jpg' });
    expect(parseFrameKey('frames/v/7.PNG')).toMatchObject({ kind: 'frame', frame: 7, extension: 'png' });
    expect(parseFrameKey('frames/v/0.jpeg')).toMatchObject({ kind: 'frame', frame: 0 });
    expect(parseFrameKey('frames/v/_end')).toEqual({ kind: 'end', videoId: 'v' });
  });

  it.each([
    ['uploads/v/1.jpg', 'outside-prefix'],
    ['frames/../1.jpg', 'bad-video-id'],
    ['frames/a/b/1.jpg', 'bad-video-id'],
    ['frames/bad id/1.jpg', 'bad-video-id'],
    [`frames/${'x'.repeat(129)}/1.jpg`, 'bad-video-id'],
    ['frames/v/1.txt', 'non-image-extension'],
    ['frames/v/-1.jpg', 'bad-frame-name'],
    ['frames/v/1.5.jpg', 'bad-frame-name'],
    ['frames/v/abc.jpg', 'bad-frame-name'],
    ['frames/v/', 'bad-frame-name'],
    ['frames//1.jpg', 'bad-video-id'],
  ])('rejects %s as %s', (key, reason) => {
    expect(parseFrameKey(key)).toMatchObject({ kind: 'rejected', reason });
  });

  it('decodes S3 event keys (+ is a space, %XX escapes)', () => {
    expect(decodeS3EventKey('frames/v%2B1/1.jpg')).toBe('frames/v+1/1.jpg');
    expect(decodeS3EventKey('frames/a+b/1.jpg')).toBe('frames/a b/1.jpg');
    expect(decodeS3EventKey('%E0%A4%A')).toBeUndefined();
  });

  it('parses end-marker bodies', () => {
    expect(parseEndMarkerBody(' 120\n')).toBe(120);
    expect(parseEndMarkerBody('last=3')).toBeUndefined();
  });
});

describe('parseIngestBody', () => {
  const event = (key: string, eventName = 'ObjectCreated:Put', bucket = 'bkt', size = 10) =>
    JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName, eventTime: '2026-01-01T00:00:00.000Z', s3: { bucket: { name: bucket }, object: { key, size } } }] });

  it('routes frames and end markers', () => {
    expect(parseIngestBody(event('frames/v1/000003.jpg'), 'bkt')).toEqual([
      { kind: 'route', message: { kind: 'frame', videoId: 'v1', frame: 3, bucket: 'bkt', key: 'frames/v1/000003.jpg', sizeBytes: 10, eventTime: '2026-01-01T00:00:00.000Z' } },
    ]);
    expect(parseIngestBody(event('frames/v1/_end'), 'bkt')[0]).toMatchObject({ kind: 'route', message: { kind: 'end', videoId: 'v1' } });
  });

  it("carries an end marker's ETag, which tells a corrected marker from a duplicated notification", () => {
    const withTag = JSON.stringify({ Records: [{ eventSource: 'aws:s3', eventName: 'ObjectCreated:Put', eventTime: '2026-01-01T00:00:00.000Z', s3: { bucket: { name: 'bkt' }, object: { key: 'frames/v1/_end', size: 2, eTag: '6512bd43d9caa6e02c990b0a82652dca' } } }] });
    expect(parseIngestBody(withTag, 'bkt')[0]).toMatchObject({ kind: 'route', message: { kind: 'end', videoId: 'v1', eTag: '6512bd43d9caa6e02c990b0a82652dca' } });
    expect(parseIngestBody(event('frames/v1/_end'), 'bkt')[0]).not.toHaveProperty('message.eTag');
  });

  it.each([
    ['not json', 'not-json'],
    [JSON.stringify({ Service: 'Amazon S3', Event: 's3:TestEvent' }), 's3-test-event'],
    [JSON.stringify({ hello: 1 }), 'unknown-event'],
    [JSON.stringify({ Records: [{ eventSource: 'aws:sns' }] }), 'unknown-event'],
  ])('rejects body %s as %s', (body, reason) => {
    expect(parseIngestBody(body, 'bkt')[0]).toMatchObject({ kind: 'reject', reason });
  });

  it('rejects deletes, other buckets, and URL-encoded traversal tricks', () => {
    expect(parseIngestBody(event('frames/v/1.jpg', 'ObjectRemoved:Delete'), 'bkt')[0]).toMatchObject({ reason: 'not-object-created' });
    expect(parseIngestBody(event('frames/v/1.jpg', 'ObjectCreated:Put', 'other'), 'bkt')[0]).toMatchObject({ reason: 'wrong-bucket' });
    expect(parseIngestBody(event('frames/..%2Fsecret/1.jpg'), 'bkt')[0]).toMatchObject({ reason: 'bad-video-id' });
    expect(parseIngestBody(event('frames/v%2F1/1.jpg'), 'bkt')[0]).toMatchObject({ reason: 'bad-video-id' });
  });
});
