import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';

/**
 * Prefix under which operators put the ONNX models the worker loads (`modelUri`), in the
 * model bucket. The same key the frame bucket used before decision 78, so that moving a
 * model is a copy to the same key in the other bucket.
 */
export const MODEL_PREFIX = 'models/';

/** What the model deny covers: every call that creates, replaces or removes a model object or version. */
export const MODEL_WRITE_ACTIONS = ['s3:PutObject', 's3:DeleteObject', 's3:DeleteObjectVersion', 's3:RestoreObject', 's3:PutObjectRetention', 's3:PutObjectLegalHold'];

/** Output that names the model bucket (README *Your own model*, docs/deploy.md §3). */
export const MODEL_OUTPUT_KEYS = { bucketName: 'ModelBucketName' } as const;

/** Bucket-policy statement ids of the model deny, by whether a writer role is named. */
export const MODEL_DENY_SIDS = { writer: 'ModelsWritableOnlyByDeployRole', none: 'ModelsReadOnly' } as const;

export interface ModelBucketProps {
  /** Where its server access logs go (the frame bucket's log bucket), under `model-bucket/`. */
  readonly accessLogBucket: s3.IBucket;
  /**
   * Superseded and deleted model versions are kept this long, so that an overwritten or
   * deleted model can be restored (copy the old version back over the key).
   * @default Duration.days(90)
   */
  readonly modelVersionRetention?: Duration;
  /**
   * What happens to the bucket when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The model bucket (decision 78): TLS-only, S3-managed encryption, no public access,
 * access-logged, and versioned, so that a model that is overwritten or deleted can be
 * restored. It holds models only, so versioning costs only the old models kept
 * `modelVersionRetention`; the frame bucket, where every object expires, is not versioned.
 */
export class ModelBucket extends Construct {
  readonly bucket: s3.Bucket;

  constructor(scope: Construct, id: string, props: ModelBucketProps) {
    super(scope, id);
    this.bucket = new s3.Bucket(this, 'Bucket', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: props.accessLogBucket,
      serverAccessLogsPrefix: 'model-bucket/',
      removalPolicy: props.removalPolicy ?? RemovalPolicy.RETAIN,
      versioned: true,
      lifecycleRules: [
        // The whole bucket: it holds nothing but models. A delete marker left alone once its
        // old versions are gone restores nothing, so it goes too.
        { id: 'expire-old-models', noncurrentVersionExpiration: props.modelVersionRetention ?? Duration.days(90), expiredObjectDeleteMarker: true },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });
  }

  /**
   * Denies every write and delete of any object in the bucket to every principal except
   * `writerRoleArn` (a bucket-policy Deny beats any identity-policy Allow in the account),
   * so that only the named deploy role can replace the model every GPU task loads. With no
   * writer the bucket is read-only: the default model is baked into the image, and a model
   * elsewhere (`modelUri`) is unaffected. The whole bucket, not only `models/`: nothing else
   * belongs there.
   */
  restrictModelWrites(writerRoleArn?: string): void {
    this.bucket.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: writerRoleArn ? MODEL_DENY_SIDS.writer : MODEL_DENY_SIDS.none,
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: MODEL_WRITE_ACTIONS,
        resources: [this.bucket.arnForObjects('*')],
        ...(writerRoleArn ? { conditions: { ArnNotEquals: { 'aws:PrincipalArn': writerRoleArn } } } : {}),
      }),
    );
  }

  /** Read access to `models/*`; `s3:ListBucket` limited to `models/`, so that a missing sidecar answers 404, not 403. */
  grantReadModels(grantee: iam.IGrantable): iam.Grant {
    return grantGetUnder(this.bucket, grantee, MODEL_PREFIX);
  }
}

/**
 * `s3:GetObject` on `<prefix>*` and `s3:ListBucket` limited to that prefix (`s3:prefix`), so
 * that a missing object answers 404 NoSuchKey instead of 403. Bucket.grantRead would add
 * s3:GetObject*, s3:GetBucket* and s3:List*: wildcard actions the project rules out.
 */
export function grantGetUnder(bucket: s3.IBucket, grantee: iam.IGrantable, prefix: string): iam.Grant {
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['s3:ListBucket'],
      resources: [bucket.bucketArn],
      conditions: { StringLike: { 's3:prefix': `${prefix}*` } },
    }),
  );
  return iam.Grant.addToPrincipal({ grantee, actions: ['s3:GetObject'], resourceArns: [bucket.arnForObjects(`${prefix}*`)] });
}
