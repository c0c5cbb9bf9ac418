/**
 * `release --force` as a core operation (core/commit/operations/release.ts) on the lease
 * table's twin: refusals change nothing; a release unpins and bumps the token, fencing the
 * old owner; a token that moved in between is refused.
 */
import { describe, expect, it } from 'vitest';
import { forceRelease } from '../../../../core/commit/operations/release.ts';
import { OperatorError } from '../../../../core/commit/operations/ports.ts';
import { MemoryLeaseTable } from '../../../../core/leases/memory/memory-lease-table.ts';

function setup() {
  const twin = new MemoryLeaseTable({ prefix: 'rel' });
  const leases = twin.leases({ firstFrameNumber: 0 });
  return { leases, ports: { leases, now: () => 1_000, where: 'the twin' } };
}

describe('forceRelease', () => {
  it('refuses a video with no lease, and one not pinned, with what to know', async () => {
    const { leases, ports } = setup();
    await expect(forceRelease(ports, { videoId: 'nobody', retentionDays: 1 })).rejects.toThrow(/no such video "nobody": it has no lease in the twin/);
    await leases.pinVideo('v', 0, 0);
    const v = await leases.getVideo('v');
    expect(await leases.forceReleaseVideo('v', v.token, 0, 1)).toBe(true);
    await expect(forceRelease(ports, { videoId: 'v', retentionDays: 1 })).rejects.toThrow(/is not leased \(state released, token 1\); nothing to release/);
  });

  it('asks first; a refusal changes nothing; a yes unpins and bumps the token', async () => {
    const { leases, ports } = setup();
    await leases.pinVideo('v', 2, 0);
    const asked: number[] = [];
    const no = forceRelease(ports, { videoId: 'v', retentionDays: 1, confirm: async (l) => (asked.push(l.pinnedSlot), false) });
    await expect(no).rejects.toBeInstanceOf(OperatorError);
    expect(await leases.getVideo('v')).toMatchObject({ pinnedSlot: 2, token: 0 });
    const r = await forceRelease(ports, { videoId: 'v', retentionDays: 1, confirm: async () => true });
    expect(asked).toEqual([2]);
    expect(r).toEqual({ videoId: 'v', slot: 2, previousToken: 0, token: 1 });
    expect(await leases.getVideo('v')).toMatchObject({ state: 'released', token: 1 });
    expect((await leases.getVideo('v')).pinnedSlot).toBeUndefined();
  });

  it('refuses when the token moved between the read and the release', async () => {
    const { leases, ports } = setup();
    await leases.pinVideo('v', 0, 0);
    // The lease moves while the operator is asked.
    const moved = forceRelease(ports, {
      videoId: 'v',
      retentionDays: 1,
      confirm: async (l) => {
        await leases.forceReleaseVideo('v', l.token, 0, 1);
        await leases.pinVideo('v', 0, 0);
        return true;
      },
    });
    await expect(moved).rejects.toThrow(/changed while releasing \(token is no longer 0\); nothing changed/);
    expect(await leases.getVideo('v')).toMatchObject({ pinnedSlot: 0, token: 1 });
  });
});
