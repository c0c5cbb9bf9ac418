import { describe, expect, it } from 'vitest';
import {
  CROSS_FIELD_CHECKS,
  ConfigError,
  DEFAULT_TUNABLES,
  TUNABLES,
  documentedRange,
  envNameOf,
  rangeProblem,
  tunablesFromEnv,
  tunablesToEnv,
  validateTunables,
  type SettingSpec,
} from '../../core/config.ts';

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
    // A flag (hotSpare, decision 75) reads as tunablesToEnv writes it, and nothing else.
    expect(tunablesFromEnv({ HOT_SPARE: 'false' }).hotSpare).toBe(false);
    expect(tunablesFromEnv({}).hotSpare).toBe(true);
    expect(() => tunablesFromEnv({ HOT_SPARE: 'yes' })).toThrow(/hotSpare must be true or false \(HOT_SPARE is "yes"\)/);
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

describe('the tunables table', () => {
  it('is where the defaults come from, each default inside its own range', () => {
    expect(Object.keys(DEFAULT_TUNABLES)).toEqual(Object.keys(TUNABLES));
    for (const [key, spec] of Object.entries(TUNABLES)) {
      expect(DEFAULT_TUNABLES[key as keyof typeof TUNABLES]).toBe(spec.default);
      expect(rangeProblem(key, spec, spec.default)).toBeUndefined();
    }
  });

  it('gives every tunable an environment variable that tunablesFromEnv reads (an out-of-range value there is refused, naming the tunable)', () => {
    for (const [key, spec] of Object.entries(TUNABLES) as [keyof typeof TUNABLES, SettingSpec][]) {
      const bad = spec.kind === 'text' ? 'x:y' : spec.kind === 'fraction' ? 2 : spec.kind === 'integer' ? spec.min - 1 : Number.NaN;
      expect(() => tunablesFromEnv({ [envNameOf(key)]: String(bad) }), key).toThrow(new RegExp(`${key} must`));
    }
  });

  const integer = { kind: 'integer', default: 1, min: 1, max: 10, unit: 's', meaning: 'm' } as const satisfies SettingSpec;
  const withOff = { ...integer, default: 0, min: 0, off: { value: 0, meaning: 'never' } } as const satisfies SettingSpec;
  const offBelowMin = { ...integer, default: 0, min: 16, max: 28, off: { value: 0, meaning: 'automatic' } } as const satisfies SettingSpec;
  const unbounded = { ...integer, default: -1, min: -1, max: Number.MAX_SAFE_INTEGER, off: { value: -1, meaning: 'automatic' } } as const satisfies SettingSpec;
  const fraction = { kind: 'fraction', default: 0.5, unit: 'score', meaning: 'm' } as const satisfies SettingSpec;
  const text = { kind: 'text', default: '', pattern: /^a+$/, rule: 'be some a', emptyMeans: 'none', meaning: 'm' } as const satisfies SettingSpec;
  const choice = { kind: 'choice', default: 3, values: [1, 3], unit: 'days', meaning: 'm' } as const satisfies SettingSpec;
  it.each([
    ['integer in range', integer, 10, undefined],
    ['integer above', integer, 11, 'k must be an integer between 1 and 10 (got 11)'],
    ['integer fractional', integer, 1.5, 'k must be an integer between 1 and 10 (got 1.5)'],
    ['off value', withOff, 0, undefined],
    ['below off', withOff, -1, 'k must be 0 (never) or an integer between 1 and 10 (got -1)'],
    ['off value below min', offBelowMin, 0, undefined],
    ['between off and min', offBelowMin, 15, 'k must be 0 (automatic) or an integer between 16 and 28 (got 15)'],
    ['min above off', offBelowMin, 16, undefined],
    ['unbounded above off', unbounded, 2 ** 40, undefined],
    ['below unbounded off', unbounded, -2, 'k must be -1 (automatic) or a non-negative integer (got -2)'],
    ['fraction inside', fraction, 0.99, undefined],
    ['fraction at 1', fraction, 1, 'k must be in (0, 1) (got 1)'],
    ['fraction NaN', fraction, Number.NaN, 'k must be in (0, 1) (got NaN)'],
    ['empty text allowed', text, '', undefined],
    ['text not matching', text, 'b', 'k must be some a (got "b")'],
    ['choice listed', choice, 1, undefined],
    ['choice not listed', choice, 2, 'k must be one of 1, 3 (got 2)'],
  ] as const)('range check: %s', (_name, spec, value, expected) => {
    expect(rangeProblem('k', spec, value)).toBe(expected);
  });

  it.each([
    [integer, '1..10'],
    [withOff, '0 (never) or 1..10'],
    [offBelowMin, '0 (automatic) or 16..28'],
    [unbounded, '-1 (automatic) or 0..'],
    [fraction, '(0, 1)'],
    [text, 'empty (none) or some a'],
    [choice, 'one of 1, 3'],
  ] as const)('documents the range of %j as %s', (spec, expected) => {
    expect(documentedRange(spec)).toBe(expected);
  });

  it.each([
    ['heartbeatWithinHalfTtl', { heartbeatIntervalSeconds: 8, slotLeaseTtlSeconds: 15 }],
    ['idleReleaseAfterPinCache', { videoIdleReleaseSeconds: 30, routerPinCacheSeconds: 30 }],
    ['batchOverTenNeedsWindow', { routerBatchSize: 11, routerBatchWindowSeconds: 0 }],
    ['batchWindowWithinVisibility', { routerBatchWindowSeconds: 151, ingestVisibilitySeconds: 180 }],
    ['trackLowAtMostHigh', { trackLowScoreThreshold: 0.6, trackHighScoreThreshold: 0.5 }],
  ] as const)('named check %s fires on its case and not on the defaults', (name, change) => {
    const check = CROSS_FIELD_CHECKS[name]!;
    expect(check(DEFAULT_TUNABLES)).toBeUndefined();
    expect(check({ ...DEFAULT_TUNABLES, ...change })).toMatch(/must/);
    expect(() => validateTunables({ ...DEFAULT_TUNABLES, ...change })).toThrow(ConfigError);
  });
});
