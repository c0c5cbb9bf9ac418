/**
 * Tells a user who runs the demo detector on real video that it cannot see it.
 *
 * The demo model (demo-model/build-model.ts) finds only the demo's solid coloured squares;
 * on a street scene it gives a handful of boxes in hundreds of frames, or none, and every
 * record is still `ok`, so nothing else would say why. The demo's own clips have an object
 * in nearly every frame, so the trigger is the detections themselves: a video whose first
 * {@link DEMO_WATCH_FRAMES} live frames gave boxes in fewer than half of them. The first
 * such video in a process gets the full warning (what the demo model finds, and the
 * commands to run a real one); later ones a one-line reminder, so a fleet of cameras does
 * not repeat the paragraph per camera. A process running a real model watches nothing.
 * Pure: the processor feeds it and logs what it returns.
 */

/** Live frames of a video looked at before deciding. */
export const DEMO_WATCH_FRAMES = 30;

/** What to run instead, in one place for the warning, the local banner and the README. */
export const REAL_MODEL_HINT =
  'run a real detector, an Ultralytics YOLOv8/11 ONNX export: locally `npm start -- --model yolov8n.onnx [--classes names.txt]`, ' +
  'deployed: copy it to the stack\'s model bucket (output ModelBucketName), then `npx cdk deploy -c modelUri=s3://<model-bucket>/models/yolov8n.onnx` (README, "Your own model")';

export interface DemoModelWarning {
  readonly msg: string;
  readonly videoId: string;
  readonly framesWithBoxes: number;
  readonly frames: number;
  /** True for the first warning of the process (the full text), false for the one-line reminders. */
  readonly first: boolean;
  readonly fix: string;
}

export class DemoModelWatch {
  private readonly enabled: boolean;
  private readonly seen = new Map<string, { frames: number; withBoxes: number; decided: boolean }>();
  private warned = false;

  /** `enabled`: the loaded model is the demo detector. */
  constructor(enabled: boolean) {
    this.enabled = enabled;
  }

  /**
   * One live frame of `videoId` and how many boxes it got; returns the warning when this
   * frame decides that the video is not the demo's kind (once per video).
   */
  observe(videoId: string, boxes: number): DemoModelWarning | undefined {
    if (!this.enabled) return undefined;
    let v = this.seen.get(videoId);
    if (!v) this.seen.set(videoId, (v = { frames: 0, withBoxes: 0, decided: false }));
    if (v.decided) return undefined;
    v.frames++;
    if (boxes > 0) v.withBoxes++;
    if (v.frames < DEMO_WATCH_FRAMES) return undefined;
    v.decided = true;
    if (v.withBoxes * 2 >= v.frames) return undefined;
    const first = !this.warned;
    this.warned = true;
    const seen = `video ${videoId} gave boxes in ${v.withBoxes} of its first ${v.frames} frames`;
    const msg = first
      ? `DEMO MODEL ON REAL VIDEO: ${seen}. This worker runs the project's demo detector, which finds only the demo's solid coloured squares ` +
        '(red, green, blue, yellow, cyan, magenta) on a dark background: it knows no people, cars or anything else, so real video gets few boxes or none. To detect real objects, ' +
        `${REAL_MODEL_HINT}.`
      : `DEMO MODEL ON REAL VIDEO: ${seen} (the demo detector finds only coloured squares; see the warning above)`;
    return { msg, videoId, framesWithBoxes: v.withBoxes, frames: v.frames, first, fix: REAL_MODEL_HINT };
  }

  /** Forgets a closed video, so memory stays bounded by the open videos; one opened again is watched afresh (a reminder at most). */
  forget(videoId: string): void {
    this.seen.delete(videoId);
  }
}
