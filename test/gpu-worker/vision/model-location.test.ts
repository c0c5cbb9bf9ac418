/** A worker whose model is still under the frame bucket's old `models/` says where it belongs (decision 78). */
import { describe, expect, it } from 'vitest';
import { legacyModelWarning } from '../../../gpu-worker/vision/model-location.ts';

describe('legacyModelWarning', () => {
  it.each([
    ['a model in the model bucket', 's3://fa-models/models/yolo.onnx', 'fa-frames', 'fa-models', undefined],
    ['a model in another bucket', 's3://team-models/yolo.onnx', 'fa-frames', 'fa-models', undefined],
    ['a bucket whose name starts with the frame bucket\'s', 's3://fa-frames2/models/yolo.onnx', 'fa-frames', 'fa-models', undefined],
    ['the demo model', '', 'fa-frames', 'fa-models', undefined],
    ['a local path', '/opt/models/yolo.onnx', 'fa-frames', 'fa-models', undefined],
    ['the local stack: one bucket, no model bucket', 's3://fa-frames/models/yolo.onnx', 'fa-frames', undefined, undefined],
    ['the frame bucket\'s models/ on a stack with a model bucket', 's3://fa-frames/models/yolo.onnx', 'fa-frames', 'fa-models', 's3://fa-models/models/yolo.onnx'],
  ])('%s', (_case, modelUri, frameBucket, modelBucket, moveTo) => {
    // Act
    const warning = legacyModelWarning(modelUri, frameBucket, modelBucket);

    // Assess
    expect(warning?.moveTo).toBe(moveTo);
    if (!warning) return;
    expect(warning.msg).toMatch(/^MODEL IN THE FRAME BUCKET: s3:\/\/fa-frames\/models\/yolo\.onnx .*no longer versioned.*next release/);
    expect(warning.fix).toBe('as the modelWriterRoleArn role: aws s3 cp s3://fa-frames/models/yolo.onnx s3://fa-models/models/yolo.onnx, then deploy with -c modelUri=s3://fa-models/models/yolo.onnx (same modelSha256) (docs/deploy.md §3, "A stack deployed before the model bucket")');
  });
});
