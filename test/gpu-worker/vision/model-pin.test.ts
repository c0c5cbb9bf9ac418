import { describe, expect, it } from 'vitest';
import { sha256Hex, verifyModelSha256 } from '../../../gpu-worker/vision/model-pin.ts';

describe('model pinning (modelSha256)', () => {
  const bytes = new TextEncoder().encode('onnx model bytes');
  const digest = sha256Hex(bytes);

  it.each([
    { expected: undefined, throws: false },
    { expected: '', throws: false },
    { expected: digest, throws: false },
    { expected: digest.toUpperCase(), throws: false },
    { expected: '0'.repeat(64), throws: true },
  ])('expected=$expected -> throws=$throws', ({ expected, throws }) => {
    // Act
    const act = () => verifyModelSha256('s3://b/m.onnx', bytes, expected);

    // Assess
    if (throws) expect(act).toThrow(`model s3://b/m.onnx: sha256 ${digest} does not match modelSha256 ${'0'.repeat(64)}`);
    else expect(act).not.toThrow();
  });

  it('hashes as sha256sum does', () => {
    expect(sha256Hex(new TextEncoder().encode('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});
