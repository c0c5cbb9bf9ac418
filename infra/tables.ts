import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import { resourceNames, type ResourceNames } from '../core/config.ts';
import { LEASES_TABLE, RESULTS_TABLE, type KeyAttribute, type TableShape } from '../core/resources.ts';

export interface StateTablesProps {
  /**
   * Physical table names.
   * @default resourceNames()
   */
  readonly names?: ResourceNames;
  /**
   * What happens to the tables when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

function attribute(a: KeyAttribute): dynamodb.Attribute {
  return { name: a.name, type: a.type === 'S' ? dynamodb.AttributeType.STRING : dynamodb.AttributeType.NUMBER };
}

/** Builds a table from a shape in core/resources.ts: on demand, PITR, TTL, SSE, the shape's GSIs. */
export function tableFromShape(scope: Construct, id: string, tableName: string, shape: TableShape, removalPolicy: RemovalPolicy): dynamodb.Table {
  const table = new dynamodb.Table(scope, id, {
    tableName,
    partitionKey: attribute(shape.partitionKey),
    sortKey: shape.sortKey ? attribute(shape.sortKey) : undefined,
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    timeToLiveAttribute: shape.ttlAttribute,
    encryption: dynamodb.TableEncryption.AWS_MANAGED,
    deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
    removalPolicy,
  });
  for (const gsi of shape.globalSecondaryIndexes) {
    table.addGlobalSecondaryIndex({
      indexName: gsi.indexName,
      partitionKey: attribute(gsi.partitionKey),
      sortKey: gsi.sortKey ? attribute(gsi.sortKey) : undefined,
      projectionType: gsi.projection === 'ALL' ? dynamodb.ProjectionType.ALL : dynamodb.ProjectionType.KEYS_ONLY,
    });
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

/** The leases table (slot and video leases, checkpoints) and the per-frame results table. */
export class StateTables extends Construct {
  readonly leases: dynamodb.Table;
  readonly results: dynamodb.Table;

  constructor(scope: Construct, id: string, props: StateTablesProps = {}) {
    super(scope, id);
    const names = props.names ?? resourceNames();
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;
    this.leases = tableFromShape(this, 'Leases', names.leasesTable, LEASES_TABLE, removalPolicy);
    this.results = tableFromShape(this, 'Results', names.resultsTable, RESULTS_TABLE, removalPolicy);
    this.#shapes.set(this.leases, LEASES_TABLE);
    this.#shapes.set(this.results, RESULTS_TABLE);
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

  // Table.grantReadWriteData would add Scan and an index wildcard (`table/index/*`); listing actions and
  // index ARNs keeps the policy free of wildcards and of Scan (the design never scans).
  #grant(grantee: iam.IGrantable, table: dynamodb.Table): iam.Grant {
    const indexArns = (this.#shapes.get(table)?.globalSecondaryIndexes ?? []).map((i) => `${table.tableArn}/index/${i.indexName}`);
    return iam.Grant.addToPrincipal({ grantee, actions: READ_WRITE_ACTIONS, resourceArns: [table.tableArn, ...indexArns] });
  }
}
