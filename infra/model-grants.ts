/**
 * The S3 objects a worker reads to load its model, for the task role's grant: the model
 * named by `modelUri`, its sidecar `<modelUri>.json` (input size and class names, read
 * when present: without the grant, a model outside the frame bucket got AccessDenied on
 * the sidecar's GET, which is no "absent", and the worker stopped at start), and the class
 * names file `modelClassesUri`. Only `s3://` URIs need a grant; `models/*` of the
 * stack's model bucket is readable anyway (and, for one release, the frame bucket's old
 * `models/`, decision 78). Pure.
 */
import type { Tunables } from '../core/config.ts';

const S3_URI = /^s3:\/\/([^/]+)\/(.+)$/;

export function modelObjectArns(t: Pick<Tunables, 'modelUri' | 'modelClassesUri'>, partition: string): string[] {
  const arn = (uri: string) => {
    const m = S3_URI.exec(uri);
    return m ? `arn:${partition}:s3:::${m[1]}/${m[2]}` : undefined;
  };
  const uris = t.modelUri ? [t.modelUri, `${t.modelUri}.json`] : [];
  if (t.modelClassesUri) uris.push(t.modelClassesUri);
  return uris.map(arn).filter((a): a is string => a !== undefined);
}
