/**
 * Faults for DynamoDB commits, as middleware on a real SDK client talking to DynamoDB Local
 * (the same mechanism as lab/aws/fault-injection.ts, but placed above the SDK's retries
 * and able to fail a call *after* it applied):
 * - `fail-before`: a 5xx before the request is sent (nothing applied, the caller sees an error);
 * - `apply-then-lose`: the request applies, then the answer is lost (a `TimeoutError`);
 * - `conflict`: a TransactWriteItems cancelled by a TransactionConflict on one item (nothing applied).
 *
 *   const faults = new DdbCommitFaults(rng(seed));
 *   faults.install(clients.dynamodb);   // then use clients.ddb as usual
 *   faults.enabled = false;             // a calm phase
 *
 * On the lease table's twin, which has no middleware stack, {@link DdbCommitFaults.wrap}
 * puts the same faults around its document client instead.
 */
import { TransactionCanceledException, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { InitializeMiddleware, MetadataBearer } from '@smithy/types';
import { injectedError } from '../../lab/aws/fault-injection.ts';

export type CommitFault = 'none' | 'fail-before' | 'apply-then-lose' | 'conflict';

/** Shares of calls that fail each way, in [0, 1]; the rest pass. */
export interface DdbFaultRates {
  /** TransactWriteItems. */
  readonly transact: { readonly failBefore: number; readonly applyThenLose: number; readonly conflict: number };
  /** GetItem (re-reads of a video or slot after an unknown outcome). */
  readonly get: { readonly failBefore: number };
}

export const DEFAULT_DDB_FAULT_RATES: DdbFaultRates = {
  transact: { failBefore: 0.12, applyThenLose: 0.25, conflict: 0.1 },
  get: { failBefore: 0.5 },
};

/** An error like the SDK's when the connection drops before the answer arrives. */
export function lostAnswerError(): Error {
  return Object.assign(new Error('socket hang up (injected: the request applied, its answer was lost)'), { name: 'TimeoutError', $metadata: {}, injected: true });
}

/** Chooses a call's fault from its operation and input; undefined = draw at random. */
export type CommitFaultPlan = (operation: string, input: Record<string, unknown>) => CommitFault | undefined;

export class DdbCommitFaults {
  /** Faults are drawn only while enabled. */
  enabled = true;
  /** Chooses faults for chosen calls (a targeted scenario); consulted before the random draw. */
  plan: CommitFaultPlan | undefined;
  /** How many calls got each fault, by `Operation:fault`. */
  readonly counts = new Map<string, number>();
  private readonly draw: () => number;
  private readonly rates: DdbFaultRates;

  constructor(draw: () => number, rates: DdbFaultRates = DEFAULT_DDB_FAULT_RATES) {
    this.draw = draw;
    this.rates = rates;
  }

  /** Calls that got `fault` for an operation ('TransactWriteItems' or 'GetItem'). */
  count(operation: string, fault: CommitFault): number {
    return this.counts.get(`${operation}:${fault}`) ?? 0;
  }

  /** Adds the middleware to `client` (the document client shares its stack). */
  install(client: DynamoDBClient): void {
    client.middlewareStack.add(this.middleware(), { step: 'initialize', name: 'commitFaults', priority: 'high' });
  }

  private decide(operation: string): CommitFault {
    if (!this.enabled) return 'none';
    const x = this.draw();
    if (operation === 'TransactWriteItems') {
      const t = this.rates.transact;
      if (x < t.failBefore) return 'fail-before';
      if (x < t.failBefore + t.applyThenLose) return 'apply-then-lose';
      if (x < t.failBefore + t.applyThenLose + t.conflict) return 'conflict';
      return 'none';
    }
    if (operation === 'GetItem') return x < this.rates.get.failBefore ? 'fail-before' : 'none';
    return 'none';
  }

  /**
   * The same faults around a document client that has no middleware stack (the lease
   * table's twin, core/leases/memory/): only the calls made through the returned client
   * get them, as only those of the client given to {@link install} do.
   */
  wrap(ddb: DynamoDBDocumentClient): DynamoDBDocumentClient {
    const faulty = {
      send: (command: { readonly input: object }) => this.apply(command.constructor.name, command.input, () => ddb.send(command as never)),
      destroy: () => ddb.destroy(),
    };
    return faulty as unknown as DynamoDBDocumentClient;
  }

  private middleware(): InitializeMiddleware<object, MetadataBearer> {
    return (next, context) => (args) => this.apply(String(context.commandName ?? ''), args.input as object, () => next(args));
  }

  /** Decides the fault of one call (by its command's name and input) and applies it around `call`. */
  private async apply<R>(commandName: string, input: object, call: () => Promise<R>): Promise<R> {
    // The document client's commands are named after it (TransactWriteCommand, GetCommand).
    const operation = /TransactWrite/.test(commandName) ? 'TransactWriteItems' : /^Get(Item)?Command$/.test(commandName) ? 'GetItem' : commandName;
    const fault = (this.enabled ? this.plan?.(operation, input as Record<string, unknown>) : undefined) ?? this.decide(operation);
    this.counts.set(`${operation}:${fault}`, (this.counts.get(`${operation}:${fault}`) ?? 0) + 1);
    if (fault === 'fail-before') throw injectedError('dynamodb', '5xx');
    if (fault === 'conflict') {
      const items = ((input as { TransactItems?: unknown[] }).TransactItems ?? []).length;
      const hit = Math.floor(this.draw() * items);
      throw new TransactionCanceledException({
        message: 'Transaction cancelled (injected conflict)',
        $metadata: {},
        CancellationReasons: Array.from({ length: items }, (_, i) => ({ Code: i === hit ? 'TransactionConflict' : 'None' })),
      });
    }
    const result = await call();
    if (fault === 'apply-then-lose') throw lostAnswerError();
    return result;
  }
}
