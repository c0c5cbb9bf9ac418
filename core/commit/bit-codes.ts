/**
 * Bit-level integer codes for packed records' format 3 (record-packing.ts, decision 77):
 * zigzag for signed numbers and Rice codes with a bounded unary part for the residuals of
 * detections (a box's change from the same track's box a frame before: a few pixels of
 * detector jitter, nearly uniform in a range, which DEFLATE's byte-wise Huffman codes 10-20 %
 * worse than a Rice code does). Numbers up to 2^53 (JavaScript's safe integers): bits are
 * taken with arithmetic, not 32-bit operators. Pure.
 */

/**
 * Unary length past which a Rice code's quotient is written in Elias gamma, so a rare
 * large value costs its log, not its size (3: the fewest bits for the bench's scores, whose
 * rare drops are such values; boxes do not mind).
 */
const UNARY_CAP = 3;

/** A signed safe integer as an unsigned one: 0, -1, 1, -2, ... → 0, 1, 2, 3, ... */
export const zigzag = (n: number) => (n >= 0 ? 2 * n : -2 * n - 1);
export const unzigzag = (z: number) => (z % 2 === 0 ? z / 2 : -(z + 1) / 2);

/** Bits of `x` (≥ 0): 0 for 0. */
function bitLength(x: number): number {
  if (x < 2 ** 32) return 32 - Math.clz32(x);
  let n = 32;
  x = Math.floor(x / 2 ** 32);
  while (x >= 1) {
    x = Math.floor(x / 2);
    n++;
  }
  return n;
}

export class BitWriter {
  private readonly bytes: number[] = [];
  /** Bits written but not yet a whole byte (fewer than 8), and how many. */
  private pending = 0;
  private pendingBits = 0;

  /** `x`'s low `n` bits (x < 2^53), most significant first. */
  bits(x: number, n: number): void {
    // In pieces of at most 24 bits: with the pending 7 they stay within 32-bit operators.
    while (n > 24) {
      n -= 24;
      this.piece(Math.floor(x / 2 ** n) % 2 ** 24, 24);
    }
    this.piece(x % 2 ** n, n);
  }

  /** `z` (≥ 0) as a Rice code with parameter `k`: quotient in unary (in Elias gamma past {@link UNARY_CAP}), then k low bits. */
  rice(z: number, k: number): void {
    const q = Math.floor(z / 2 ** k);
    if (q < UNARY_CAP) this.piece(2 ** (q + 1) - 2, q + 1);
    else {
      this.piece(2 ** UNARY_CAP - 1, UNARY_CAP);
      const g = q - UNARY_CAP + 1;
      const len = bitLength(g);
      this.bits(0, len - 1);
      this.bits(g, len);
    }
    this.bits(z % 2 ** k, k);
  }

  finish(): Uint8Array {
    const out = Uint8Array.from(this.bytes);
    if (this.pendingBits === 0) return out;
    const last = new Uint8Array(out.byteLength + 1);
    last.set(out);
    last[out.byteLength] = (this.pending << (8 - this.pendingBits)) & 0xff;
    return last;
  }

  /** `v` < 2^n, n ≤ 24. */
  private piece(v: number, n: number): void {
    let acc = ((this.pending << n) | v) >>> 0;
    let bits = this.pendingBits + n;
    while (bits >= 8) {
      bits -= 8;
      this.bytes.push((acc >>> bits) & 0xff);
    }
    acc &= (1 << bits) - 1;
    this.pending = acc;
    this.pendingBits = bits;
  }
}

/** The bits a Rice code of `z` with parameter `k` takes ({@link BitWriter.rice}). */
export function riceBits(z: number, k: number): number {
  const q = Math.floor(z / 2 ** k);
  return (q < UNARY_CAP ? q + 1 : UNARY_CAP + 2 * bitLength(q - UNARY_CAP + 1) - 1) + k;
}

/**
 * The Rice parameter (0-31) that codes `values` in the fewest bits. The best one lies near
 * log2 of the values' median (of their mean when a few large ones weigh little), so only
 * those around the two are tried.
 */
export function bestRiceParameter(values: readonly number[]): number {
  if (values.length === 0) return 0;
  let sum = 0;
  for (const z of values) sum += z;
  const median = [...values].sort((a, b) => a - b)[values.length >> 1]!;
  const candidates = new Set<number>();
  for (const around of [bitLength(median), bitLength(Math.floor(sum / values.length))]) {
    // Past 31 (values above 2^32), 31 and the few below it.
    for (let k = Math.max(0, Math.min(around, 32) - 4); k <= Math.min(31, around + 1); k++) candidates.add(k);
  }
  let best = 0;
  let bestBits = Number.POSITIVE_INFINITY;
  for (const k of candidates) {
    let n = 0;
    for (const z of values) n += riceBits(z, k);
    if (n < bestBits || (n === bestBits && k < best)) {
      bestBits = n;
      best = k;
    }
  }
  return best;
}

/** Reads what a {@link BitWriter} wrote; throws `what: truncated` past the end. */
export class BitReader {
  private pos = 0;
  private readonly bytes: Uint8Array;
  private readonly what: string;

  constructor(bytes: Uint8Array, what: string) {
    this.bytes = bytes;
    this.what = what;
  }

  bits(n: number): number {
    let x = 0;
    for (let i = 0; i < n; i++) x = x * 2 + this.one();
    return x;
  }

  rice(k: number): number {
    let q = 0;
    while (q < UNARY_CAP && this.one() === 1) q++;
    if (q === UNARY_CAP) {
      let zeros = 0;
      while (this.one() === 0) {
        // A gamma code longer than a safe integer is not one this writer made.
        if (++zeros > 53) throw new Error(`${this.what}: a number past 2^53`);
      }
      q = UNARY_CAP - 1 + 2 ** zeros + this.bits(zeros);
    }
    const z = q * 2 ** k + this.bits(k);
    if (!Number.isSafeInteger(z)) throw new Error(`${this.what}: a number past 2^53`);
    return z;
  }

  /** Whether only the last byte's zero padding is left. */
  atEnd(): boolean {
    if (this.bytes.length - Math.ceil(this.pos / 8) !== 0) return false;
    while (this.pos % 8 !== 0) if (this.one() !== 0) return false;
    return true;
  }

  private one(): number {
    const byte = this.bytes[this.pos >> 3];
    if (byte === undefined) throw new Error(`${this.what}: truncated`);
    const b = (byte >> (7 - (this.pos & 7))) & 1;
    this.pos++;
    return b;
  }
}
