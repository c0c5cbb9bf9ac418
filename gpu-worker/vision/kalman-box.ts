/**
 * The constant-velocity Kalman filter of the tracker (gpu-worker/vision/tracker.ts), per
 * ByteTrack: one independent 1-D filter per box coordinate (cx, cy, w, h), its noise scaled
 * by the box's width or height. State layout per coordinate: [position, velocity, P00,
 * P01, P11], 20 numbers in all, so a track's filter serialises as a flat array.
 */
import type { Box } from './postprocess.ts';

const STD_WEIGHT_POSITION = 1 / 20;
const STD_WEIGHT_VELOCITY = 1 / 160;


export function boxToXywh(b: Box): [number, number, number, number] {
  return [(b[0] + b[2]) / 2, (b[1] + b[3]) / 2, b[2] - b[0], b[3] - b[1]];
}

/** Per-dimension noise scale: x and w scale with width, y and h with height. */
function dimScale(w: number, h: number, dim: number): number {
  return dim % 2 === 0 ? w : h;
}

export function kfInitiate(b: Box): number[] {
  const m = boxToXywh(b);
  const kf: number[] = [];
  for (let d = 0; d < 4; d++) {
    const s = dimScale(m[2], m[3], d);
    const stdPos = 2 * STD_WEIGHT_POSITION * s;
    const stdVel = 10 * STD_WEIGHT_VELOCITY * s;
    kf.push(m[d], 0, stdPos * stdPos, 0, stdVel * stdVel);
  }
  return kf;
}

/** One frame of constant-velocity prediction (x' = x + v; P' = F P F^T + Q). */
export function kfPredict(kf: number[], freezeSize: boolean): void {
  // ByteTrack zeroes the size velocity of tracks that are not currently tracked.
  if (freezeSize) {
    kf[11] = 0;
    kf[16] = 0;
  }
  const w = kf[10];
  const h = kf[15];
  for (let d = 0; d < 4; d++) {
    const o = d * 5;
    const s = dimScale(w, h, d);
    const qPos = (STD_WEIGHT_POSITION * s) ** 2;
    const qVel = (STD_WEIGHT_VELOCITY * s) ** 2;
    const p00 = kf[o + 2];
    const p01 = kf[o + 3];
    const p11 = kf[o + 4];
    kf[o] += kf[o + 1];
    kf[o + 2] = p00 + 2 * p01 + p11 + qPos;
    kf[o + 3] = p01 + p11;
    kf[o + 4] = p11 + qVel;
  }
}

/** Measurement update with z = observed (cx, cy, w, h). */
export function kfUpdate(kf: number[], b: Box): void {
  const z = boxToXywh(b);
  const w = kf[10];
  const h = kf[15];
  for (let d = 0; d < 4; d++) {
    const o = d * 5;
    const r = (STD_WEIGHT_POSITION * dimScale(w, h, d)) ** 2;
    const p00 = kf[o + 2];
    const p01 = kf[o + 3];
    const p11 = kf[o + 4];
    const sInv = 1 / (p00 + r);
    const k0 = p00 * sInv;
    const k1 = p01 * sInv;
    const innovation = z[d] - kf[o];
    kf[o] += k0 * innovation;
    kf[o + 1] += k1 * innovation;
    kf[o + 2] = p00 * (1 - k0);
    kf[o + 3] = p01 * (1 - k0);
    kf[o + 4] = p11 - k1 * p01;
  }
}

