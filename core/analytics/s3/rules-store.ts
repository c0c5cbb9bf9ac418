/**
 * Reads videos' rules documents from the frame bucket (issue 22, decision 34):
 * `rules/{videoId}.json`, else `rules/_default.json`, else no rules.
 *
 * Cost: the normal path adds no call per frame. Each video re-checks its document at most
 * once per `rulesRefreshSeconds` with a conditional GET (If-None-Match: 304 when unchanged),
 * plus one for the default document when the video has none of its own; the default is
 * shared by all the worker's videos and also re-checked at most once per interval. So a
 * change takes effect within `rulesRefreshSeconds` plus one round, without a restart.
 *
 * A document that fails validation is reported (log, metric, and the view's `invalid`,
 * which the commit turns into a `rules.invalid` event) and the last good rules stay in
 * effect: a typo in a rules file never changes what is counted, and never stops frames.
 * A read that fails (S3 down, access denied) keeps the rules in effect too.
 */
import type { RulesSource } from '../port.ts';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { DEFAULT_RULES_NAME, RULES_PREFIX } from '../../config/s3-layout.ts';
import type { RulesView } from '../commit-events.ts';
import type { AnalyticsState } from '../rule-engine.ts';
import { parseRules, type RulesDocument } from '../rules.ts';
import { METRIC_NAMES } from '../../metric-names.ts';
import type { LogSink, MetricSink } from '../../ports.ts';
import { errorText } from '../../errors.ts';

/** The key of a video's rules document. */
export function rulesKey(videoId: string): string {
  return `${RULES_PREFIX}${videoId}.json`;
}

/** The key of the default rules document. */
export const DEFAULT_RULES_KEY = `${RULES_PREFIX}${DEFAULT_RULES_NAME}.json`;

export type { RulesSource } from '../port.ts';

/** Videos whose last read is remembered; the oldest is forgotten past it (a forgotten video just reads again). */
const MAX_CACHED_VIDEOS = 4096;

/** One document as last read: its ETag, its rules or its errors. */
type Doc = { readonly state: 'absent' } | { readonly state: 'present'; readonly etag: string; readonly parsed: { ok: true; rules: RulesDocument } | { ok: false; errors: readonly string[] } };

interface Cached {
  checkedAtMs: number;
  doc: Doc | undefined;
  view: RulesView;
}

export interface RulesStoreOptions {
  readonly s3: S3Client;
  readonly bucket: string;
  /** How often a document is re-checked (tunable `rulesRefreshSeconds`). */
  readonly refreshMs: number;
  readonly log: LogSink;
  readonly metrics: MetricSink;
}

/** {@link RulesSource} on S3 with conditional GETs. */
export class RulesStore implements RulesSource {
  private readonly o: RulesStoreOptions;
  private readonly videos = new Map<string, Cached>();
  private defaultDoc: { checkedAtMs: number; doc: Doc | undefined; pending?: Promise<void> } = { checkedAtMs: -Infinity, doc: undefined };

  constructor(options: RulesStoreOptions) {
    this.o = options;
  }

  async view(videoId: string, committed: AnalyticsState | undefined, nowMs: number): Promise<RulesView> {
    let c = this.videos.get(videoId);
    // The checkpoint moved to other rules than this cache holds (another owner read a newer
    // document while the video was away): start again from the checkpoint, read at once.
    if (c && committed && committed.etag !== c.view.etag) c = undefined;
    if (!c) {
      // Adopted: the checkpoint's rules are in effect until a read says otherwise.
      c = { checkedAtMs: -Infinity, doc: undefined, view: committed ? { etag: committed.etag, ...(committed.rules ? { rules: committed.rules } : {}) } : { etag: '' } };
      this.videos.set(videoId, c);
      if (this.videos.size > MAX_CACHED_VIDEOS) this.videos.delete(this.videos.keys().next().value!);
    }
    if (nowMs - c.checkedAtMs < this.o.refreshMs) return c.view;
    c.checkedAtMs = nowMs;
    const knownEtag = c.doc?.state === 'present' ? c.doc.etag : c.view.etag.startsWith('video:') ? c.view.etag.slice(6) : undefined;
    const own = await this.read(rulesKey(videoId), knownEtag, c.doc);
    if (own === 'error') return c.view;
    c.doc = own;
    let source: { prefix: string; doc: Doc } = { prefix: 'video:', doc: own };
    if (own.state === 'absent') {
      await this.refreshDefault(nowMs, c.view.etag.startsWith('default:') ? c.view.etag.slice(8) : undefined);
      if (this.defaultDoc.doc === undefined) return c.view; // default unreadable: keep what is in effect
      source = { prefix: 'default:', doc: this.defaultDoc.doc };
    }
    c.view = this.viewOf(videoId, source.prefix, source.doc, c.view);
    return c.view;
  }

  forget(videoId: string): void {
    this.videos.delete(videoId);
  }

  /** The view after a read: a valid document takes effect; an invalid one is reported and the last good rules stay. */
  private viewOf(videoId: string, prefix: string, doc: Doc, before: RulesView): RulesView {
    if (doc.state === 'absent') return { etag: '' };
    const etag = prefix + doc.etag;
    if (doc.parsed.ok) return { etag, rules: doc.parsed.rules };
    if (before.invalid?.etag !== etag) {
      this.o.log.error('rules document invalid: keeping the rules in effect', { videoId, etag, errors: doc.parsed.errors, keptEtag: before.etag });
      this.o.metrics.count(METRIC_NAMES.worker.rulesInvalid);
    }
    return { etag: before.etag, ...(before.rules ? { rules: before.rules } : {}), invalid: { etag, errors: doc.parsed.errors } };
  }

  private async refreshDefault(nowMs: number, knownEtag: string | undefined): Promise<void> {
    const d = this.defaultDoc;
    if (d.pending) return d.pending;
    if (nowMs - d.checkedAtMs < this.o.refreshMs && d.doc !== undefined) return;
    d.pending = (async () => {
      const etag = d.doc?.state === 'present' ? d.doc.etag : knownEtag;
      const got = await this.read(DEFAULT_RULES_KEY, etag, d.doc);
      if (got !== 'error') {
        d.doc = got;
        d.checkedAtMs = nowMs;
      }
    })().finally(() => {
      d.pending = undefined;
    });
    return d.pending;
  }

  /**
   * One conditional GET: 304 keeps `previous` (when the caller knows only the ETag from a
   * checkpoint, a 304 is answered by a plain GET once, to learn the document itself).
   */
  private async read(key: string, ifNoneMatch: string | undefined, previous: Doc | undefined): Promise<Doc | 'error'> {
    try {
      const r = await this.o.s3.send(new GetObjectCommand({ Bucket: this.o.bucket, Key: key, ...(ifNoneMatch && previous ? { IfNoneMatch: ifNoneMatch } : {}) }));
      const text = r.Body ? await r.Body.transformToString() : '';
      const etag = r.ETag ?? '';
      return { state: 'present', etag, parsed: parseRules(text) };
    } catch (e) {
      const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const name = (e as Error).name;
      if (status === 304 || name === 'NotModified') return previous ?? 'error';
      if (status === 404 || name === 'NoSuchKey' || name === 'NotFound') return { state: 'absent' };
      this.o.log.warn('rules document unreadable: keeping the rules in effect', { key, error: errorText(e) });
      this.o.metrics.count(METRIC_NAMES.worker.rulesReadErrors);
      return 'error';
    }
  }
}
