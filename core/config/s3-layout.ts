/** The S3 layout. */
export const FRAME_PREFIX = 'frames/';
/** Name of the end-of-stream marker object inside a video's folder. */
export const END_MARKER_NAME = '_end';
/**
 * Rules documents (issue 22): `rules/{videoId}.json` for one video, `rules/_default.json`
 * for every video without its own. Outside `frames/`, so bucket notifications (prefix
 * `frames/`) never send them to the router.
 */
export const RULES_PREFIX = 'rules/';
/** Name of the default rules document inside {@link RULES_PREFIX}. */
export const DEFAULT_RULES_NAME = '_default';
