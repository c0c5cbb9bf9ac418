/**
 * Sites: the cameras of one customer site come in through one edge box, and that box's AWS
 * credentials may write only its own cameras (issue 45). A video id carries its site as a
 * prefix, `{site}.{camera}`: the site is everything before the first `.`. One IAM policy then
 * serves every site (infra/uploader-access.ts): it grants `frames/${aws:PrincipalTag/<tag>}.*`,
 * the tag being the box's site, and no site can write another's.
 *
 * Why `.`: video ids allow only `A-Z a-z 0-9 . _ -` and no `/` (core/ingest/keys.ts), so the
 * separator has to be one of those; site names often hold dashes (`store-042`), rarely dots.
 * A site name may not hold the separator: site `a` would otherwise own site `a.b`'s cameras
 * (`frames/a.*` covers `frames/a.b.door-1/`). The policy denies a tag with a dot as well.
 */
import { VIDEO_ID_PATTERN } from './keys.ts';

/** Between a video id's site and its camera. */
export const SITE_SEPARATOR = '.';

/** A site name: what the principal tag holds and what a video id starts with. */
export const SITE_PATTERN = /^[A-Za-z0-9_-]{1,63}$/;

/** Why `site` cannot be a site name, or undefined when it can. Pure. */
export function siteProblem(site: string): string | undefined {
  if (SITE_PATTERN.test(site)) return undefined;
  return `site "${site}" must be 1-63 of A-Z a-z 0-9 _ - (no "${SITE_SEPARATOR}": it separates the site from the camera in a video id)`;
}

/** The site a video id belongs to: its part before the first `.`, or undefined when it has none. Pure. */
export function siteOfVideoId(videoId: string): string | undefined {
  const at = videoId.indexOf(SITE_SEPARATOR);
  return at > 0 ? videoId.slice(0, at) : undefined;
}

/** The video id of `camera` at `site`. Pure. */
export function siteVideoId(site: string, camera: string): string {
  return `${site}${SITE_SEPARATOR}${camera}`;
}

/**
 * Why an uploader configured for `site` must not send `videoId`, or undefined when it may:
 * its credentials could not write the key (the policy grants `frames/{site}.*` only), so the
 * CLI says so before it cuts or sends anything. Pure.
 */
export function videoIdSiteProblem(videoId: string, site: string): string | undefined {
  const bad = siteProblem(site);
  if (bad) return bad;
  const prefix = `${site}${SITE_SEPARATOR}`;
  if (videoId.startsWith(prefix) && videoId.length > prefix.length && VIDEO_ID_PATTERN.test(videoId)) return undefined;
  // A plain camera name suggests itself under the site; anything else gets a sample name.
  const example = siteVideoId(site, !videoId.includes(SITE_SEPARATOR) && VIDEO_ID_PATTERN.test(siteVideoId(site, videoId)) ? videoId : 'door-1');
  return (
    `video id "${videoId}" is not a camera of site "${site}": this uploader's credentials may write only video ids ` +
    `that start with "${prefix}" (for example "${example}"); rename the video, or run with the site it belongs to`
  );
}
