/**
 * Injected AWS latency for benches (`AWS_LATENCY_MODEL`, installed by the composition
 * roots through lab/aws/instrumentation.ts): every request attempt of the three clients
 * waits a draw of lab/aws/latency-model.ts before it is sent, so a bench on the emulators
 * sees AWS-like round trips. Never set in AWS; absent, nothing here is installed.
 *
 * In-process stand-ins that are not SDK clients (the SQS FIFO model of the benches) get
 * the same delays through {@link withLatency}.
 */
import type { DeserializeMiddleware, MetadataBearer } from '@smithy/types';
import { LatencyModel, parseLatencyModel } from './latency-model.ts';
import type { AwsClients, CallerRole } from '../../core/aws/clients.ts';
import type { AwsServiceName } from './fault-injection.ts';

const wait = (ms: number) => (ms > 0 ? new Promise<void>((r) => setTimeout(r, ms)) : Promise.resolve());

/** Middleware for the `deserialize` step (below retries, so every attempt waits): a draw of the model, then the call. */
export function latencyMiddleware(service: AwsServiceName, model: LatencyModel): DeserializeMiddleware<object, MetadataBearer> {
  return (next, context) => async (args) => {
    await wait(model.delayMs(service, context.commandName ?? ''));
    return next(args);
  };
}

/** Adds the latency middleware to the three clients; throws when `text` is malformed. Returns the model. */
export function installLatencyModel(clients: AwsClients, text: string, role: CallerRole, workerId = ''): LatencyModel {
  const model = new LatencyModel(parseLatencyModel(text), `${role}:${workerId}`);
  const options = { step: 'deserialize', name: 'latencyModel' } as const;
  clients.dynamodb.middlewareStack.add(latencyMiddleware('dynamodb', model), options);
  clients.s3.middlewareStack.add(latencyMiddleware('s3', model), options);
  clients.sqs.middlewareStack.add(latencyMiddleware('sqs', model), options);
  return model;
}

/**
 * A client-like object (`send(command, options)`) whose calls first wait a draw of the
 * model for `service` and the command's name: for in-process stand-ins of a service.
 */
export function withLatency<C extends { send: (command: never, options?: never) => Promise<unknown> }>(client: C, service: AwsServiceName, model: LatencyModel): C {
  const send = client.send.bind(client) as (command: unknown, options?: unknown) => Promise<unknown>;
  return new Proxy(client, {
    get(target, prop) {
      if (prop !== 'send') return Reflect.get(target, prop) as unknown;
      return async (command: { constructor: { name: string } }, options?: unknown) => {
        await wait(model.delayMs(service, command.constructor.name));
        return send(command, options);
      };
    },
  });
}
