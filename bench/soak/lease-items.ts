/**
 * The largest video lease item (`video#<id>` in the leases table) seen while the soak
 * runs, by DynamoDB's documented item size rules, and its checkpoint as JSON (inflated
 * when stored compressed, issue 44).
 */
import { GetItemCommand, type AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { videoKey } from '../../core/leases/dynamodb/slot-lease-store.ts';
import type { LocalStack } from '../../local/stack.ts';
import { sleep } from '../harness/main.ts';
import { readStoredCheckpoint } from '../../core/commit/checkpoint.ts';

/** Significant digits of a DynamoDB number (leading and trailing zeros trimmed). */
function numberBytes(n: string): number {
  const mantissa = n.replace(/^[-+]/, '').split(/[eE]/)[0]!.replace('.', '');
  const digits = mantissa.replace(/^0+/, '').replace(/0+$/, '');
  return Math.ceil(Math.max(1, digits.length) / 2) + 1;
}

/**
 * Size of an attribute value by DynamoDB's documented rules (CapacityUnitCalculations):
 * strings UTF-8, numbers 1 byte per two significant digits + 1, binary raw length,
 * bool/null 1, list/map 3 bytes + 1 per element + the elements (map keys included).
 */
function attributeValueBytes(v: AttributeValue): number {
  if (v.S !== undefined) return Buffer.byteLength(v.S);
  if (v.N !== undefined) return numberBytes(v.N);
  if (v.B !== undefined) return v.B.length;
  if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
  if (v.SS !== undefined) return v.SS.reduce((n, s) => n + Buffer.byteLength(s), 0);
  if (v.NS !== undefined) return v.NS.reduce((n, s) => n + numberBytes(s), 0);
  if (v.BS !== undefined) return v.BS.reduce((n, b) => n + b.length, 0);
  if (v.L !== undefined) return 3 + v.L.reduce((n, e) => n + 1 + attributeValueBytes(e), 0);
  if (v.M !== undefined) return 3 + Object.entries(v.M).reduce((n, [k, e]) => n + Buffer.byteLength(k) + 1 + attributeValueBytes(e), 0);
  return 0;
}

function itemBytes(item: Record<string, AttributeValue>): number {
  return Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + attributeValueBytes(v), 0);
}

/** The largest item and checkpoint seen. */
export interface LargestLeaseItem {
  itemBytes: number;
  checkpointJsonBytes: number;
  itemVideo: string;
  checkpointVideo: string;
  /** Seconds after the upload clock started. */
  atS: number;
  samples: number;
}

/** Reads every video's lease item every `pollMs` until `stop()`; the returned object fills in as it goes. */
export function pollLeaseItems(stack: LocalStack, videoIds: readonly string[], pollMs: number, clockMs: number, stopped: () => boolean): { biggest: LargestLeaseItem; stop: () => Promise<void> } {
  const biggest: LargestLeaseItem = { itemBytes: 0, checkpointJsonBytes: 0, itemVideo: '', checkpointVideo: '', atS: 0, samples: 0 };
  let polling = true;
  const poller = (async () => {
    while (polling && !stopped()) {
      for (const id of videoIds) {
        try {
          const r = await stack.clients.dynamodb.send(new GetItemCommand({ TableName: stack.wiring.leasesTable, Key: { pk: { S: videoKey(id) } }, ConsistentRead: true }));
          if (!r.Item) continue;
          biggest.samples++;
          const size = itemBytes(r.Item);
          if (size > biggest.itemBytes) Object.assign(biggest, { itemBytes: size, itemVideo: id, atS: (Date.now() - clockMs) / 1000 });
          // The checkpoint's JSON (a compressed one, issue 44, inflated: what it holds, not what it costs; itemBytes says that).
          const ck = r.Item.checkpoint ? Buffer.byteLength(JSON.stringify(readStoredCheckpoint(unmarshall({ c: r.Item.checkpoint }).c, id))) : 0;
          if (ck > biggest.checkpointJsonBytes) Object.assign(biggest, { checkpointJsonBytes: ck, checkpointVideo: id });
        } catch {
          // DynamoDB Local busy or stopping: the next sample will do.
        }
      }
      await sleep(pollMs);
    }
  })();
  return {
    biggest,
    stop: async () => {
      polling = false;
      await poller;
    },
  };
}
