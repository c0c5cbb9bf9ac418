/** `affinity counts` on a video with no rule events says why: no rules document, an invalid one, or rules nothing crossed yet. */
import { describe, expect, it } from 'vitest';
import { noCountsMessage, rulesStatus } from '../../cli/commands/counts.ts';
import { MemoryS3 } from '../../core/ingest/memory/memory-s3.ts';
import type { Target } from '../../cli/target.ts';

const BUCKET = 'frames-bucket';

function targetWith(objects: Record<string, string>): Pick<Target, 'clients' | 'bucket'> {
  const s3 = new MemoryS3().createBucket(BUCKET);
  for (const [key, body] of Object.entries(objects)) s3.putObject(BUCKET, key, body);
  return { bucket: BUCKET, clients: { s3: s3.asClient() } as Target['clients'] };
}

const RULES = JSON.stringify({ lines: [{ id: 'door', a: [0, 100], b: [320, 100] }], zones: [] });

describe('rulesStatus', () => {
  it.each([
    ['no document at all', {}, { kind: 'none' }],
    ['the video\'s own document', { 'rules/v1.json': RULES }, { kind: 'valid', lines: 1, zones: 0 }],
    ['the shared default', { 'rules/_default.json': RULES }, { kind: 'valid', lines: 1, zones: 0 }],
    ['an invalid document', { 'rules/v1.json': '{"lines": [{"id": "door"}]}' }, { kind: 'invalid' }],
  ])('%s', async (_case, objects, status) => {
    expect(await rulesStatus(targetWith(objects), 'v1')).toMatchObject(status);
  });
});

describe('noCountsMessage', () => {
  it('without rules: says that counts need a rules document, where to put it, with an example, and how to count frames already processed', () => {
    const m = noCountsMessage('v1', BUCKET, { kind: 'none' });
    expect(m).toMatch(/^no rule events for video "v1": counts come from rules, and the bucket has none for it/);
    expect(m).toContain(`s3://${BUCKET}/rules/v1.json`);
    expect(m).toContain(`s3://${BUCKET}/rules/_default.json`);
    expect(m).toContain('"lines": [{"id": "door"');
    expect(m).toContain('affinity replay v1 --from 0');
  });

  it('with an invalid document: says so, with why', () => {
    expect(noCountsMessage('v1', BUCKET, { kind: 'invalid', why: 'lines[0].a: must be [x, y]' })).toMatch(/its rules document is invalid.*lines\[0\]\.a: must be \[x, y\].*affinity replay v1 --from 0/);
  });

  it('with valid rules: says nothing crossed them yet, and how to count frames processed before them', () => {
    expect(noCountsMessage('v1', BUCKET, { kind: 'valid', lines: 1, zones: 2 })).toMatch(/its rules \(1 line\(s\), 2 zone\(s\)\) have not been crossed or entered by any track yet.*affinity replay v1 --from 0/);
  });
});
