/**
 * The uploader's site (issue 45): `--site S` or `AFFINITY_SITE=S` makes `upload` and `stream`
 * (and any command that uploads for a camera) refuse a video id that is not `S.<camera>`
 * before it cuts or sends anything, with the reason and what to do; without a site nothing
 * is checked. The rule is core/ingest/site.ts; the permission it mirrors is the stack's
 * uploader policy (infra/uploader-access.ts), which is what really stops a wrong write.
 */
import { videoIdSiteProblem } from '../core/ingest/site.ts';
import { CliError } from './io.ts';

export const SITE_ENV = 'AFFINITY_SITE';

export interface UploaderSite {
  readonly site: string;
  /** Where it was configured, for the message. */
  readonly from: '--site' | typeof SITE_ENV;
}

/** The configured site: the flag, else the environment; an empty value is no site. */
export function uploaderSite(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): UploaderSite | undefined {
  if (flag !== undefined && flag !== '') return { site: flag, from: '--site' };
  const fromEnv = env[SITE_ENV];
  return fromEnv !== undefined && fromEnv !== '' ? { site: fromEnv, from: SITE_ENV } : undefined;
}

/** Throws a usage error (exit 2) when a site is configured and `videoId` is not one of its cameras. */
export function checkSiteVideoId(videoId: string, site: UploaderSite | undefined): void {
  if (site === undefined) return;
  const problem = videoIdSiteProblem(videoId, site.site);
  if (problem) throw new CliError(`${problem} (site from ${site.from})`, 2);
}
