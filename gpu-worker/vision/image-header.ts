/**
 * The pixel size a JPEG or PNG declares, read from its first bytes in JS. It spares each
 * frame a second sharp call (`metadata()`: a trip through libuv's pool and sharp's
 * option handling on the main thread) before the decode (decision 32). Anything it does
 * not recognise, or cannot read to the end, returns undefined and the caller asks sharp;
 * a size read here that libvips does not decode to is caught after the decode (the byte
 * count is checked), and sharp's `limitInputPixels` stays the backstop for the pixel limit.
 */

/** JPEG start-of-frame markers (baseline, progressive, lossless, arithmetic): not DHT (C4), JPG (C8) or DAC (CC). */
function isStartOfFrame(marker: number): boolean {
  return marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Width and height declared by a PNG's IHDR or a JPEG's start-of-frame; undefined for anything else. */
export function declaredImageSize(image: Uint8Array): { width: number; height: number } | undefined {
  if (image.length >= 24 && PNG_SIGNATURE.every((b, i) => image[i] === b)) {
    // IHDR is the first chunk: length (4), "IHDR" (4), width (4, big-endian), height (4).
    if (image[12] !== 0x49 || image[13] !== 0x48 || image[14] !== 0x44 || image[15] !== 0x52) return undefined;
    const view = new DataView(image.buffer, image.byteOffset, image.byteLength);
    const width = view.getUint32(16);
    const height = view.getUint32(20);
    return width > 0 && height > 0 ? { width, height } : undefined;
  }
  if (image.length < 4 || image[0] !== 0xff || image[1] !== 0xd8) return undefined;
  let i = 2;
  while (i + 3 < image.length) {
    if (image[i] !== 0xff) return undefined;
    const marker = image[i + 1]!;
    if (marker === 0xff) {
      i++; // fill byte
      continue;
    }
    // Markers without a length: TEM, RSTn, SOI; EOI or SOS before a frame header: give up.
    if (marker === 0x01 || (marker >= 0xd0 && marker <= 0xd8)) {
      i += 2;
      continue;
    }
    if (marker === 0xd9 || marker === 0xda) return undefined;
    const length = (image[i + 2]! << 8) | image[i + 3]!;
    if (length < 2) return undefined;
    if (isStartOfFrame(marker)) {
      // Length (2), precision (1), height (2), width (2).
      if (i + 8 >= image.length) return undefined;
      const height = (image[i + 5]! << 8) | image[i + 6]!;
      const width = (image[i + 7]! << 8) | image[i + 8]!;
      return width > 0 && height > 0 ? { width, height } : undefined;
    }
    i += 2 + length;
  }
  return undefined;
}
