import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_TUNABLES, envNameOf, tunablesFromEnv, tunablesToEnv, validateTunables } from '../../core/config.ts';

describe('tunables', () => {
  it('has the documented lease defaults', () => {
    expect(DEFAULT_TUNABLES.slotLeaseTtlSeconds).toBe(15);
    expect(DEFAULT_TUNABLES.heartbeatIntervalSeconds).toBe(5);
    expect(DEFAULT_TUNABLES.videoIdleReleaseSeconds).toBe(60);
  });

  it('round-trips through the environment', () => {
    const t = { ...DEFAULT_TUNABLES, slotCount: 7, modelUri: 's3://b/models/m.onnx' };
    expect(tunablesFromEnv(tunablesToEnv(t))).toEqual(t);
    expect(envNameOf('slotLeaseTtlSeconds')).toBe('SLOT_LEASE_TTL_SECONDS');
  });

  it('rejects out-of-range and inconsistent values with every problem named', () => {
    const bad = { ...DEFAULT_TUNABLES, slotCount: 0, heartbeatIntervalSeconds: 10, modelUri: 'http://x' };
    expect(() => validateTunables(bad)).toThrow(ConfigError);
    try {
      validateTunables(bad);
    } catch (e) {
      expect(String(e)).toMatch(/slotCount/);
      expect(String(e)).toMatch(/heartbeatIntervalSeconds/);
      expect(String(e)).toMatch(/modelUri/);
    }
    expect(() => tunablesFromEnv({ SLOT_COUNT: 'many' })).toThrow(/SLOT_COUNT/);
  });

  it('requires videoIdleReleaseSeconds to exceed routerPinCacheSeconds, saying why', () => {
    // Act
    const equal = () => validateTunables({ ...DEFAULT_TUNABLES, videoIdleReleaseSeconds: 30, routerPinCacheSeconds: 30 });
    const below = () => tunablesFromEnv({ VIDEO_IDLE_RELEASE_SECONDS: '10', ROUTER_PIN_CACHE_SECONDS: '60' });
    // Assess
    expect(equal).toThrow(ConfigError);
    expect(equal).toThrow(/videoIdleReleaseSeconds \(30\) must exceed routerPinCacheSeconds \(30\)/);
    expect(equal).toThrow(/stale router pins are only safe/);
    expect(below).toThrow(/videoIdleReleaseSeconds \(10\) must exceed routerPinCacheSeconds \(60\)/);
    expect(validateTunables({ ...DEFAULT_TUNABLES, videoIdleReleaseSeconds: 31, routerPinCacheSeconds: 30 }).videoIdleReleaseSeconds).toBe(31);
    expect(DEFAULT_TUNABLES.videoIdleReleaseSeconds).toBeGreaterThan(DEFAULT_TUNABLES.routerPinCacheSeconds);
  });

  it('takes the tracker thresholds from the environment and rejects a low threshold above the high one', () => {
    // Act
    const t = tunablesFromEnv({ TRACK_HIGH_SCORE_THRESHOLD: '0.3', TRACK_LOW_SCORE_THRESHOLD: '0.05', NEW_TRACK_SCORE_THRESHOLD: '0.35' });
    const inverted = () => tunablesFromEnv({ TRACK_HIGH_SCORE_THRESHOLD: '0.2', TRACK_LOW_SCORE_THRESHOLD: '0.4' });
    // Assess
    expect([t.trackHighScoreThreshold, t.trackLowScoreThreshold, t.newTrackScoreThreshold]).toEqual([0.3, 0.05, 0.35]);
    expect(inverted).toThrow(/trackLowScoreThreshold \(0.4\) must be at most trackHighScoreThreshold \(0.2\)/);
    expect(() => validateTunables({ ...DEFAULT_TUNABLES, newTrackScoreThreshold: 1 })).toThrow(/newTrackScoreThreshold must be in \(0, 1\)/);
    expect(() => validateTunables({ ...DEFAULT_TUNABLES, trackLowScoreThreshold: 0 })).toThrow(/trackLowScoreThreshold must be in \(0, 1\)/);
  });

  it("takes inferenceThreads from the environment, 0 meaning onnxruntime's default, and rejects a negative or fractional count", () => {
    // Act
    const t = tunablesFromEnv({ INFERENCE_THREADS: '3' });
    // Assess
    expect(t.inferenceThreads).toBe(3);
    expect(DEFAULT_TUNABLES.inferenceThreads).toBe(0);
    expect(() => validateTunables({ ...DEFAULT_TUNABLES, inferenceThreads: -1 })).toThrow(/inferenceThreads must be 0 \(onnxruntime's default\) or an integer between 1 and 256 \(got -1\)/);
    expect(() => tunablesFromEnv({ INFERENCE_THREADS: '1.5' })).toThrow(/inferenceThreads/);
  });
});
