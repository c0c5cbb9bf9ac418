/**
 * `release --force` as a core operation (core/commit/operations/release.ts) on the lease
 * table's twin: refusals change nothing; a release unpins and bumps the token, fencing the
 * old owner; a token that moved in between is refused. A video that was waiting has what
 * its checkpoint holds re-sent (tagged), so it is admitted again at once; a re-send that
 * fails says the release happened and what sends the frames again.
 */
import { describe, expect, it } from 'vitest';
import { forceRelease, heldObjects } from '../../../../core/commit/operations/release.ts';
import { OperatorError } from '../../../../core/commit/operations/ports.ts';
import { emptyCheckpoint, type VideoCheckpoint } from '../../../../core/commit/checkpoint.ts';
import type { StoredObject } from '../../../../core/ingest/port.ts';
import { MemoryLeaseTable } from '../../../../core/leases/memory/memory-lease-table.ts';

const obj = (key: string): StoredObject => ({ key: `frames/v/${key}`, sizeBytes: 10, eTag: `e-${key}` });
const ref = (frame: number, key: string) => ({ frame, bucket: 'b', key: `frames/v/${key}`, sizeBytes: 10, seenAtMs: 0 });

/** A checkpoint waiting: `buffered` and `late` frames by key, complete or not. */
function waiting(o: { buffered?: [number, string][]; late?: [number, string][]; complete?: boolean }): VideoCheckpoint {
  const ck = emptyCheckpoint(0);
  return {
    ...ck,
    complete: o.complete ?? false,
    sequencer: { ...ck.sequencer, nextFrame: 9, buffered: (o.buffered ?? []).map(([f, k]) => ref(f, k)), late: (o.late ?? []).map(([f, k]) => ({ ...ref(f, k), replacesGap: true })) },
  };
}

function setup(o: { checkpoint?: VideoCheckpoint; objects?: StoredObject[]; resendFailure?: string } = {}) {
  const twin = new MemoryLeaseTable({ prefix: 'rel' });
  const leases = twin.leases({ firstFrameNumber: 0 });
  const sent: { keys: string[]; tag: string; configurationId: string }[] = [];
  let tags = 0;
  const ports = {
    // The lease as stored, with the checkpoint the test gives it (the twin's own checkpoint is empty).
    leases: {
      getVideo: async (id: string) => {
        const v = await leases.getVideo(id);
        return o.checkpoint ? { ...v, checkpoint: o.checkpoint } : v;
      },
      forceReleaseVideo: leases.forceReleaseVideo.bind(leases),
      resetForReplay: leases.resetForReplay.bind(leases),
    },
    now: () => 1_000,
    where: 'the twin',
    objects: { list: async () => o.objects ?? [], declaredFrames: async () => undefined },
    ingest: {
      resend: async (objects: readonly StoredObject[], tag: string, configurationId: string) => {
        sent.push({ keys: objects.map((x) => x.key), tag, configurationId });
        return o.resendFailure ? { sent: 1, failure: o.resendFailure } : { sent: objects.length };
      },
    },
    newTag: (prefix: string) => `${prefix}-${++tags}`,
  };
  return { leases, ports, sent };
}

describe('heldObjects', () => {
  const objects = ['000005.jpg', '000009.jpg', '000011.jpg', '000012.jpg', '000020.mkv', '_end'].map(obj);
  it.each([
    { name: 'buffered and late frames, in frame order, and the end marker', ck: waiting({ buffered: [[12, '000012.jpg'], [11, '000011.jpg']], late: [[5, '000005.jpg']] }), frames: ['000005.jpg', '000011.jpg', '000012.jpg'], end: true },
    { name: "a segment's buffered frames: the segment once", ck: waiting({ buffered: [[20, '000020.mkv'], [21, '000020.mkv'], [22, '000020.mkv']] }), frames: ['000020.mkv'], end: true },
    { name: 'nothing buffered: the end marker alone still admits the video', ck: waiting({}), frames: [], end: true },
    { name: 'a frame held but gone from S3: not re-sent', ck: waiting({ buffered: [[30, '000030.jpg']] }), frames: [], end: true },
    { name: 'a completed video: nothing', ck: waiting({ buffered: [[11, '000011.jpg']], complete: true }), frames: [], end: false },
  ])('$name', ({ ck, frames, end }) => {
    const held = heldObjects(ck, objects);
    expect(held.frames.map((x) => x.key)).toEqual(frames.map((k) => `frames/v/${k}`));
    expect(held.endMarker?.key).toBe(end ? 'frames/v/_end' : undefined);
  });

  it('no end marker in S3: none', () => {
    expect(heldObjects(waiting({ buffered: [[11, '000011.jpg']] }), [obj('000011.jpg')])).toEqual({ frames: [obj('000011.jpg')], endMarker: undefined });
  });
});

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
    const { leases, ports, sent } = setup();
    await leases.pinVideo('v', 2, 0);
    const asked: number[] = [];
    const no = forceRelease(ports, { videoId: 'v', retentionDays: 1, confirm: async (l) => (asked.push(l.pinnedSlot), false) });
    await expect(no).rejects.toBeInstanceOf(OperatorError);
    expect(await leases.getVideo('v')).toMatchObject({ pinnedSlot: 2, token: 0 });
    const r = await forceRelease(ports, { videoId: 'v', retentionDays: 1, confirm: async () => true });
    expect(asked).toEqual([2]);
    // Nothing in S3 and nothing held: nothing re-sent, its next upload admits it.
    expect(r).toEqual({ videoId: 'v', slot: 2, previousToken: 0, token: 1, complete: false, resentFrames: [], resentEndMarker: false });
    expect(sent).toEqual([]);
    expect(await leases.getVideo('v')).toMatchObject({ state: 'released', token: 1 });
    expect((await leases.getVideo('v')).pinnedSlot).toBeUndefined();
  });

  it('refuses when the token moved between the read and the release', async () => {
    const { leases, ports, sent } = setup();
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
    expect(sent).toEqual([]);
  });

  it('a waiting video: re-sends its buffered frames and end marker, tagged, after the release', async () => {
    const { leases, ports, sent } = setup({ checkpoint: waiting({ buffered: [[11, '000011.jpg'], [12, '000012.jpg']] }), objects: ['000000.jpg', '000011.jpg', '000012.jpg', '_end'].map(obj) });
    await leases.pinVideo('v', 0, 0);
    const r = await forceRelease(ports, { videoId: 'v', retentionDays: 1 });
    expect(r).toEqual({ videoId: 'v', slot: 0, previousToken: 0, token: 1, complete: false, resentFrames: [11, 12], resentEndMarker: true, replayTag: 'release-1' });
    expect(sent).toEqual([{ keys: ['frames/v/000011.jpg', 'frames/v/000012.jpg', 'frames/v/_end'], tag: 'release-1', configurationId: 'affinity-release' }]);
    expect(await leases.getVideo('v')).toMatchObject({ state: 'released', token: 1 });
  });

  it('a completed video: nothing re-sent', async () => {
    const { leases, ports, sent } = setup({ checkpoint: waiting({ complete: true }), objects: ['000000.jpg', '_end'].map(obj) });
    await leases.pinVideo('v', 0, 0);
    expect(await forceRelease(ports, { videoId: 'v', retentionDays: 1 })).toMatchObject({ complete: true, resentFrames: [], resentEndMarker: false });
    expect(sent).toEqual([]);
  });

  it('a re-send that fails: says the release happened and names the command that sends the frames again', async () => {
    const { leases, ports } = setup({ checkpoint: waiting({ buffered: [[11, '000011.jpg']] }), objects: ['000011.jpg', '_end'].map(obj), resendFailure: 'throttled' });
    await leases.pinVideo('v', 0, 0);
    await expect(forceRelease(ports, { videoId: 'v', retentionDays: 1 })).rejects.toThrow(
      /released "v" from slot 0 \(token 0 -> 1\), but re-sending the 2 object\(s\) its checkpoint waits on failed after 1: throttled; .*run `affinity replay v --from 9`/,
    );
    expect(await leases.getVideo('v')).toMatchObject({ state: 'released', token: 1 });
  });
});
