/**
 * The product's client instrumentation (core/aws/instrumentation.ts): the call log, and a
 * hook for what a composition root adds. Without the lab added (as in the Lambda bundles
 * and the GPU image), AWS_FAULT_INJECTION and AWS_LATENCY_MODEL change nothing; the lab's
 * own tests (test/lab/aws/) add it as the local stack and lab/worker-main.ts do.
 */
import { describe, expect, it } from 'vitest';
import { createAwsClientsFrom, type AwsClients } from '../../../core/aws/clients.ts';
import { addClientInstrumentation, instrumentAwsClients } from '../../../core/aws/instrumentation.ts';

function clients(): AwsClients {
  const common = { region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } };
  return createAwsClientsFrom({ s3: { ...common, forcePathStyle: true }, sqs: common, dynamodb: common });
}

const middleware = (c: AwsClients) => [c.dynamodb, c.s3, c.sqs].flatMap((client) => client.middlewareStack.identify().map((m) => m.split(' ')[0]!));

describe('instrumentAwsClients without the lab', () => {
  it('ignores the lab settings: no fault injection, no latency model, nothing thrown for a malformed one', () => {
    const env = { AWS_FAULT_INJECTION: '{"rate":1}', AWS_LATENCY_MODEL: 'not json' };
    const c = instrumentAwsClients(clients(), env, 'router');
    expect(middleware(c).filter((m) => m === 'faultInjection' || m === 'commitFaultInjection' || m === 'latencyModel')).toEqual([]);
    c.destroy();
  });

  it('installs the call log when asked', () => {
    const c = instrumentAwsClients(clients(), { AWS_CALL_LOG: '/dev/null' }, 'worker');
    expect(middleware(c).filter((m) => m === 'callLog')).toHaveLength(3);
    c.destroy();
  });

  it('applies what a composition root added, once however often added', () => {
    const seen: string[] = [];
    const added = (_c: AwsClients, env: Record<string, string | undefined>, role: string) => void seen.push(`${role}:${env.X ?? ''}`);
    addClientInstrumentation(added);
    addClientInstrumentation(added);
    instrumentAwsClients(clients(), { X: '1' }, 'janitor').destroy();
    expect(seen).toEqual(['janitor:1']);
  });
});
