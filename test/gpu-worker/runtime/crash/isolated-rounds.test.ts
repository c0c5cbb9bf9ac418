import { describe, expect, it } from 'vitest';
import { emptyCheckpoint, type StallEvidence } from '../../../../core/commit/checkpoint.ts';
import type { FrameOutcome } from '../../../../core/ports.ts';
import type { VideoPlan } from '../../../../gpu-worker/runtime/frame-runner.ts';
import { IsolatedRounds } from '../../../../gpu-worker/runtime/crash/isolated-rounds.ts';
import type { Handover } from '../../../../gpu-worker/runtime/crash/crash-breaker.ts';
import type { RoundUnit } from '../../../../gpu-worker/runtime/round-builder.ts';
import { VideoSession } from '../../../../gpu-worker/runtime/video-session.ts';

const OPTIONS = { reorderWaitMs: 5_000, reorderBufferFrames: 64, firstFrameNumber: 0 };
const ref = (videoId: string, frame: number) => ({ frame, bucket: 'b', key: `frames/${videoId}/${String(frame).padStart(6, '0')}.jpg`, sizeBytes: 10 });
const silent = { debug() {}, info() {}, warn() {}, error() {} };

function session(videoId: string, stall: StallEvidence | undefined, frames: number[], handover: Handover = 'unowned'): VideoSession {
  const s = new VideoSession(videoId, 1, { ...emptyCheckpoint(0), ...(stall ? { stall } : {}) }, OPTIONS, 0, handover);
  for (const f of frames) {
    s.offerFrame(ref(videoId, f), 0);
    s.takeHandle(`${videoId}-h${f}`, 0);
  }
  return s;
}

/** An isolated-rounds unit over fakes: a log of what ran and what was committed, in order. */
function rig(opts: { markerLands?: boolean } = {}) {
  const events: string[] = [];
  const counted: [string, number][] = [];
  const sessions = new Map<string, VideoSession>();
  const rounds = new IsolatedRounds({
    round: {
      runner: {
        run: async (plans: readonly VideoPlan[]) => {
          const out = new Map();
          for (const p of plans) {
            const outcomes = new Map<number, FrameOutcome>();
            for (const st of p.steps) {
              if (st.type !== 'frame' && st.type !== 'late') continue;
              const parked = p.parked.get(st.ref.frame);
              if (!parked) events.push(`run ${p.videoId}/${st.ref.frame}`);
              outcomes.set(st.ref.frame, parked ? { status: 'failed', reason: parked } : { status: 'ok', detections: [] });
            }
            out.set(p.videoId, { ok: true, outcomes });
          }
          return out;
        },
      },
      processor: { snapshot: () => 'state', openVideo() {}, closeVideo() {} },
      log: silent,
    },
    committer: {
      commit: async (units: readonly RoundUnit[]) => {
        for (const u of units) {
          const marker = u.plan.marker === true;
          events.push(marker ? `marker ${u.unit.videoId} trying ${u.unit.checkpoint.stall?.trying}` : `commit ${u.unit.videoId} [${u.unit.results.map((r) => `${r.frame}:${r.status}${r.reason ? `:${r.reason}` : ''}`).join(' ')}] stall ${JSON.stringify(u.unit.checkpoint.stall ?? null)}`);
          if (marker && opts.markerLands === false) return false;
          u.session.applyCommitted(u.unit, u.plan);
        }
        return true;
      },
      rollback: () => events.push('rollback'),
      inDoubt: () => false,
    },
    registry: { get: (id: string) => sessions.get(id) },
    metrics: { count: (name: string, value = 1) => counted.push([name, value]), milliseconds() {} },
    log: silent,
    slot: { fence: { slot: 0, workerId: 'w', epoch: 1 } },
    redeliveryMs: 5_000,
    broken: () => false,
  });
  const add = (s: VideoSession) => sessions.set(s.videoId, s);
  return { rounds, events, counted, add };
}

describe('IsolatedRounds', () => {
  it('splits suspects from the shared round; a suspect runs one frame, announced by a marker, and its commit clears the evidence', async () => {
    const { rounds, events, add } = rig();
    const normal = session('n', { adoptions: 1 }, [0, 1]);
    const suspect = session('s', { adoptions: 2 }, [0, 1]);
    add(normal);
    add(suspect);
    const { shared, isolated } = rounds.split([normal, suspect], 0);
    expect(shared).toEqual([normal]);
    expect(isolated).toEqual([suspect]);
    await rounds.run(isolated, 0);
    expect(events).toEqual(['marker s trying 0', 'run s/0', 'commit s [0:ok] stall null']);
    expect(suspect.isolated).toBe(true);
  });

  it('does not run the frame when its marker did not land, and takes it again next time', async () => {
    const { rounds, events, add } = rig({ markerLands: false });
    const s = session('s', { adoptions: 2 }, [0, 1]);
    add(s);
    await rounds.run([s], 0);
    await rounds.run([s], 0);
    expect(events).toEqual(['marker s trying 0', 'marker s trying 0']);
  });

  it('records a frame a process died on alone as crashed-worker without running it or marking it, counts it, and goes on', async () => {
    const { rounds, events, counted, add } = rig();
    const s = session('p', { adoptions: 4, trying: 1, tries: 2 }, [0, 1, 2]);
    add(s);
    for (let i = 0; i < 3; i++) await rounds.run([s], 0);
    expect(events).toEqual([
      'marker p trying 0',
      'run p/0',
      'commit p [0:ok] stall null',
      'commit p [1:failed:crashed-worker] stall null',
      'marker p trying 2',
      'run p/2',
      'commit p [2:ok] stall null',
    ]);
    expect(counted.filter(([name]) => name === 'FramesCrashedWorker')).toEqual([['FramesCrashedWorker', 1]]);
  });

  it('runs the videos taken from a dead owner alone, least suspect first: the one a process died on alone goes last', async () => {
    const { rounds, events, add } = rig();
    const p = session('p', { adoptions: 2, trying: 0, tries: 1 }, [0], 'dead-owner');
    const a = session('a', { adoptions: 1 }, [0], 'dead-owner');
    const b = session('b', { adoptions: 1 }, [0], 'dead-owner');
    for (const s of [p, a, b]) add(s);
    const { shared, isolated } = rounds.split([p, a, b], 0);
    expect(shared).toEqual([]);
    await rounds.run(isolated, 0);
    expect(events).toEqual([
      'marker a trying 0',
      'run a/0',
      'commit a [0:ok] stall null',
      'marker b trying 0',
      'run b/0',
      'commit b [0:ok] stall null',
      'marker p trying 0',
      'run p/0',
      'commit p [0:ok] stall null',
    ]);
  });

  it('sends a suspect back to the shared round once the redelivery window is over and nothing waits', async () => {
    const { rounds, add } = rig();
    const s = session('s', { adoptions: 2 }, [0]);
    add(s);
    await rounds.run([s], 0);
    expect(rounds.split([s], 4_999).isolated).toEqual([s]);
    expect(rounds.split([s], 5_000).shared).toEqual([s]);
  });
});
