/**
 * IAM evaluation of a synthesized template (issue 45): the stack's policies, resolved to the
 * ARNs a deployment in a fixed account and region would have, and each request decided by
 * an IAM evaluation engine (@cloud-copilot/iam-simulate, docs/decisions.md) from the
 * principal's identity policies and the resource's policy (bucket policy, queue policy),
 * as AWS does for a request within one account: an explicit Deny in either wins, else an
 * Allow in either allows.
 *
 * CloudFormation intrinsics are resolved here, not by CloudFormation: `Ref` and
 * `Fn::GetAtt` of the resource types the policies name give the physical name the template
 * sets, or the logical id where it sets none (lower-cased for buckets). A type or attribute
 * this module does not know throws, naming it, so a new policy cannot be skipped silently.
 */

/**
 * The engine, a devDependency, loaded on first use. The name is held in a variable so that
 * the type-check does not need the package; the small part of its API used here is typed
 * below (`runSimulation`, iam-simulate 0.1.x).
 */
const ENGINE = '@cloud-copilot/iam-simulate';
const ENGINE_VERSION = '0.1.173';
interface EngineSimulation {
  request: { principal: string; action: string; resource: { resource: string; accountId: string }; contextVariables: Record<string, string | string[]> };
  identityPolicies: { name: string; policy: unknown }[];
  serviceControlPolicies: unknown[];
  resourceControlPolicies: unknown[];
  resourcePolicy?: unknown;
}
type EngineResult =
  | { resultType: 'error'; errors: unknown }
  | { resultType: 'single'; overallResult: string; result: { ignoredContextKeys?: string[] } }
  | { resultType: 'wildcard'; overallResult: string; results: { ignoredContextKeys?: string[] }[] };
interface Engine {
  runSimulation(simulation: EngineSimulation, options: { simulationMode?: 'Strict' | 'Discovery' }): Promise<EngineResult>;
}
let engine: Promise<Engine> | undefined;
function loadEngine(): Promise<Engine> {
  engine ??= (import(/* @vite-ignore */ ENGINE) as Promise<Engine>).catch((e: Error) => {
    throw new Error(`the IAM evaluation engine is not installed: npm install -D ${ENGINE}@${ENGINE_VERSION} (${e.message})`);
  });
  return engine;
}

export const ACCOUNT = '123456789012';
export const REGION = 'us-east-1';
const PARTITION = 'aws';

export type CfnResource = { Type: string; Properties?: Record<string, unknown> };
export type CfnTemplate = { Resources: Record<string, CfnResource> };
export type PolicyStatement = Record<string, unknown> & { Effect: string; Sid?: string };
export type PolicyDocument = { Version?: string; Statement: PolicyStatement[] };
export type Decision = 'Allowed' | 'ImplicitlyDenied' | 'ExplicitlyDenied';

const PSEUDO: Readonly<Record<string, string>> = {
  'AWS::Partition': PARTITION,
  'AWS::AccountId': ACCOUNT,
  'AWS::Region': REGION,
  'AWS::URLSuffix': 'amazonaws.com',
  'AWS::StackName': 'FrameAffinity',
  'AWS::StackId': `arn:${PARTITION}:cloudformation:${REGION}:${ACCOUNT}:stack/FrameAffinity/0f0e0d0c-0b0a-0908-0706-050403020100`,
  'AWS::NoValue': '',
};

/** The property holding a type's physical name, where the template may set one. */
const NAME_PROPERTY: Readonly<Record<string, string>> = {
  'AWS::S3::Bucket': 'BucketName',
  'AWS::SQS::Queue': 'QueueName',
  'AWS::DynamoDB::Table': 'TableName',
  'AWS::IAM::Role': 'RoleName',
  'AWS::IAM::ManagedPolicy': 'ManagedPolicyName',
  'AWS::ECS::Cluster': 'ClusterName',
  'AWS::ECS::TaskDefinition': 'Family',
  'AWS::Lambda::Function': 'FunctionName',
  'AWS::Logs::LogGroup': 'LogGroupName',
  'AWS::Events::EventBus': 'Name',
  'AWS::Events::Rule': 'Name',
  'AWS::Pipes::Pipe': 'Name',
  'AWS::AutoScaling::AutoScalingGroup': 'AutoScalingGroupName',
  'AWS::SNS::Topic': 'TopicName',
  'AWS::KMS::Key': '',
};

const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : v === undefined ? [] : [v]);
const isRefTo = (v: unknown, id: string) => (v as { Ref?: string } | undefined)?.Ref === id;

/**
 * A stack and its nested stacks as one set of resources (logical ids must not collide),
 * with their intrinsics resolved. Build it from template JSON; mutate a copy ({@link clone})
 * and build another to see what a statement changes.
 */
export class StackModel {
  readonly resources: Record<string, CfnResource> = {};

  constructor(templates: readonly CfnTemplate[]) {
    for (const t of templates) {
      for (const [id, r] of Object.entries(t.Resources)) {
        if (this.resources[id]) throw new Error(`logical id ${id} appears in two templates`);
        this.resources[id] = r;
      }
    }
  }

  #resource(id: string): CfnResource {
    const r = this.resources[id];
    if (!r) throw new Error(`no resource ${id}`);
    return r;
  }

  /** The physical name the template gives a resource, or its logical id (lower-cased for a bucket). */
  nameOf(id: string): string {
    const r = this.#resource(id);
    const prop = NAME_PROPERTY[r.Type];
    if (prop === undefined) throw new Error(`iam-eval cannot name a ${r.Type} (${id})`);
    const set = prop ? r.Properties?.[prop] : undefined;
    if (set !== undefined) return String(this.resolve(set));
    return r.Type === 'AWS::S3::Bucket' ? id.toLowerCase() : id;
  }

  arnOf(id: string, attribute = 'Arn'): string {
    const r = this.#resource(id);
    const name = this.nameOf(id);
    const regional = (service: string, rest: string) => `arn:${PARTITION}:${service}:${REGION}:${ACCOUNT}:${rest}`;
    const key = `${r.Type}.${attribute}`;
    switch (key) {
      case 'AWS::S3::Bucket.Arn': return `arn:${PARTITION}:s3:::${name}`;
      case 'AWS::SQS::Queue.Arn': return regional('sqs', name);
      case 'AWS::SQS::Queue.QueueName': return name;
      case 'AWS::SQS::Queue.QueueUrl': return `https://sqs.${REGION}.amazonaws.com/${ACCOUNT}/${name}`;
      case 'AWS::DynamoDB::Table.Arn': return regional('dynamodb', `table/${name}`);
      case 'AWS::DynamoDB::Table.StreamArn': return regional('dynamodb', `table/${name}/stream/2026-01-01T00:00:00.000`);
      case 'AWS::IAM::Role.Arn': return `arn:${PARTITION}:iam::${ACCOUNT}:role/${name}`;
      case 'AWS::ECS::Cluster.Arn': return regional('ecs', `cluster/${name}`);
      case 'AWS::Lambda::Function.Arn': return regional('lambda', `function:${name}`);
      case 'AWS::Logs::LogGroup.Arn': return regional('logs', `log-group:${name}:*`);
      case 'AWS::Events::EventBus.Arn': return regional('events', `event-bus/${name}`);
      case 'AWS::Events::Rule.Arn': return regional('events', `rule/${name}`);
      case 'AWS::Pipes::Pipe.Arn': return regional('pipes', `pipe/${name}`);
      case 'AWS::KMS::Key.Arn': return regional('kms', `key/${id}`);
      default: throw new Error(`iam-eval cannot resolve Fn::GetAtt ${id}.${attribute} (${r.Type})`);
    }
  }

  refOf(id: string): string {
    if (id in PSEUDO) return PSEUDO[id]!;
    const r = this.#resource(id);
    switch (r.Type) {
      case 'AWS::SQS::Queue': return this.arnOf(id, 'QueueUrl');
      case 'AWS::ECS::TaskDefinition': return `arn:${PARTITION}:ecs:${REGION}:${ACCOUNT}:task-definition/${this.nameOf(id)}:1`;
      case 'AWS::IAM::ManagedPolicy': return `arn:${PARTITION}:iam::${ACCOUNT}:policy/${this.nameOf(id)}`;
      case 'AWS::SNS::Topic': return `arn:${PARTITION}:sns:${REGION}:${ACCOUNT}:${this.nameOf(id)}`;
      case 'AWS::KMS::Key': return id;
      default: return this.nameOf(id);
    }
  }

  /** A template value with every intrinsic resolved. */
  resolve(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.resolve(v));
    if (!value || typeof value !== 'object') return value;
    const o = value as Record<string, unknown>;
    const keys = Object.keys(o);
    if (keys.length === 1) {
      const [k] = keys as [string];
      const arg = o[k];
      if (k === 'Ref') return this.refOf(String(arg));
      if (k === 'Fn::GetAtt') {
        const [id, attribute] = Array.isArray(arg) ? (arg as string[]) : String(arg).split('.');
        return this.arnOf(id!, attribute);
      }
      if (k === 'Fn::Join') {
        const [sep, parts] = arg as [string, unknown[]];
        return (this.resolve(parts) as unknown[]).join(sep);
      }
      if (k === 'Fn::Sub') {
        const [text, vars] = Array.isArray(arg) ? (arg as [string, Record<string, unknown>]) : [String(arg), {}];
        // `${aws:...}` and other policy variables hold a ':' and no '::': they stay for IAM.
        return text.replace(/\$\{([A-Za-z0-9:.]+)\}/g, (whole, name: string) => {
          if (name in vars) return String(this.resolve(vars[name]));
          if (name in PSEUDO) return PSEUDO[name]!;
          if (/^[A-Za-z0-9]+(\.[A-Za-z]+)?$/.test(name)) {
            const [id, attribute] = name.split('.');
            return attribute ? this.arnOf(id!, attribute) : this.refOf(id!);
          }
          return whole;
        });
      }
      if (k.startsWith('Fn::')) throw new Error(`iam-eval cannot resolve ${k}`);
    }
    return Object.fromEntries(Object.entries(o).map(([key, v]) => [key, this.resolve(v)]));
  }

  /** A role's identity policies: inline, AWS::IAM::Policy and the stack's own managed policies attached to it. */
  identityPoliciesOf(roleId: string): { name: string; policy: PolicyDocument }[] {
    const role = this.#resource(roleId);
    if (role.Type !== 'AWS::IAM::Role') throw new Error(`${roleId} is a ${role.Type}, not a role`);
    const out: { name: string; policy: PolicyDocument }[] = [];
    for (const p of asList(role.Properties?.Policies) as { PolicyName: string; PolicyDocument: unknown }[]) {
      out.push({ name: `${roleId}/${p.PolicyName}`, policy: this.resolve(p.PolicyDocument) as PolicyDocument });
    }
    for (const [id, r] of Object.entries(this.resources)) {
      if ((r.Type === 'AWS::IAM::Policy' || r.Type === 'AWS::IAM::ManagedPolicy') && asList(r.Properties?.Roles).some((x) => isRefTo(x, roleId))) {
        out.push({ name: id, policy: this.resolve(r.Properties!.PolicyDocument) as PolicyDocument });
      }
    }
    for (const arn of asList(role.Properties?.ManagedPolicyArns)) {
      const own = (arn as { Ref?: string }).Ref;
      if (own && this.resources[own]?.Type === 'AWS::IAM::ManagedPolicy') {
        out.push({ name: own, policy: this.resolve(this.resources[own]!.Properties!.PolicyDocument) as PolicyDocument });
      } else {
        throw new Error(`${roleId} has a managed policy iam-eval cannot read: ${JSON.stringify(this.resolve(arn))}`);
      }
    }
    return out;
  }

  /** A managed policy of the stack by logical id (an uploader's, attached outside the stack). */
  managedPolicy(id: string): { name: string; policy: PolicyDocument } {
    const r = this.#resource(id);
    if (r.Type !== 'AWS::IAM::ManagedPolicy') throw new Error(`${id} is a ${r.Type}, not a managed policy`);
    return { name: id, policy: this.resolve(r.Properties!.PolicyDocument) as PolicyDocument };
  }

  /** The logical id of the resource policy that governs an ARN: the bucket policy of an S3 bucket or object, the queue policy of a queue. */
  resourcePolicyIdFor(arn: string): string | undefined {
    const s3 = /^arn:[^:]+:s3:::([^/]+)/.exec(arn);
    const sqs = /^arn:[^:]+:sqs:[^:]*:[^:]*:(.+)$/.exec(arn);
    const find = (type: string, name: string) => Object.keys(this.resources).find((id) => this.resources[id]!.Type === type && this.nameOf(id) === name);
    const policyOf = (type: string, refersTo: (p: Record<string, unknown>) => boolean) =>
      Object.keys(this.resources).find((id) => this.resources[id]!.Type === type && refersTo(this.resources[id]!.Properties ?? {}));
    if (s3) {
      const bucket = find('AWS::S3::Bucket', s3[1]!);
      if (!bucket) throw new Error(`no bucket named ${s3[1]} in the template`);
      return policyOf('AWS::S3::BucketPolicy', (p) => isRefTo(p.Bucket, bucket));
    }
    if (sqs) {
      const queue = find('AWS::SQS::Queue', sqs[1]!);
      if (!queue) throw new Error(`no queue named ${sqs[1]} in the template`);
      return policyOf('AWS::SQS::QueuePolicy', (p) => asList(p.Queues).some((q) => isRefTo(q, queue)));
    }
    return undefined;
  }

  /** The resource policy that governs an ARN, resolved ({@link resourcePolicyIdFor}). */
  resourcePolicyFor(arn: string): PolicyDocument | undefined {
    const id = this.resourcePolicyIdFor(arn);
    return id ? (this.resolve(this.resources[id]!.Properties!.PolicyDocument) as PolicyDocument) : undefined;
  }
}

export interface EvalRequest {
  /** The caller's ARN (a role, or an assumed-role session). */
  readonly principal: string;
  readonly identityPolicies: readonly { name: string; policy: PolicyDocument }[];
  readonly action: string;
  readonly resource: string;
  /** Request context: `aws:SecureTransport` is set to `true` unless given. */
  readonly context?: Readonly<Record<string, string | string[]>>;
}

/**
 * IAM's decision for one request: identity policies plus the resource's policy from the
 * model, same account. Throws when the engine refuses the input or ignores a context key
 * (a key that does not apply to the action would make a condition test meaningless).
 */
export async function decide(model: StackModel, request: EvalRequest): Promise<Decision> {
  const resourcePolicy = model.resourcePolicyFor(request.resource);
  const { runSimulation } = await loadEngine();
  const result = await runSimulation(
    {
      request: {
        principal: request.principal,
        action: request.action,
        resource: { resource: request.resource, accountId: ACCOUNT },
        contextVariables: { 'aws:SecureTransport': 'true', ...request.context },
      },
      identityPolicies: request.identityPolicies.map((p) => ({ name: p.name, policy: p.policy })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
      ...(resourcePolicy ? { resourcePolicy } : {}),
    },
    { simulationMode: 'Strict' },
  );
  if (result.resultType === 'error') throw new Error(`iam-simulate refused ${request.action} on ${request.resource}: ${JSON.stringify(result.errors)}`);
  // `*` (an action with no resource type, or one granted on `*` under a condition) is simulated against each pattern the policies name.
  if (result.resultType === 'wildcard' && request.resource !== '*') throw new Error(`iam-simulate ran a wildcard simulation for ${request.resource}: name one resource`);
  const ignored = result.resultType === 'single' ? (result.result.ignoredContextKeys ?? []) : result.results.flatMap((r) => r.ignoredContextKeys ?? []);
  if (ignored.length > 0) throw new Error(`iam-simulate ignored context keys ${[...new Set(ignored)].join(', ')} for ${request.action}`);
  return result.overallResult as Decision;
}

/** A deep copy of template JSON, to mutate. */
export function clone<T>(value: T): T {
  return structuredClone(value);
}

/** Every policy document in the templates' resources (identity, managed, bucket, queue), for a mutation to walk. */
export function policyDocuments(templates: readonly CfnTemplate[]): { resource: string; document: { Statement: PolicyStatement[] } }[] {
  const out: { resource: string; document: { Statement: PolicyStatement[] } }[] = [];
  for (const t of templates) {
    for (const [id, r] of Object.entries(t.Resources)) {
      const doc = r.Properties?.PolicyDocument as { Statement?: PolicyStatement[] } | undefined;
      if (doc && Array.isArray(doc.Statement)) out.push({ resource: id, document: doc as { Statement: PolicyStatement[] } });
      for (const p of asList(r.Properties?.Policies) as { PolicyDocument?: { Statement?: PolicyStatement[] } }[]) {
        if (p.PolicyDocument && Array.isArray(p.PolicyDocument.Statement)) out.push({ resource: id, document: p.PolicyDocument as { Statement: PolicyStatement[] } });
      }
    }
  }
  return out;
}
