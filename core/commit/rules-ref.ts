/**
 * The rules document a checkpoint runs, stored out of line (issue 44, decision 76).
 *
 * A checkpoint carries the video's rules so that a successor runs the very same ones
 * (decision 35); but the rules change rarely and the checkpoint is rewritten at every
 * commit, in a transaction, at 2 write units per started KB. So the stored checkpoint
 * keeps only a reference, `rulesRef`: a hash of the document's JSON. The document itself
 * is an item of the leases table keyed by that hash, `rules#{ref}`: content-addressed,
 * hence immutable and shared by every video (and every version of a checkpoint) that runs
 * the same rules. It is written, unconditionally and so idempotently, in the very
 * transaction that first stores a checkpoint referring to it, so a stored reference never
 * lands without its document. It is never deleted by the product (no TTL: a released
 * video's checkpoint may be read again much later); each is the size of one rules file.
 */
import { createHash } from 'node:crypto';
import type { RulesDocument } from '../analytics/rules.ts';

const refs = new WeakMap<RulesDocument, { readonly ref: string; readonly json: string }>();

/**
 * The reference of a rules document and its JSON: the first 128 bits of the SHA-256 of
 * the JSON, base64url (22 characters). Computed once per document object.
 */
export function rulesRef(rules: RulesDocument): { readonly ref: string; readonly json: string } {
  let r = refs.get(rules);
  if (!r) {
    const json = JSON.stringify(rules);
    r = { ref: refOfJson(json), json };
    refs.set(rules, r);
  }
  return r;
}

/** The reference of a rules document's JSON as stored (see {@link rulesRef}). */
export function refOfJson(json: string): string {
  return createHash('sha256').update(json).digest().subarray(0, 16).toString('base64url');
}

/** A rules item's key in the leases table. */
export const rulesItemKey = (ref: string) => `rules#${ref}`;

/**
 * The named error of a checkpoint whose rules document is not in the table (deleted by
 * hand, or a partial restore): never read as a video without rules, which would stop its
 * counting and restart its rule state silently.
 */
export function missingRulesError(videoId: string, ref: string): Error {
  return new Error(
    `checkpoint of video ${videoId} runs the rules document ${ref}, and the leases table has no item ${rulesItemKey(ref)}: restore that item from the table's point-in-time backup (rules items are never deleted by the product), or delete the item video#${videoId} (its tracks and counts then restart)`,
  );
}

/**
 * Rules documents this process knows to be stored, by reference: read from the table, or
 * written by a transaction that landed. Content-addressed, so an entry never goes stale;
 * bounded, since a forgotten one only costs one more (idempotent) write or read.
 */
export class KnownRules {
  private readonly docs = new Map<string, RulesDocument>();
  private readonly max: number;
  constructor(max = 1024) {
    this.max = max;
  }
  get(ref: string): RulesDocument | undefined {
    return this.docs.get(ref);
  }
  has(ref: string): boolean {
    return this.docs.has(ref);
  }
  add(ref: string, rules: RulesDocument): void {
    this.docs.delete(ref);
    this.docs.set(ref, rules);
    if (this.docs.size > this.max) this.docs.delete(this.docs.keys().next().value!);
  }
}
