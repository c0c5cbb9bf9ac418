/**
 * The rules port: what the round builder asks of a video's rules document. No SDK here.
 *
 * Implementation: S3 with conditional GETs (core/analytics/s3/rules-store.ts, `RulesStore`), built
 * by composition roots only.
 */
import type { RulesView } from './commit-events.ts';
import type { AnalyticsState } from './rule-engine.ts';

/** What the round builder asks: the rules a video's next commit runs. */
export interface RulesSource {
  /**
   * The view for a video. `committed` is the analytics state of its last checkpoint: the
   * rules in effect there stay in effect until a read proves the document changed, so a
   * successor runs the same rules as its predecessor did.
   */
  view(videoId: string, committed: AnalyticsState | undefined, nowMs: number): Promise<RulesView>;
  /** Forgets a video (released). */
  forget(videoId: string): void;
}
