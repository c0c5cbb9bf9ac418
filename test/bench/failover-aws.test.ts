/**
 * The AWS-timeline failover bench (bench/failover-aws.ts, issue 42) on its smallest
 * scenario: one video on the deterministic simulation. What it reports must be what the
 * product did: a kill -9 fails over on the laptop's timeline and is judged clean by the
 * oracle; an instance loss pays for a new instance and is revealed by the lease alone
 * (no task-stopped event), never faster than the instance's start.
 */
import { describe, expect, it } from 'vitest';
import { latenciesOf, PROFILES, runCase, type Profile } from '../../bench/failover-aws.ts';

describe('failover on an AWS timeline (the simulation bench)', () => {
  it('sums a profile\'s start path into the task start, prefer-cached without the pull', () => {
    // Act
    const def = latenciesOf(PROFILES['aws-default-pull']!);
    const cached = latenciesOf(PROFILES['aws-prefer-cached']!);

    // Assess: the default pull is the only difference between the two warm-instance paths.
    expect(def.taskStartMs[0] - cached.taskStartMs[0]).toBe(3_000);
    expect(def.taskStartMs[1] - cached.taskStartMs[1]).toBe(15_000);
    expect(cached.instanceStartMs).toBeDefined();
  });

  it('measures a kill -9 on the laptop profile: a new result for the video within the visibility window, nothing lost or doubled', async () => {
    // Act
    const r = await runCase('kill-9', PROFILES.laptop!, 1, { videos: 1 });

    // Assess
    expect(r.violations).toEqual([]);
    expect(r.ended).toBe('settled');
    expect(r.launchedSeconds).toBeLessThan(0.1);
    expect(r.failoverSeconds).not.toBeNull();
    // Launch 10-50 ms, start 0.4-0.7 s, and at most the dead owner's 5-s visibility window.
    expect(r.failoverSeconds!).toBeGreaterThanOrEqual(0.4);
    expect(r.failoverSeconds!).toBeLessThan(6.5);
  }, 20_000);

  it('makes an instance loss wait for the lease and a new instance: no task-stopped event, the start pays the instance', async () => {
    // Prepare: a 30-s instance and a 1-s task start, so the figure is easy to bound.
    const p: Profile = { ...PROFILES.laptop!, name: 'test', startPath: [{ step: 'start', ms: [1_000, 1_000], source: 'test' }], instanceStartMs: [30_000, 30_000] };

    // Act
    const r = await runCase('instance-loss', p, 1, { videos: 1 });

    // Assess
    expect(r.violations).toEqual([]);
    expect(r.failoverSeconds).not.toBeNull();
    // Nothing reports the loss: the launch comes only once the 15-s lease ran out.
    expect(r.launchedSeconds!).toBeGreaterThan(10);
    expect(r.runsSeconds! - r.launchedSeconds!).toBeCloseTo(31, 0);
    expect(r.failoverSeconds!).toBeGreaterThanOrEqual(r.runsSeconds!);
  }, 20_000);
});
