/** The task role reads the model, its sidecar and its class names file: each `s3://` object it loads, and nothing else. */
import { describe, expect, it } from 'vitest';
import { modelObjectArns } from '../../infra/model-grants.ts';

describe('modelObjectArns', () => {
  it.each([
    ['the demo model: nothing to grant', { modelUri: '', modelClassesUri: '' }, []],
    ['a model in S3: the model and its sidecar', { modelUri: 's3://b/m/yolo.onnx', modelClassesUri: '' }, ['arn:aws:s3:::b/m/yolo.onnx', 'arn:aws:s3:::b/m/yolo.onnx.json']],
    [
      'a model and a classes file in S3',
      { modelUri: 's3://b/m/yolo.onnx', modelClassesUri: 's3://c/names.txt' },
      ['arn:aws:s3:::b/m/yolo.onnx', 'arn:aws:s3:::b/m/yolo.onnx.json', 'arn:aws:s3:::c/names.txt'],
    ],
    ['a model baked into the image, names in S3', { modelUri: '/opt/models/yolo.onnx', modelClassesUri: 's3://c/names.txt' }, ['arn:aws:s3:::c/names.txt']],
  ])('%s', (_case, tunables, arns) => {
    expect(modelObjectArns(tunables, 'aws')).toEqual(arns);
  });
});
