/**
 * Where a deployed model should live (decision 78): in the stack's versioned model bucket,
 * not under the frame bucket's `models/`, which a stack deployed before kept its models in.
 * The task may still read those for one release; a worker whose `modelUri` names one says
 * so at start, with the copy and the deploy that move it, so the operator learns it from
 * the log before the next release takes the read away. Pure.
 */

/** Worker environment variable holding the model bucket's name; absent where there is none (the local stack has one bucket). */
export const MODEL_BUCKET_ENV = 'MODEL_BUCKET';

export interface LegacyModelWarning {
  readonly msg: string;
  readonly modelUri: string;
  /** Where the model belongs: the same key in the model bucket. */
  readonly moveTo: string;
  readonly fix: string;
}

/** The warning for `s3://<frameBucket>/models/...` while a model bucket exists; undefined for any other model. */
export function legacyModelWarning(modelUri: string, frameBucket: string, modelBucket: string | undefined): LegacyModelWarning | undefined {
  if (!modelBucket || !frameBucket) return undefined;
  const prefix = `s3://${frameBucket}/`;
  if (!modelUri.startsWith(prefix)) return undefined;
  const key = modelUri.slice(prefix.length);
  const moveTo = `s3://${modelBucket}/${key}`;
  return {
    msg: `MODEL IN THE FRAME BUCKET: ${modelUri} is read from the frame bucket, which is no longer versioned (an overwritten model there cannot be restored) and which the next release stops reading models from`,
    modelUri,
    moveTo,
    fix: `as the modelWriterRoleArn role: aws s3 cp ${modelUri} ${moveTo}, then deploy with -c modelUri=${moveTo} (same modelSha256) (docs/deploy.md §3, "A stack deployed before the model bucket")`,
  };
}
