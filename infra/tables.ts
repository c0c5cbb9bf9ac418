import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import type { ResourceNames } from '../core/config.ts';
import { acknowledge } from './nag.ts';
import { EVENTS_TABLE, LEASES_TABLE, RESULTS_TABLE, type KeyAttribute, type TableShape } from '../core/resources.ts';

export interface StateTablesProps {
  /**
   * Not used for the table names any more: CloudFormation generates them (see
   * {@link StateTables}). Kept so existing callers compile.
   * @deprecated table names are generated
   */
  readonly names?: ResourceNames;
  /**
   * What happens to the tables when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
  /**
   * 0 or unset: on demand. N: provisioned, reads and writes of each table and index auto
   * scaled between 1 and N units at {@link PROVISIONED_TARGET_UTILIZATION_PERCENT} (issue 44).
   * @default 0
   */
  readonly provisionedCapacityUnits?: number;
  /**
   * Point-in-time recovery on every table ($0.20 per GB-month of table size). false gives
   * up restoring a table to any second of the last 35 days (issue 44, decision 79).
   * @default true
   */
  readonly pointInTimeRecovery?: boolean;
}

/** Auto scaling's target utilisation of provisioned tables and indexes. */
export const PROVISIONED_TARGET_UTILIZATION_PERCENT = 70;

function attribute(a: KeyAttribute): dynamodb.Attribute {
  return { name: a.name, type: a.type === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER };
}

/**
 * Deletion protection by removal policy. RETAIN: on. DESTROY: off. RETAIN_ON_UPDATE_OR_DELETE
 * (RetainExceptOnCreate, what `retainData` deploys): left unmanaged, because a protected
 * table cannot be deleted (DeleteTable answers ResourceInUseException), so the rollback of
 * a failed first deploy, which must delete the tables it created, would end in
 * ROLLBACK_FAILED with the tables left behind (issue 35, item 5). CloudFormation still
 * keeps them on stack deletion and replacement; enable protection by hand after the first
 * deploy if wanted (docs/deploy.md §2): the template never turns it off again.
 */
export function deletionProtectionFor(removalPolicy: RemovalPolicy): boolean | undefined {
  if (removalPolicy === RemovalPolicy.RETAIN) return true;
  if (removalPolicy === RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE) return undefined;
  return false;
}

/**
 * Builds a table from a shape in core/resources.ts: on demand (or provisioned and auto
 * scaled up to `provisionedCapacityUnits`), PITR, TTL, SSE, the shape's GSIs. `tableName`
 * undefined lets CloudFormation generate the name.
 */
export function tableFromShape(scope: Construct, id: string, tableName: string | undefined, shape: TableShape, removalPolicy: RemovalPolicy, provisionedCapacityUnits = 0, pointInTimeRecovery = true): dynamodb.Table {
  const provisioned = provisionedCapacityUnits > 0;
  const table = new dynamodb.Table(scope, id, {
    tableName,
    partitionKey: attribute(shape.partitionKey),
    sortKey: shape.sortKey ? attribute(shape.sortKey) : undefined,
    ...(provisioned ? { billingMode: dynamodb.BillingMode.PROVISIONED, readCapacity: 1, writeCapacity: 1 } : { billingMode: dynamodb.BillingMode.PAY_PER_REQUEST }),
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: pointInTimeRecovery },
    timeToLiveAttribute: shape.ttlAttribute,
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    deletionProtection: deletionProtectionFor(removalPolicy),
    removalPolicy,
    ...(shape.stream ? { stream: dynamodb.StreamViewType.NEW_IMAGE } : {}),
  });
  if (!pointInTimeRecovery) {
    acknowledge(table, {
      id: 'AwsSolutions-DDB3',
      reason: 'pointInTimeRecovery=false (issue 44, decision 79): the operator gave up restoring to any second of the last 35 days to save $0.20 per GB-month; on-demand backups remain theirs to take.',
    });
  }
  for (const gsi of shape.globalSecondaryIndexes) {
    table.addGlobalSecondaryIndex({
      indexName: gsi.indexName,
      partitionKey: attribute(gsi.partitionKey),
      sortKey: gsi.sortKey ? attribute(gsi.sortKey) : undefined,
      projectionType: gsi.projection === 'ALL' ? dynamodb.ProjectionType.ALL : dynamodb.ProjectionType.KEYS_ONLY,
      ...(provisioned ? { readCapacity: 1, writeCapacity: 1 } : {}),
    });
  }
  if (provisioned) {
    // A camera is a steady load: capacity follows it, between 1 unit and the cap.
    const range = { minCapacity: 1, maxCapacity: provisionedCapacityUnits };
    const target = { targetUtilizationPercent: PROVISIONED_TARGET_UTILIZATION_PERCENT };
    table.autoScaleReadCapacity(range).scaleOnUtilization(target);
    table.autoScaleWriteCapacity(range).scaleOnUtilization(target);
    for (const gsi of shape.globalSecondaryIndexes) {
      table.autoScaleGlobalSecondaryIndexReadCapacity(gsi.indexName, range).scaleOnUtilization(target);
      table.autoScaleGlobalSecondaryIndexWriteCapacity(gsi.indexName, range).scaleOnUtilization(target);
    }
  }
  return table;
}

/** Item actions the pipeline uses: conditional puts/updates, reads, queries, and transactions over them. */
const READ_WRITE_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
  'dynamodb:ConditionCheckItem',
  'dynamodb:DescribeTable',
];

/**
 * The leases table (slot and video leases, checkpoints) and the per-frame results table.
 *
 * Their names are generated by CloudFormation (`<stack>-TablesLeases…-<suffix>`), not fixed:
 * with `retainData` (the default) a deleted stack leaves its tables behind, and a fixed
 * name would make the next deployment under the same prefix fail with "already exists".
 * Nothing needs the name in advance: the router, janitor and worker get it through the
 * wiring environment (`LEASES_TABLE`, `RESULTS_TABLE`), the operator CLI from the stack
 * outputs. Importing the retained tables instead (`cdk import`) would make every
 * redeployment a manual step; the old tables stay readable by name (docs/deploy.md §2).
 */
export class StateTables extends Construct {
  readonly leases: dynamodb.Table;
  readonly results: dynamodb.Table;
  /** The analytics outbox; its stream feeds the event bus (issue 22). */
  readonly events: dynamodb.Table;

  constructor(scope: Construct, id: string, props: StateTablesProps = {}) {
    super(scope, id);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    const units = props.provisionedCapacityUnits ?? 0;
    const pitr = props.pointInTimeRecovery ?? true;
    this.leases = tableFromShape(this, 'Leases', undefined, LEASES_TABLE, removalPolicy, units, pitr);
    this.results = tableFromShape(this, 'Results', undefined, RESULTS_TABLE, removalPolicy, units, pitr);
    this.#shapes.set(this.leases, LEASES_TABLE);
    this.events = tableFromShape(this, 'Events', undefined, EVENTS_TABLE, removalPolicy, units, pitr);
    this.#shapes.set(this.results, RESULTS_TABLE);
    this.#shapes.set(this.events, EVENTS_TABLE);
  }

  readonly #shapes = new Map<dynamodb.Table, TableShape>();

  /** Read/write items of the leases table and query its indexes. */
  grantLeasesReadWrite(grantee: iam.IGrantable): iam.Grant {
    return this.#grant(grantee, this.leases);
  }

  /** Read/write items of the results table. */
  grantResultsReadWrite(grantee: iam.IGrantable): iam.Grant {
    return this.#grant(grantee, this.results);
  }

  /** Read/write items of the events outbox (the worker writes it inside its commit transaction). */
  grantEventsReadWrite(grantee: iam.IGrantable): iam.Grant {
    return this.#grant(grantee, this.events);
  }

  /**
   * Scan the keys-only pinned-slot index, and nothing else: the janitor reads every pin
   * in one paginated Scan per run instead of one Query per slot. The table itself is
   * never scanned.
   */
  grantScanPinnedIndex(grantee: iam.IGrantable): iam.Grant {
    const index = LEASES_TABLE.globalSecondaryIndexes[0]!.indexName;
    return iam.Grant.addToPrincipal({ grantee, actions: ['dynamodb:Scan'], resourceArns: [`${this.leases.tableArn}/index/${index}`] });
  }

  // Table.grantReadWriteData would add Scan and an index wildcard (`table/index/*`); listing actions and
  // index ARNs keeps the policy free of wildcards and of Scan (only the janitor scans, and only the pinned-slot index: grantScanPinnedIndex).
  #grant(grantee: iam.IGrantable, table: dynamodb.Table): iam.Grant {
    const indexArns = (this.#shapes.get(table)?.globalSecondaryIndexes ?? []).map((i) => `${table.tableArn}/index/${i.indexName}`);
    return iam.Grant.addToPrincipal({ grantee, actions: READ_WRITE_ACTIONS, resourceArns: [table.tableArn, ...indexArns] });
  }
}
