/**
 * The JPEG / PNG size read in JS (image-header.ts): the same as sharp's for every kind of
 * JPEG and PNG sharp writes, undefined for what it does not know or cannot finish reading.
 */
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { declaredImageSize } from '../../../gpu-worker/vision/image-header.ts';

const image = (width: number, height: number) => sharp({ create: { width, height, channels: 3, background: '#246' } });

describe('declaredImageSize', () => {
  it.each([
    ['a baseline JPEG', () => image(1920, 1080).jpeg().toBuffer()],
    ['a progressive JPEG', () => image(641, 479).jpeg({ progressive: true }).toBuffer()],
    ['a JPEG with EXIF and an ICC profile before its frame header', () => image(333, 517).withMetadata({ orientation: 6 }).withIccProfile('srgb').jpeg().toBuffer()],
    ['a PNG', () => image(7, 5).png().toBuffer()],
    ['a PNG with alpha', () => sharp({ create: { width: 300, height: 200, channels: 4, background: '#2468' } }).png().toBuffer()],
  ])('reads %s as sharp does', async (_label, make) => {
    const bytes = await make();
    const meta = await sharp(bytes).metadata();
    expect(declaredImageSize(bytes)).toEqual({ width: meta.width, height: meta.height });
  });

  it.each([
    ['text', () => Promise.resolve(Buffer.from('not an image at all'))],
    ['a WebP', () => image(16, 16).webp().toBuffer()],
    ['a JPEG cut before its frame header', async () => (await image(64, 64).withIccProfile('srgb').jpeg().toBuffer()).subarray(0, 30)],
    ['a PNG cut inside its header', async () => (await image(64, 64).png().toBuffer()).subarray(0, 20)],
    ['an empty buffer', () => Promise.resolve(Buffer.alloc(0))],
  ])('gives up on %s, so sharp is asked', async (_label, make) => {
    expect(declaredImageSize(await make())).toBeUndefined();
  });
});
