/** Test images whose every pixel differs (Gaussian noise), so a letterbox or decode that drops or shifts a byte shows. */
import sharp from 'sharp';

/** A `width` x `height` RGB image of noise, encoded as `format`. */
export function noisy(width: number, height: number, format: 'jpeg' | 'png'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 50 } } })
    [format]()
    .toBuffer();
}
