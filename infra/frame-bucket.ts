import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { FRAME_PREFIX, RULES_PREFIX } from '../core/config.ts';

/** Prefix under which operators may put ONNX models the worker loads (`modelUri`). */
export const MODEL_PREFIX = 'models/';

/** What the `models/` deny covers: every call that creates, replaces or removes a model object or version. */
export const MODEL_WRITE_ACTIONS = ['s3:PutObject', 's3:DeleteObject', 's3:DeleteObjectVersion', 's3:RestoreObject', 's3:PutObjectRetention', 's3:PutObjectLegalHold'];

export interface FrameBucketProps {
  /** Queue that receives an event for every object created under `frames/`. */
  readonly ingestQueue: sqs.IQueue;
  /**
   * Frames (and end markers) under `frames/` are deleted this long after upload.
   * Results live in DynamoDB, so old frames are only needed for replays.
   * @default Duration.days(30)
   */
  readonly frameRetention?: Duration;
  /**
   * Server access logs are kept this long.
   * @default Duration.days(90)
   */
  readonly accessLogRetention?: Duration;
  /**
   * Superseded versions of objects under `models/` are kept this long, so that an
   * overwritten model can be restored (copy the old version back over the key).
   * @default Duration.days(90)
   */
  readonly modelVersionRetention?: Duration;
  /**
   * What happens to the buckets when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/**
 * The notification target: the ingest queue's policy lets S3 send only for this bucket
 * (`aws:SourceArn`) in this account (`aws:SourceAccount`). aws-cdk-lib's SqsDestination
 * checks the bucket ARN alone; bucket names are global, so a bucket of the same name in
 * another account (after this one is deleted) could otherwise feed the queue.
 */
class IngestQueueDestination implements s3.IBucketNotificationDestination {
  readonly #queue: sqs.IQueue;

  constructor(queue: sqs.IQueue) {
    this.#queue = queue;
  }

  bind(_scope: Construct, bucket: s3.IBucket): s3.BucketNotificationDestinationConfig {
    this.#queue.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: 'S3NotificationsFromFrameBucket',
        principals: [new iam.ServicePrincipal('s3.amazonaws.com')],
        actions: ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'],
        resources: [this.#queue.queueArn],
        conditions: {
          ArnLike: { 'aws:SourceArn': bucket.bucketArn },
          StringEquals: { 'aws:SourceAccount': Stack.of(bucket).account },
        },
      }),
    );
    return { arn: this.#queue.queueArn, type: s3.BucketNotificationDestinationType.QUEUE, dependencies: [this.#queue] };
  }
}

/**
 * The upload bucket: TLS-only, S3-managed encryption, no public access, access-logged,
 * frames expire. Versioned, so that an overwritten or deleted model under `models/` can
 * be restored; superseded frame versions are removed a day after they stop being current.
 */
export class FrameBucket extends Construct {
  readonly bucket: s3.Bucket;
  readonly accessLogBucket: s3.Bucket;

  constructor(scope: Construct, id: string, props: FrameBucketProps) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    this.accessLogBucket = new s3.Bucket(this, 'AccessLogs', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy,
      lifecycleRules: [{ id: 'expire-access-logs', expiration: props.accessLogRetention ?? Duration.days(90) }],
    });

    this.bucket = new s3.Bucket(this, 'Bucket', {
      encryption: s3.BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      serverAccessLogsBucket: this.accessLogBucket,
      serverAccessLogsPrefix: 'frame-bucket/',
      removalPolicy,
      versioned: true,
      lifecycleRules: [
        // On a versioned bucket, expiry adds a delete marker and keeps the frame as a
        // noncurrent version: remove that a day later, then the lone delete marker.
        {
          id: 'expire-frames',
          prefix: FRAME_PREFIX,
          expiration: props.frameRetention ?? Duration.days(30),
          noncurrentVersionExpiration: Duration.days(1),
        },
        { id: 'expire-frame-delete-markers', prefix: FRAME_PREFIX, expiredObjectDeleteMarker: true },
        { id: 'expire-old-models', prefix: MODEL_PREFIX, noncurrentVersionExpiration: props.modelVersionRetention ?? Duration.days(90) },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });
    this.bucket.addEventNotification(s3.EventType.OBJECT_CREATED, new IngestQueueDestination(props.ingestQueue), { prefix: FRAME_PREFIX });
  }

  /**
   * Denies every write and delete under `models/` to every principal except
   * `writerRoleArn` (a bucket-policy Deny beats any identity-policy Allow in the account),
   * so that only the named deploy role can replace the model every GPU task loads. With
   * no writer the prefix is read-only: the default model is baked into the image, and a
   * model elsewhere (`modelUri`) is unaffected.
   */
  restrictModelWrites(writerRoleArn?: string): void {
    this.bucket.addToResourcePolicy(
      new iam.PolicyStatement({
        sid: writerRoleArn ? 'ModelsWritableOnlyByDeployRole' : 'ModelsReadOnly',
        effect: iam.Effect.DENY,
        principals: [new iam.AnyPrincipal()],
        actions: MODEL_WRITE_ACTIONS,
        resources: [this.bucket.arnForObjects(`${MODEL_PREFIX}*`)],
        ...(writerRoleArn ? { conditions: { ArnNotEquals: { 'aws:PrincipalArn': writerRoleArn } } } : {}),
      }),
    );
  }

  /**
   * Read access to uploaded frames and end markers (`frames/*`). `s3:ListBucket` is
   * included so that the worker can list a video's frames and a missing object can
   * answer 404 NoSuchKey instead of 403; it is limited to listings under `frames/`
   * (`s3:prefix`).
   */
  grantReadFrames(grantee: iam.IGrantable): iam.Grant {
    return this.#grantGet(grantee, FRAME_PREFIX);
  }

  /**
   * Read access to rules documents (`rules/*`, issue 22): the worker re-reads a video's
   * document with conditional GETs; a missing one must answer 404 (not 403) so that the
   * default applies, hence the listing grant limited to `rules/`.
   */
  grantReadRules(grantee: iam.IGrantable): iam.Grant {
    return this.#grantGet(grantee, RULES_PREFIX);
  }

  /** Read access to models stored in this bucket (`models/*`), listings limited to `models/`. */
  grantReadModels(grantee: iam.IGrantable): iam.Grant {
    return this.#grantGet(grantee, MODEL_PREFIX);
  }

  // Bucket.grantRead would add s3:GetObject*, s3:GetBucket* and s3:List*: wildcard actions the project rules out.
  #grantGet(grantee: iam.IGrantable, prefix: string): iam.Grant {
    grantee.grantPrincipal.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [this.bucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': `${prefix}*` } },
      }),
    );
    return iam.Grant.addToPrincipal({ grantee, actions: ['s3:GetObject'], resourceArns: [this.bucket.arnForObjects(`${prefix}*`)] });
  }
}
