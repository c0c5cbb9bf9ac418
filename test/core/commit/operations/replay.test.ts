/**
 * `replay` as a core operation (core/commit/operations/replay.ts) on the twins, its ports
 * built from the twins' SDK-shaped clients as the CLI builds them from real ones
 * (`operatorPorts`), the ingest queue a capturing client: what it refuses (nothing
 * changed), and what it deletes, keeps and re-sends.
 */
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import type { SQSClient } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { operatorPorts } from '../../../../core/commit/operations/compose.ts';
import { replay } from '../../../../core/commit/operations/replay.ts';
import { endMarkerKey, frameKey } from '../../../../core/ingest/keys.ts';
import { MemoryS3 } from '../../../../core/ingest/memory/memory-s3.ts';
import { MemoryLeaseTable } from '../../../../core/leases/memory/memory-lease-table.ts';

function setup(options: { refuse?: boolean } = {}) {
  const twin = new MemoryLeaseTable({ prefix: 'rp' });
  const s3 = new MemoryS3().createBucket('b');
  const sent: string[][] = [];
  const sqs = {
    send: async (c: { input: { Entries: { Id: string; MessageBody: string }[] } }) => {
      sent.push(c.input.Entries.map((e) => (JSON.parse(e.MessageBody) as { Records: { s3: { object: { key: string } } }[] }).Records[0]!.s3.object.key));
      return { Failed: options.refuse ? [{ Id: '0', Code: 'Throttled', Message: 'slow down', SenderFault: false }] : [] };
    },
  } as unknown as SQSClient;
  const wiring = { region: 'us-east-1', bucket: 'b', ingestQueueUrl: 'q', ...twin.wiring };
  const ports = operatorPorts({ ddb: twin.ddb, s3: s3.asClient(), sqs }, wiring, { firstFrameNumber: 0 }, { where: 'the twins', now: () => 5_000, newTag: (p) => `${p}-t` });
  const leases = twin.leases({ firstFrameNumber: 0 });
  const record = (frame: number, token: number) =>
    twin.ddb.send(new PutCommand({ TableName: twin.wiring.resultsTable, Item: { videoId: 'v', frame, status: 'ok', detections: [], token, worker: 'w', committedAtMs: 1 } }));
  return { twin, s3, sent, ports, leases, record };
}

/** A video pinned with frames 0-5 in S3 and recorded, started at frame 0 (as a first commit leaves it). */
async function recordedVideo(t: ReturnType<typeof setup>, frames = 6) {
  await t.leases.pinVideo('v', 0, 0);
  for (let f = 0; f < frames; f++) {
    t.s3.putObject('b', frameKey('v', f), 'x');
    await t.record(f, 0);
  }
  // The sequencer's first frame, as the worker's first commit records it.
  const v = await t.leases.getVideo('v');
  await t.twin.ddb.send(
    new PutCommand({ TableName: t.twin.wiring.leasesTable, Item: { pk: 'video#v', videoId: 'v', token: 0, pinnedSlot: 0, state: 'pinned', ckSeq: v.checkpoint.seq, checkpoint: { ...v.checkpoint, sequencer: { ...v.checkpoint.sequencer, firstFrame: 0, nextFrame: frames } } } }),
  );
}

describe('replay (operation)', () => {
  it('refuses a bad frame, an unknown video, and a replay past the last frame, changing nothing', async () => {
    const t = setup();
    await expect(replay(t.ports, { videoId: 'v', fromFrame: -1 })).rejects.toMatchObject({ usage: true });
    await expect(replay(t.ports, { videoId: 'v', fromFrame: 0 })).rejects.toThrow(/no such video "v": it has no lease in the twins/);
    await recordedVideo(t);
    await expect(replay(t.ports, { videoId: 'v', fromFrame: 6 })).rejects.toThrow(/no frames of "v" at or after frame 6 in s3:\/\/b; nothing to replay/);
    expect((await t.leases.getVideo('v')).token).toBe(0);
    expect(t.sent).toEqual([]);
  });

  it('resets, deletes from --from on, and re-sends from the first frame (the end marker when the end is not known)', async () => {
    const t = setup();
    await recordedVideo(t);
    t.s3.putObject('b', endMarkerKey('v'), '5');
    // Act
    const r = await replay(t.ports, { videoId: 'v', fromFrame: 3 });
    // Assess
    expect(r).toMatchObject({ fromFrame: 3, widened: [], previousToken: 0, token: 1, deleted: 3, keptNewer: 0, resent: 3, rebuilt: 3, rebuiltFrom: 0, endMarker: true, replayTag: 'replay-t' });
    expect(t.sent.flat()).toEqual([...[0, 1, 2, 3, 4, 5].map((f) => frameKey('v', f)), endMarkerKey('v')]);
    const v = await t.leases.getVideo('v');
    expect(v).toMatchObject({ token: 1, state: 'released' });
    expect(v.checkpoint.replay).toEqual({ silentBelow: 3, fencedToken: 0 });
    expect(v.checkpoint).toMatchObject({ framesOk: 3, firstFrame: 0, lastFrame: 2 });
  });

  it('says what to do when the re-send is refused (the reset and deletes stand: a re-run redoes the rest)', async () => {
    const t = setup({ refuse: true });
    await recordedVideo(t);
    await expect(replay(t.ports, { videoId: 'v', fromFrame: 3 })).rejects.toThrow(/re-sending frames failed after 0: slow down; re-run the replay/);
  });
});
