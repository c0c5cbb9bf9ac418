/** The S3 layout. */
export const FRAME_PREFIX = 'frames/';
/** Name of the end-of-stream marker object inside a video's folder. */
export const END_MARKER_NAME = '_end';
