import { Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { FRAME_PREFIX, RULES_PREFIX } from '../core/config.ts';
import { MODEL_PREFIX, MODEL_WRITE_ACTIONS, grantGetUnder } from './model-bucket.ts';

/**
 * The frame bucket's `models/` before decision 78 (models now live in the model bucket):
 * what no one may do there any more (a new model would land unversioned), and what only
 * the model writer may still do (remove the old copies once moved).
 */
export const LEGACY_MODEL_ACTIONS = {
  none: MODEL_WRITE_ACTIONS.filter((a) => a !== 's3:DeleteObject' && a !== 's3:DeleteObjectVersion'),
  writerOnly: ['s3:DeleteObject', 's3:DeleteObjectVersion'],
} as const;

/** Bucket-policy statement ids of the frame bucket's `models/` denies. */
export const LEGACY_MODEL_DENY_SIDS = { noNewModels: 'NoNewModelsInFrameBucket', deleteByWriter: 'OldModelsRemovableOnlyByDeployRole', keep: 'OldModelsKept' } as const;

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
   * Versions of the old `models/` objects made while the bucket was versioned (before
   * decision 78) are kept this long after they stop being current, as they were.
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
 * frames expire. Not versioned (decision 78): versioning kept every expired frame about two
 * days more as a noncurrent version, and the models it protected are in the model bucket
 * now (infra/model-bucket.ts).
 *
 * A stack deployed before decision 78 has this bucket versioned, and S3 cannot turn
 * versioning off, only suspend it: the template says `Suspended` explicitly (leaving the
 * property out would leave an existing bucket versioned). A suspended bucket stores no
 * versions: an overwrite replaces the object, and an expiry removes it, leaving only a
 * delete marker (no data). The noncurrent-version rules drain the versions made while it
 * was versioned (frames and rules documents a day after they stop being current, old
 * models after `modelVersionRetention`); the delete-marker rules stay for good, since
 * every expiry leaves a marker.
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
      lifecycleRules: [
        // A frame stored while the bucket was versioned becomes a noncurrent version when it
        // expires: remove that a day later. Suspended, an expiry deletes the object and
        // leaves a delete marker with nothing behind it: the second rule removes those.
        {
          id: 'expire-frames',
          prefix: FRAME_PREFIX,
          expiration: props.frameRetention ?? Duration.days(30),
          noncurrentVersionExpiration: Duration.days(1),
        },
        { id: 'expire-frame-delete-markers', prefix: FRAME_PREFIX, expiredObjectDeleteMarker: true },
        { id: 'expire-old-rules-versions', prefix: RULES_PREFIX, noncurrentVersionExpiration: Duration.days(1), expiredObjectDeleteMarker: true },
        { id: 'expire-old-models', prefix: MODEL_PREFIX, noncurrentVersionExpiration: props.modelVersionRetention ?? Duration.days(90), expiredObjectDeleteMarker: true },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });
    // Explicit, so that an update suspends the versioning an older deploy enabled.
    (this.bucket.node.defaultChild as s3.CfnBucket).versioningConfiguration = { status: 'Suspended' };
    this.bucket.addEventNotification(s3.EventType.OBJECT_CREATED, new IngestQueueDestination(props.ingestQueue), { prefix: FRAME_PREFIX });
  }

  /**
   * The models an older deploy stored under this bucket's `models/` (decision 78): no one
   * may put, restore or lock a model here any more (it would land unversioned; models go
   * to the model bucket), and only `writerRoleArn` may delete the old copies once they are
   * moved (a bucket-policy Deny beats any identity-policy Allow in the account), so no one
   * else can pull the model from under a fleet still loading it from here. With no writer
   * nothing here can be deleted (and nothing could have been written).
   */
  retireModels(writerRoleArn?: string): void {
    const deny = (sid: string, actions: readonly string[], conditions?: Record<string, unknown>) =>
      this.bucket.addToResourcePolicy(
        new iam.PolicyStatement({
          sid,
          effect: iam.Effect.DENY,
          principals: [new iam.AnyPrincipal()],
          actions: [...actions],
          resources: [this.bucket.arnForObjects(`${MODEL_PREFIX}*`)],
          ...(conditions ? { conditions } : {}),
        }),
      );
    if (!writerRoleArn) {
      deny(LEGACY_MODEL_DENY_SIDS.keep, MODEL_WRITE_ACTIONS);
      return;
    }
    deny(LEGACY_MODEL_DENY_SIDS.noNewModels, LEGACY_MODEL_ACTIONS.none);
    deny(LEGACY_MODEL_DENY_SIDS.deleteByWriter, LEGACY_MODEL_ACTIONS.writerOnly, { ArnNotEquals: { 'aws:PrincipalArn': writerRoleArn } });
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

  /**
   * Read access to the models an older deploy stored under this bucket's `models/`, so that
   * a fleet whose `modelUri` still names one keeps starting for this release (decision 78;
   * the next release drops this grant). Listings limited to `models/`.
   */
  grantReadLegacyModels(grantee: iam.IGrantable): iam.Grant {
    return this.#grantGet(grantee, MODEL_PREFIX);
  }

  #grantGet(grantee: iam.IGrantable, prefix: string): iam.Grant {
    return grantGetUnder(this.bucket, grantee, prefix);
  }
}
