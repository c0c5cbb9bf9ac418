import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_TUNABLES, EXIT_DONE, tunablesFromEnv, tunablesToEnv, validateTunables } from '../../core/config.ts';
import { WORKER_EXITS_WITHOUT_LEASE } from '../../core/fleet/janitor.ts';

describe('workerIdleExitSeconds', () => {
  it('defaults to 10 minutes and reaches the worker as WORKER_IDLE_EXIT_SECONDS', () => {
    // Act
    const env = tunablesToEnv({ ...DEFAULT_TUNABLES, workerIdleExitSeconds: 45 });

    // Assess
    expect(DEFAULT_TUNABLES.workerIdleExitSeconds).toBe(600);
    expect(env.WORKER_IDLE_EXIT_SECONDS).toBe('45');
    expect(tunablesFromEnv(env).workerIdleExitSeconds).toBe(45);
  });

  it('accepts 0 (never exit) and whole seconds up to a day, and rejects anything else by name', () => {
    // Act & Assess
    expect(validateTunables({ ...DEFAULT_TUNABLES, workerIdleExitSeconds: 0 }).workerIdleExitSeconds).toBe(0);
    expect(validateTunables({ ...DEFAULT_TUNABLES, workerIdleExitSeconds: 86_400 }).workerIdleExitSeconds).toBe(86_400);
    for (const bad of [-1, 1.5, 86_401, Number.NaN]) {
      expect(() => validateTunables({ ...DEFAULT_TUNABLES, workerIdleExitSeconds: bad }), String(bad)).toThrow(ConfigError);
      expect(() => validateTunables({ ...DEFAULT_TUNABLES, workerIdleExitSeconds: bad }), String(bad)).toThrow(/workerIdleExitSeconds/);
    }
  });

  it('exits with a code the janitor does not treat as a crash', () => {
    expect(EXIT_DONE).toBe(0);
    expect(WORKER_EXITS_WITHOUT_LEASE).toContain(EXIT_DONE);
  });
});
