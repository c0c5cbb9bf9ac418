/** AWS_LATENCY_MODEL on the SDK clients and around in-process stand-ins (lab/aws/latency-injection.ts, added to the product's hook by lab/aws/instrumentation.ts). */
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { describe, expect, it } from 'vitest';
import { createAwsClientsFrom } from '../../../core/aws/clients.ts';
import { instrumentAwsClients } from '../../../core/aws/instrumentation.ts';
import { withLatency } from '../../../lab/aws/latency-injection.ts';
import { LatencyModel, parseLatencyModel } from '../../../lab/aws/latency-model.ts';
import { installLabInstrumentation } from '../../../lab/aws/instrumentation.ts';

installLabInstrumentation();

function clients() {
  const common = { region: 'us-east-1', endpoint: 'http://127.0.0.1:9', credentials: { accessKeyId: 'x', secretAccessKey: 'x' } };
  return createAwsClientsFrom({ s3: { ...common, forcePathStyle: true }, sqs: common, dynamodb: common });
}

describe('AWS_LATENCY_MODEL', () => {
  it('adds the latency middleware to the three clients when set, and nothing when absent', () => {
    const plain = instrumentAwsClients(clients(), {}, 'worker');
    const delayed = instrumentAwsClients(clients(), { AWS_LATENCY_MODEL: '{"seed":3}' }, 'worker');
    for (const c of [plain.dynamodb, plain.s3, plain.sqs]) expect(c.middlewareStack.identify().some((m) => m.startsWith('latencyModel'))).toBe(false);
    for (const c of [delayed.dynamodb, delayed.s3, delayed.sqs]) expect(c.middlewareStack.identify().some((m) => m.startsWith('latencyModel'))).toBe(true);
    plain.destroy();
    delayed.destroy();
  });

  it('refuses a malformed model, so a bench never runs without its latencies', () => {
    expect(() => instrumentAwsClients(clients(), { AWS_LATENCY_MODEL: '{"scale":"fast"}' }, 'worker')).toThrow(/scale/);
  });

  it('withLatency draws for the command it wraps and passes the call through', async () => {
    const sent: unknown[] = [];
    const stand = { send: async (command: unknown) => (sent.push(command), { Messages: [] }), other: () => 'kept' };
    const asked: string[] = [];
    const model = new LatencyModel(parseLatencyModel('{"scale":0}'));
    const spy = Object.assign(Object.create(model) as LatencyModel, { delayMs: (service: string, op: string) => (asked.push(`${service} ${op}`), 0) });
    const wrapped = withLatency(stand, 'sqs', spy);
    const command = new ReceiveMessageCommand({ QueueUrl: 'q' });
    expect(await wrapped.send(command as never)).toEqual({ Messages: [] });
    expect(sent).toEqual([command]);
    expect(asked).toEqual(['sqs ReceiveMessageCommand']);
    expect(wrapped.other()).toBe('kept');
  });
});
