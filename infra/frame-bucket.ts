import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3n from 'aws-cdk-lib/aws-s3-notifications';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { FRAME_PREFIX } from '../core/config.ts';

/** Prefix under which operators may put ONNX models the worker loads (`modelUri`). */
export const MODEL_PREFIX = 'models/';

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
   * What happens to the buckets when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** The upload bucket: TLS-only, S3-managed encryption, no public access, access-logged, frames expire. */
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
        { id: 'expire-frames', prefix: FRAME_PREFIX, expiration: props.frameRetention ?? Duration.days(30) },
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
      ],
    });
    this.bucket.addEventNotification(
      s3.EventType.OBJECT_CREATED,
      new s3n.SqsDestination(props.ingestQueue),
      { prefix: FRAME_PREFIX },
    );
  }

  /**
   * Read access to uploaded frames and end markers (`frames/*`). `s3:ListBucket` is
   * included so that a missing object (an end marker not yet written) answers 404
   * NoSuchKey instead of 403; it reveals key names of this bucket only.
   */
  grantReadFrames(grantee: iam.IGrantable): iam.Grant {
    return this.#grantGet(grantee, FRAME_PREFIX);
  }

  /** Read access to models stored in this bucket (`models/*`). */
  grantReadModels(grantee: iam.IGrantable): iam.Grant {
    return this.#grantGet(grantee, MODEL_PREFIX);
  }

  // Bucket.grantRead would add s3:GetObject*, s3:GetBucket* and s3:List*: wildcard actions the project rules out.
  #grantGet(grantee: iam.IGrantable, prefix: string): iam.Grant {
    iam.Grant.addToPrincipal({ grantee, actions: ['s3:ListBucket'], resourceArns: [this.bucket.bucketArn] });
    return iam.Grant.addToPrincipal({ grantee, actions: ['s3:GetObject'], resourceArns: [this.bucket.arnForObjects(`${prefix}*`)] });
  }
}
