/**
 * Every principal's permissions evaluated as IAM would (issue 45), not matched as strings:
 * for each principal, the calls its code makes, each allowed on the resource it names, and
 * calls that must be denied, each decided by an IAM evaluation engine from the synthesized
 * template's identity policies and the resource's own policy (bucket and queue policies,
 * with their TLS and model denies) at 4 and 1,000 slots (test/support/iam-eval.ts).
 *
 * Each denied call names what denies it, and a mutation of the template that takes that
 * away: removing the Deny statement, dropping the condition or widening the resource of the
 * Allow that scopes it, or (where nothing grants the call) adding an Allow for it. The
 * mutated template must then allow the call, so no deny passes for a reason the table does
 * not know (a wrong ARN, a context key the engine ignores). Where two statements guard a
 * call, taking away either alone must leave it denied.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as logs from 'aws-cdk-lib/aws-logs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resourceNames } from '../../core/config.ts';
import { buildApp, cdkJsonContext } from '../../infra/app.ts';
import { DEFAULT_SITE_TAG, UPLOADER_SIDS } from '../../infra/uploader-access.ts';
import { LEGACY_MODEL_DENY_SIDS } from '../../infra/frame-bucket.ts';
import { MODEL_DENY_SIDS } from '../../infra/model-bucket.ts';
import type { FrameAffinityStack } from '../../infra/stack.ts';
import { ACCOUNT, REGION, StackModel, clone, decide, type CfnTemplate, type Decision, type PolicyDocument, type PolicyStatement } from '../support/iam-eval.ts';

const names = resourceNames('FrameAffinity');
const SITE = 'store-042';
const OTHER_CLUSTER = `arn:aws:ecs:${REGION}:${ACCOUNT}:cluster/someone-elses`;

type Who = 'router' | 'janitor' | 'worker' | 'execution' | 'teardown' | 'pipe' | 'uploader' | 'admin';

/** Where a mutation applies: the calling principal's own policies, or the policy of the resource it calls. */
type Where = 'identity' | 'resource';
type Match = (s: PolicyStatement) => boolean;
type Mutation =
  | { readonly remove: Where; readonly match: Match; readonly what: string }
  | { readonly dropCondition: Where; readonly match: Match; readonly what: string }
  | { readonly widen: Where; readonly match: Match; readonly to: string; readonly what: string }
  | { readonly grant: true; readonly what: string };

interface Call {
  readonly who: Who;
  readonly action: string;
  readonly resource: string;
  readonly context?: Record<string, string | string[]>;
  /** The uploader's site tag; null = the principal has none. @default SITE */
  readonly tag?: string | null;
  /** Why the code makes this call (allowed) or why it must not (denied). */
  readonly why: string;
}
interface Allowed extends Call { readonly expect: 'Allowed' }
interface Denied extends Call { readonly expect: 'Denied'; readonly guards: readonly Mutation[] }
type Case = Allowed | Denied;

// ---- what a statement is, for the mutations --------------------------------------------

const actions = (s: PolicyStatement) => (Array.isArray(s.Action) ? s.Action : [s.Action]) as string[];
const hasAction = (a: string): Match => (s) => actions(s).includes(a);
const allowing = (a: string): Match => (s) => s.Effect === 'Allow' && hasAction(a)(s);
const tlsDeny: Match = (s) => s.Effect === 'Deny' && (s.Condition as { Bool?: Record<string, string> } | undefined)?.Bool?.['aws:SecureTransport'] === 'false';
const sid = (id: string): Match => (s) => s.Sid === id;
const listing = (prefix: string): Match => (s) => allowing('s3:ListBucket')(s) && JSON.stringify(s.Condition ?? {}).includes(`"${prefix}`);

const TLS: Mutation = { remove: 'resource', match: tlsDeny, what: "the resource policy's deny without TLS" };
const GRANT: Mutation = { grant: true, what: 'nothing grants it' };

// ---- synthesis, once per slot count ------------------------------------------------------

interface Synth {
  readonly templates: CfnTemplate[];
  readonly model: StackModel;
  readonly roles: Record<Exclude<Who, 'uploader' | 'admin'>, string>;
  readonly uploaderPolicy: string;
  readonly arn: Record<string, string>;
  readonly slots: number;
}

const outdirs: string[] = [];
afterAll(() => {
  for (const d of outdirs) rmSync(d, { recursive: true, force: true });
});

function synthAt(slots: number): Synth {
  const outdir = mkdtempSync(join(tmpdir(), 'fa-iam-eval-'));
  outdirs.push(outdir);
  const { stack } = buildApp(new App({ outdir, context: { ...cdkJsonContext(), 'aws:cdk:bundling-stacks': [], slotCount: slots } }));
  const templates = [stack, ...stack.queues.slotQueueStacks].map((s: Stack) => Template.fromStack(s).toJSON() as CfnTemplate);
  const model = new StackModel(templates);
  const id = (c: { node: { defaultChild?: unknown } }) => stack.getLogicalId(c.node.defaultChild as never);
  const s: FrameAffinityStack = stack;
  const roles = {
    router: id(s.router.function.role!),
    janitor: id(s.janitor.function.role!),
    worker: id(s.fleet.taskRole),
    execution: id(s.fleet.executionRole),
    teardown: id(s.fleet.teardown.function.role!),
    pipe: id(s.eventDelivery.role),
  };
  const bucket = model.arnOf(id(s.frames.bucket));
  const modelBucket = model.arnOf(id(s.models.bucket));
  const cluster = model.arnOf(id(s.fleet.cluster));
  const clusterName = model.refOf(id(s.fleet.cluster));
  const slotQueue = (n: number, dlq = false) => `arn:aws:sqs:${REGION}:${ACCOUNT}:${names.slotQueuePrefix}${n}${dlq ? '-dlq' : ''}.fifo`;
  const logStream = (group: { node: { defaultChild?: unknown } }, stream: string) => `${model.arnOf(id(group)).replace(/:\*$/, '')}:log-stream:${stream}`;
  const arn: Record<string, string> = {
    bucket,
    frame: `${bucket}/frames/${SITE}.door-1/000042.jpg`,
    segment: `${bucket}/frames/${SITE}.door-1/120.ts`,
    endMarker: `${bucket}/frames/${SITE}.door-1/_end`,
    otherSite: `${bucket}/frames/store-043.door-1/000042.jpg`,
    longerSite: `${bucket}/frames/${SITE}1.door-1/000042.jpg`,
    noSite: `${bucket}/frames/door-1/000042.jpg`,
    modelBucket,
    model: `${modelBucket}/models/detector.onnx`,
    modelSidecar: `${modelBucket}/models/detector.onnx.json`,
    // Where an older deploy kept the model (decision 78): readable one release more, written by no one.
    legacyModel: `${bucket}/models/detector.onnx`,
    rules: `${bucket}/rules/${SITE}.door-1.json`,
    leases: model.arnOf(id(s.tables.leases)),
    pinnedIndex: `${model.arnOf(id(s.tables.leases))}/index/${names.pinnedSlotIndex}`,
    results: model.arnOf(id(s.tables.results)),
    events: model.arnOf(id(s.tables.events)),
    eventsStream: model.arnOf(id(s.tables.events), 'StreamArn'),
    ingest: model.arnOf(id(s.queues.ingestQueue)),
    ingestDlq: model.arnOf(id(s.queues.ingestDlq)),
    firstSlot: slotQueue(0),
    lastSlot: slotQueue(slots - 1),
    lastSlotDlq: slotQueue(slots - 1, true),
    cluster,
    taskDefinition: `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/${names.prefix}-worker:7`,
    otherTaskDefinition: `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/someone-elses:1`,
    task: `arn:aws:ecs:${REGION}:${ACCOUNT}:task/${clusterName}/0123456789abcdef0123456789abcdef`,
    otherTask: `arn:aws:ecs:${REGION}:${ACCOUNT}:task/someone-elses/0123456789abcdef0123456789abcdef`,
    taskRole: model.arnOf(roles.worker),
    executionRole: model.arnOf(roles.execution),
    group: `arn:aws:autoscaling:${REGION}:${ACCOUNT}:autoScalingGroup:0f0e0d0c-0b0a-0908-0706-050403020100:autoScalingGroupName/${model.refOf(id(s.fleet.autoScalingGroup))}`,
    otherGroup: `arn:aws:autoscaling:${REGION}:${ACCOUNT}:autoScalingGroup:0f0e0d0c-0b0a-0908-0706-050403020100:autoScalingGroupName/someone-elses`,
    assetRepository: `arn:aws:ecr:${REGION}:${ACCOUNT}:repository/cdk-hnb659fds-container-assets-${ACCOUNT}-${REGION}`,
    otherRepository: `arn:aws:ecr:${REGION}:${ACCOUNT}:repository/someone-elses`,
    routerLogs: logStream(s.router.node.findAll().find((c) => c instanceof logs.LogGroup)!, '2026/12/06/[$LATEST]0123'),
    workerLogs: logStream(s.fleet.logGroup, 'worker/worker/0123456789abcdef'),
    bus: model.arnOf(id(s.eventDelivery.bus)),
    defaultBus: `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/default`,
    pipeDlq: model.arnOf(id(s.eventDelivery.deadLetterQueue)),
    pipeLogs: logStream(s.eventDelivery.logGroup, 'pipe'),
    stack: model.refOf('AWS::StackId'),
    otherStack: `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/someone-elses/0f0e0d0c-0b0a-0908-0706-050403020100`,
  };
  return { templates, model, roles, uploaderPolicy: id(s.uploader.policy), arn, slots };
}

// ---- the table ---------------------------------------------------------------------------

/** The calls of each principal at one synthesis: what it does, and what it must not. */
function table(a: Record<string, string>): Case[] {
  const ok = (who: Who, action: string, resource: string, why: string, more: Partial<Call> = {}): Allowed => ({ who, action, resource, why, expect: 'Allowed', ...more });
  const no = (who: Who, action: string, resource: string, why: string, guards: readonly Mutation[], more: Partial<Call> = {}): Denied => ({ who, action, resource, why, guards, expect: 'Denied', ...more });
  const onCluster = { 'ecs:cluster': a.cluster! };
  const toEcsTasks = { 'iam:PassedToService': 'ecs-tasks.amazonaws.com' };
  const noTls = { 'aws:SecureTransport': 'false' };
  const widenTo = (where: Where, match: Match, to: string, what: string): Mutation => ({ widen: where, match, to, what });
  return [
    // router: functions/router/handler.ts, core/fleet/router.ts, core/ingest/sqs/slot-queues.ts, core/fleet/ecs
    ok('router', 'sqs:ReceiveMessage', a.ingest!, 'its event source mapping polls the ingest queue'),
    ok('router', 'sqs:DeleteMessage', a.ingest!, 'the event source deletes a processed batch'),
    ok('router', 'sqs:ChangeMessageVisibility', a.ingest!, 'changeVisibilityInBatches on a deferred record'),
    ok('router', 'dynamodb:BatchGetItem', a.leases!, 'one lease read per video per batch'),
    ok('router', 'dynamodb:GetItem', a.leases!, 'reads a lease'),
    ok('router', 'dynamodb:PutItem', a.leases!, 'creates a video lease (in a transaction)'),
    ok('router', 'dynamodb:UpdateItem', a.leases!, 'launch grants on the slot item'),
    ok('router', 'dynamodb:ConditionCheckItem', a.leases!, 'transaction conditions'),
    ok('router', 'dynamodb:Query', a.pinnedIndex!, 'videos pinned to a slot'),
    ok('router', 'sqs:SendMessage', a.firstSlot!, 'forwards a frame to its slot queue'),
    ok('router', 'sqs:SendMessage', a.lastSlot!, 'every slot, the last one included'),
    ok('router', 'sqs:SendMessage', a.ingestDlq!, 'rejected events go to the ingest DLQ with a reason'),
    ok('router', 'ecs:RunTask', a.taskDefinition!, 'launches a worker for an idle slot', { context: onCluster }),
    ok('router', 'iam:PassRole', a.taskRole!, 'RunTask passes the task role', { context: toEcsTasks }),
    ok('router', 'iam:PassRole', a.executionRole!, 'RunTask passes the execution role', { context: toEcsTasks }),
    ok('router', 'logs:PutLogEvents', a.routerLogs!, 'its log group'),
    no('router', 's3:GetObject', a.frame!, 'routes by key, never reads an object', [GRANT]),
    no('router', 's3:PutObject', a.frame!, 'never writes a frame', [GRANT]),
    no('router', 'dynamodb:PutItem', a.results!, 'results are the worker\'s', [widenTo('identity', allowing('dynamodb:PutItem'), `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/*`, 'its DynamoDB grant names the leases table only')]),
    no('router', 'sqs:ReceiveMessage', a.firstSlot!, 'slot queues are consumed by their worker', [widenTo('identity', allowing('sqs:ReceiveMessage'), `arn:aws:sqs:${REGION}:${ACCOUNT}:*`, 'its consume grant names the ingest queue only')]),
    no('router', 'ecs:RunTask', a.taskDefinition!, 'another cluster', [{ dropCondition: 'identity', match: allowing('ecs:RunTask'), what: 'the ecs:cluster condition' }], { context: { 'ecs:cluster': OTHER_CLUSTER } }),
    no('router', 'ecs:RunTask', a.otherTaskDefinition!, 'another family', [widenTo('identity', allowing('ecs:RunTask'), `arn:aws:ecs:${REGION}:${ACCOUNT}:task-definition/*`, 'RunTask names the worker family')], { context: onCluster }),
    no('router', 'iam:PassRole', a.taskRole!, 'passing the task role to another service', [{ dropCondition: 'identity', match: allowing('iam:PassRole'), what: 'the iam:PassedToService condition' }], { context: { 'iam:PassedToService': 'lambda.amazonaws.com' } }),
    no('router', 'sqs:SendMessage', a.firstSlot!, 'without TLS', [TLS], { context: noTls }),
    no('router', 'sqs:ReceiveMessage', a.ingest!, 'without TLS', [TLS], { context: noTls }),

    // janitor: functions/janitor/handler.ts, core/fleet/janitor*.ts, core/leases, core/ingest/sqs/slot-queues.ts
    ok('janitor', 'dynamodb:GetItem', a.leases!, 'reads slot leases'),
    ok('janitor', 'dynamodb:BatchGetItem', a.leases!, 'reads slot leases in batches'),
    ok('janitor', 'dynamodb:UpdateItem', a.leases!, 'repairs leases, launch grants'),
    ok('janitor', 'dynamodb:PutItem', a.leases!, 'takes the run lock'),
    ok('janitor', 'dynamodb:DeleteItem', a.leases!, 'releases the run lock'),
    ok('janitor', 'dynamodb:Query', a.leases!, 'queries leases'),
    ok('janitor', 'dynamodb:Scan', a.pinnedIndex!, 'scans the keys-only pinned index'),
    ok('janitor', 'sqs:GetQueueAttributes', a.lastSlot!, 'depth of a slot queue'),
    ok('janitor', 'sqs:GetQueueAttributes', a.lastSlotDlq!, 'depth of a slot DLQ'),
    ok('janitor', 'ecs:RunTask', a.taskDefinition!, 'relaunches a slot with work', { context: onCluster }),
    ok('janitor', 'iam:PassRole', a.taskRole!, 'RunTask passes the task role', { context: toEcsTasks }),
    ok('janitor', 'ecs:DescribeTasks', a.task!, 'checks launched tasks', { context: onCluster }),
    no('janitor', 'dynamodb:Scan', a.leases!, 'scans the index, never the table', [widenTo('identity', allowing('dynamodb:Scan'), a.leases!, 'Scan names the index only')]),
    no('janitor', 'dynamodb:PutItem', a.results!, 'results are the worker\'s', [widenTo('identity', allowing('dynamodb:PutItem'), `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/*`, 'its DynamoDB grant names the leases table only')]),
    no('janitor', 'sqs:ReceiveMessage', a.lastSlot!, 'reads depths, never messages', [GRANT]),
    no('janitor', 'ecs:StopTask', a.task!, 'never stops a task', [GRANT], { context: onCluster }),
    no('janitor', 's3:GetObject', a.frame!, 'never reads a frame', [GRANT]),
    no('janitor', 'sqs:GetQueueAttributes', a.lastSlot!, 'without TLS', [TLS], { context: noTls }),

    // worker task role: gpu-worker/runtime, core/ingest/s3/frame-store.ts, core/commit, core/analytics
    ok('worker', 's3:GetObject', a.frame!, 'fetches a frame (and HEADs it)'),
    ok('worker', 's3:GetObject', a.segment!, 'fetches a segment'),
    ok('worker', 's3:ListBucket', a.bucket!, "lists a video's frames", { context: { 's3:prefix': `frames/${SITE}.door-1/` } }),
    ok('worker', 's3:GetObject', a.model!, 'loads the model named by modelUri from the model bucket'),
    ok('worker', 's3:GetObject', a.modelSidecar!, "reads the model's sidecar"),
    ok('worker', 's3:ListBucket', a.modelBucket!, 'a missing sidecar answers 404', { context: { 's3:prefix': 'models/detector.onnx.json' } }),
    ok('worker', 's3:GetObject', a.legacyModel!, "a modelUri still naming the frame bucket's models/ loads, for one release (decision 78)"),
    ok('worker', 's3:GetObject', a.rules!, "reads a video's rules"),
    ok('worker', 's3:ListBucket', a.bucket!, 'a missing rules document answers 404', { context: { 's3:prefix': `rules/${SITE}.door-1.json` } }),
    ...(['leases', 'results', 'events'] as const).flatMap((t) => [
      ok('worker', 'dynamodb:GetItem', a[t]!, `reads ${t}`),
      ok('worker', 'dynamodb:PutItem', a[t]!, `commits ${t} (fenced transaction)`),
      ok('worker', 'dynamodb:UpdateItem', a[t]!, `updates ${t}`),
      ok('worker', 'dynamodb:ConditionCheckItem', a[t]!, 'fencing condition in the commit'),
      ok('worker', 'dynamodb:Query', a[t]!, `queries ${t}`),
    ]),
    ...(['results', 'events'] as const).map((t) => ok('worker', 'dynamodb:DeleteItem', a[t]!, `finishes a replay's conditional deletes of ${t} on adoption (decision 71)`)),
    ok('worker', 'sqs:ReceiveMessage', a.lastSlot!, 'long-polls its slot queue'),
    ok('worker', 'sqs:DeleteMessage', a.lastSlot!, 'deletes committed frames'),
    ok('worker', 'sqs:ChangeMessageVisibility', a.lastSlot!, 'hands held frames back'),
    ok('worker', 'sqs:SendMessage', a.lastSlot!, 're-sends to a slot on hand-off'),
    no('worker', 's3:PutObject', a.frame!, 'writing frames/: a worker never uploads', [GRANT]),
    no('worker', 's3:DeleteObject', a.frame!, 'deleting a frame', [GRANT]),
    no('worker', 's3:PutObject', a.model!, 'replacing the model', [GRANT, { remove: 'resource', match: sid(MODEL_DENY_SIDS.none), what: "the model bucket's deny" }]),
    no('worker', 's3:DeleteObjectVersion', a.model!, "deleting an old version of the model (versioning's protection)", [GRANT, { remove: 'resource', match: sid(MODEL_DENY_SIDS.none), what: "the model bucket's deny" }]),
    no('worker', 's3:PutObject', a.legacyModel!, "putting a model in the frame bucket's models/", [GRANT, { remove: 'resource', match: sid(LEGACY_MODEL_DENY_SIDS.keep), what: "the frame bucket's models/ deny" }]),
    no('worker', 's3:ListBucket', a.modelBucket!, 'listing the whole model bucket', [{ dropCondition: 'identity', match: listing('models/'), what: 'the s3:prefix condition' }], { context: { 's3:prefix': '' } }),
    no('worker', 's3:ListBucket', a.bucket!, 'listing the whole bucket', [{ dropCondition: 'identity', match: listing('frames/'), what: 'the s3:prefix condition' }], { context: { 's3:prefix': '' } }),
    no('worker', 'sqs:SendMessage', a.ingest!, 'forging S3 events', [widenTo('identity', allowing('sqs:SendMessage'), `arn:aws:sqs:${REGION}:${ACCOUNT}:*`, 'SendMessage names the slot queues only')]),
    no('worker', 's3:GetObject', a.frame!, 'without TLS', [TLS], { context: noTls }),
    no('worker', 'sqs:ReceiveMessage', a.lastSlot!, 'without TLS', [TLS], { context: noTls }),

    // execution role: the ECS agent pulls the image and ships the logs
    ok('execution', 'ecr:BatchGetImage', a.assetRepository!, 'pulls the worker image'),
    ok('execution', 'ecr:GetDownloadUrlForLayer', a.assetRepository!, 'pulls its layers'),
    ok('execution', 'ecr:GetAuthorizationToken', '*', 'logs in to ECR (no resource type)'),
    ok('execution', 'logs:PutLogEvents', a.workerLogs!, "the worker's awslogs"),
    no('execution', 'ecr:BatchGetImage', a.otherRepository!, 'another repository', [widenTo('identity', allowing('ecr:BatchGetImage'), `arn:aws:ecr:${REGION}:${ACCOUNT}:repository/*`, 'the pull names the image repository')]),
    no('execution', 's3:GetObject', a.frame!, 'the agent reads no frame', [GRANT]),
    no('execution', 'dynamodb:PutItem', a.results!, 'the agent writes no result', [GRANT]),

    // teardown function: functions/teardown/handler.ts
    ok('teardown', 'ecs:ListTasks', '*', "lists the cluster's tasks", { context: onCluster }),
    ok('teardown', 'ecs:StopTask', a.task!, 'stops them', { context: onCluster }),
    ok('teardown', 'ecs:DescribeTasks', a.task!, 'waits for them', { context: onCluster }),
    ok('teardown', 'autoscaling:DescribeAutoScalingGroups', '*', 'reads the group'),
    ok('teardown', 'autoscaling:UpdateAutoScalingGroup', a.group!, 'scales it to zero'),
    ok('teardown', 'autoscaling:SetInstanceProtection', a.group!, 'lifts scale-in protection'),
    no('teardown', 'ecs:StopTask', a.otherTask!, "another cluster's task", [
      { dropCondition: 'identity', match: allowing('ecs:StopTask'), what: 'the ecs:cluster condition' },
      widenTo('identity', allowing('ecs:StopTask'), `arn:aws:ecs:${REGION}:${ACCOUNT}:task/*`, 'the task ARN pattern of this cluster'),
    ], { context: { 'ecs:cluster': OTHER_CLUSTER } }),
    no('teardown', 'autoscaling:UpdateAutoScalingGroup', a.otherGroup!, 'another group', [widenTo('identity', allowing('autoscaling:UpdateAutoScalingGroup'), `arn:aws:autoscaling:${REGION}:${ACCOUNT}:autoScalingGroup:*`, 'the group ARN pattern')]),
    no('teardown', 'dynamodb:PutItem', a.leases!, 'drains through ECS, writes no lease', [GRANT]),

    // the EventBridge pipe: outbox stream -> bus (infra/event-delivery.ts)
    ok('pipe', 'dynamodb:DescribeStream', a.eventsStream!, 'reads the outbox stream'),
    ok('pipe', 'dynamodb:GetShardIterator', a.eventsStream!, 'reads the outbox stream'),
    ok('pipe', 'dynamodb:GetRecords', a.eventsStream!, 'reads the outbox stream'),
    ok('pipe', 'dynamodb:ListStreams', '*', 'finds the stream (no resource type)'),
    ok('pipe', 'events:PutEvents', a.bus!, 'puts events on the stack\'s bus'),
    ok('pipe', 'sqs:SendMessage', a.pipeDlq!, 'dead-letters what it cannot deliver'),
    ok('pipe', 'logs:PutLogEvents', a.pipeLogs!, 'its log group'),
    no('pipe', 'events:PutEvents', a.defaultBus!, 'another bus', [widenTo('identity', allowing('events:PutEvents'), `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/*`, 'PutEvents names the stack\'s bus')]),
    no('pipe', 'dynamodb:PutItem', a.results!, 'writes no table', [GRANT]),
    no('pipe', 'dynamodb:GetRecords', `${a.leases!}/stream/2026-01-01T00:00:00.000`, "another table's stream", [widenTo('identity', allowing('dynamodb:GetRecords'), `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/*`, "the events table's stream")]),
    no('pipe', 'sqs:SendMessage', a.pipeDlq!, 'without TLS', [TLS], { context: noTls }),

    // an edge uploader tagged frameaffinity-site=store-042: cli/commands/upload.ts, cli/video/*.ts
    ok('uploader', 'cloudformation:DescribeStacks', a.stack!, '`--stack <name>` reads the bucket from the outputs'),
    ok('uploader', 's3:PutObject', a.frame!, '`upload <dir>`: a frame'),
    ok('uploader', 's3:PutObject', a.segment!, '`upload <file>`, `stream`, `edge`: a segment'),
    ok('uploader', 's3:PutObject', a.endMarker!, '--end: the end marker'),
    ok('uploader', 's3:GetObject', a.segment!, '`stream` HEADs the highest segment at start (HeadObject is authorized as GetObject)'),
    ok('uploader', 's3:ListBucket', a.bucket!, "one listing of the video's prefix at start (resume, numbering)", { context: { 's3:prefix': `frames/${SITE}.door-1/` } }),
    no('uploader', 's3:PutObject', a.otherSite!, "another site's camera", [widenTo('identity', sid(UPLOADER_SIDS.objects), `${a.bucket!}/frames/*`, 'the site prefix from the tag')]),
    no('uploader', 's3:PutObject', a.longerSite!, 'a site whose name starts with its own', [widenTo('identity', sid(UPLOADER_SIDS.objects), `${a.bucket!}/frames/*`, 'the separator after the site')]),
    no('uploader', 's3:PutObject', a.noSite!, 'a video id without a site', [widenTo('identity', sid(UPLOADER_SIDS.objects), `${a.bucket!}/frames/*`, 'the site prefix from the tag')]),
    no('uploader', 's3:GetObject', a.otherSite!, "reading another site's frames", [widenTo('identity', sid(UPLOADER_SIDS.objects), `${a.bucket!}/frames/*`, 'the site prefix from the tag')]),
    no('uploader', 's3:PutObject', a.model!, 'replacing the model', [
      widenTo('identity', sid(UPLOADER_SIDS.objects), 'arn:aws:s3:::*', 'the frame bucket\'s frames/ prefix'),
      { remove: 'resource', match: sid(MODEL_DENY_SIDS.none), what: "the model bucket's deny" },
    ]),
    no('uploader', 's3:PutObject', a.legacyModel!, "putting a model in the frame bucket's models/", [
      widenTo('identity', sid(UPLOADER_SIDS.objects), `${a.bucket!}/*`, 'the frames/ prefix'),
      { remove: 'resource', match: sid(LEGACY_MODEL_DENY_SIDS.keep), what: "the frame bucket's models/ deny" },
    ]),
    no('uploader', 's3:PutObject', a.rules!, 'writing rules', [widenTo('identity', sid(UPLOADER_SIDS.objects), `${a.bucket!}/*`, 'the frames/ prefix')]),
    no('uploader', 's3:DeleteObject', a.frame!, 'deleting its own frames', [GRANT]),
    no('uploader', 's3:ListBucket', a.bucket!, 'listing every site', [{ dropCondition: 'identity', match: sid(UPLOADER_SIDS.list), what: 'the s3:prefix condition' }], { context: { 's3:prefix': 'frames/' } }),
    no('uploader', 's3:ListBucket', a.bucket!, "listing another site's camera", [{ dropCondition: 'identity', match: sid(UPLOADER_SIDS.list), what: 'the s3:prefix condition' }], { context: { 's3:prefix': 'frames/store-043.door-1/' } }),
    no('uploader', 'cloudformation:DescribeStacks', a.otherStack!, "another stack's outputs", [widenTo('identity', sid(UPLOADER_SIDS.stack), `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/*`, 'the stack ARN')]),
    no('uploader', 'dynamodb:PutItem', a.results!, 'writing the results table', [GRANT]),
    no('uploader', 'sqs:SendMessage', a.ingest!, 'forging S3 events', [GRANT]),
    no('uploader', 's3:PutObject', a.frame!, 'without TLS', [TLS], { context: noTls }),
    no('uploader', 's3:PutObject', `${a.bucket!}/frames/${SITE}.x.door-1/000042.jpg`, "a tag holding the separator (store-042.x) would reach into store-042's cameras", [
      { remove: 'identity', match: sid(UPLOADER_SIDS.badTag), what: 'the deny of a tag that is no site' },
    ], { tag: `${SITE}.x` }),
    // The engine leaves a variable with an empty value unresolved (the Allow cannot match); the deny makes it not matter what IAM does.
    no('uploader', 's3:PutObject', `${a.bucket!}/frames/.door-1/000042.jpg`, 'an empty tag', [{ remove: 'identity', match: sid(UPLOADER_SIDS.badTag), what: 'the deny of a tag that is no site' }, GRANT], { tag: '' }),
    no('uploader', 's3:PutObject', a.frame!, 'a principal without the site tag', [GRANT], { tag: null }),

    // any other principal of the account, even one allowed s3:* on *: the bucket policy still decides
    no('admin', 's3:PutObject', a.model!, 'the model bucket is read-only (no modelWriterRoleArn)', [{ remove: 'resource', match: sid(MODEL_DENY_SIDS.none), what: "the model bucket's deny" }]),
    no('admin', 's3:PutObject', `${a.modelBucket!}/elsewhere.onnx`, 'the deny covers the whole model bucket, not only models/', [{ remove: 'resource', match: sid(MODEL_DENY_SIDS.none), what: "the model bucket's deny" }]),
    no('admin', 's3:DeleteObjectVersion', a.model!, "deleting a model's old version", [{ remove: 'resource', match: sid(MODEL_DENY_SIDS.none), what: "the model bucket's deny" }]),
    no('admin', 's3:PutObject', a.legacyModel!, "a new model in the frame bucket's models/ (it is no longer versioned)", [{ remove: 'resource', match: sid(LEGACY_MODEL_DENY_SIDS.keep), what: "the frame bucket's models/ deny" }]),
    no('admin', 's3:DeleteObject', a.legacyModel!, 'pulling an old model from under a fleet that still loads it (no modelWriterRoleArn)', [{ remove: 'resource', match: sid(LEGACY_MODEL_DENY_SIDS.keep), what: "the frame bucket's models/ deny" }]),
    no('admin', 's3:GetObject', a.model!, 'without TLS', [TLS], { context: noTls }),
    no('admin', 's3:GetObject', a.frame!, 'without TLS', [TLS], { context: noTls }),
    no('admin', 'sqs:SendMessage', a.lastSlotDlq!, 'without TLS', [TLS], { context: noTls }),
  ];
}

// ---- evaluation --------------------------------------------------------------------------

/** The account principal of the `admin` rows: allowed everything by its identity policy. */
const ADMIN_POLICY: PolicyDocument = { Version: '2012-10-17', Statement: [{ Effect: 'Allow', Action: '*', Resource: '*' }] };

function caller(s: Synth, model: StackModel, c: Call): { principal: string; identityPolicies: { name: string; policy: PolicyDocument }[]; policyIds: string[]; context: Record<string, string | string[]> } {
  if (c.who === 'admin') return { principal: `arn:aws:iam::${ACCOUNT}:role/admin`, identityPolicies: [{ name: 'admin', policy: ADMIN_POLICY }], policyIds: [], context: {} };
  if (c.who === 'uploader') {
    const tag = c.tag === undefined ? SITE : c.tag;
    return {
      principal: `arn:aws:sts::${ACCOUNT}:assumed-role/edge-uploader/box-1`,
      identityPolicies: [model.managedPolicy(s.uploaderPolicy)],
      policyIds: [s.uploaderPolicy],
      context: tag === null ? {} : { [`aws:PrincipalTag/${DEFAULT_SITE_TAG}`]: tag },
    };
  }
  const role = s.roles[c.who];
  const identityPolicies = model.identityPoliciesOf(role);
  return { principal: model.arnOf(role), identityPolicies, policyIds: identityPolicies.map((p) => p.name), context: {} };
}

function evaluate(s: Synth, model: StackModel, c: Call): Promise<Decision> {
  const who = caller(s, model, c);
  return decide(model, { principal: who.principal, identityPolicies: who.identityPolicies, action: c.action, resource: c.resource, context: { ...who.context, ...c.context } });
}

/** The templates with `guards` applied; each must change at least one statement. */
function mutated(s: Synth, c: Call, guards: readonly Mutation[]): StackModel {
  const templates = clone(s.templates);
  const model = new StackModel(templates);
  const who = caller(s, s.model, c);
  const docsOf = (where: Where): { Statement: PolicyStatement[] }[] => {
    const ids = where === 'identity' ? who.policyIds : [s.model.resourcePolicyIdFor(c.resource) ?? ''];
    return ids.filter(Boolean).map((id) => model.resources[id]!.Properties!.PolicyDocument as { Statement: PolicyStatement[] });
  };
  for (const g of guards) {
    let changed = 0;
    if ('grant' in g) {
      const [doc] = docsOf('identity');
      if (!doc) throw new Error(`${c.who} has no policy of its own to grant ${c.action} in`);
      doc.Statement.push({ Effect: 'Allow', Action: c.action, Resource: c.resource });
      changed++;
    } else {
      const where = 'remove' in g ? g.remove : 'dropCondition' in g ? g.dropCondition : g.widen;
      for (const doc of docsOf(where)) {
        const keep = doc.Statement.filter((st) => {
          if (!g.match(st)) return true;
          changed++;
          if ('remove' in g) return false;
          if ('dropCondition' in g) delete st.Condition;
          else st.Resource = g.to;
          return true;
        });
        doc.Statement.splice(0, doc.Statement.length, ...keep);
      }
    }
    if (changed === 0) throw new Error(`mutation "${g.what}" matched no statement for ${c.who} ${c.action} ${c.resource}`);
  }
  return model;
}

const label = (c: Case) => `${c.who}: ${c.action} ${c.resource.replace(/^arn:aws:[a-z0-9-]+:[a-z0-9-]*:\d*:?/, '')}${c.context ? ` ${JSON.stringify(c.context)}` : ''}${c.tag !== undefined ? ` tag=${JSON.stringify(c.tag)}` : ''} (${c.why})`;

describe.each([4, 1000])('the stack at %i slots, evaluated', (slots) => {
  // The table's rows need ARNs from a synthesis; the rows themselves do not depend on the slot count.
  const rows = table(new Proxy({}, { get: (_t, key) => `<${String(key)}>` }) as Record<string, string>);

  let s: Synth;
  let cases: Case[];
  beforeAll(() => {
    s = synthAt(slots);
    cases = table(s.arn);
  }, 600_000);

  it('has every role of the stack in the table, or names it here with why it is not', () => {
    // Prepare: roles the table does not evaluate, each with its reason
    const outside: [RegExp, string][] = [
      [/^FleetInstanceRole/, "the ECS agent on the instance: the agent's actions, scoped to the cluster (docs/deploy.md §13)"],
      [/^NetworkVpcRejectedIAMRole/, 'VPC flow logs delivery: writes its own log group only'],
      [/^FleetTeardownProviderRole/, 'the Provider framework: invokes the teardown function only'],
      [/^BucketNotificationsHandler/, "aws-cdk-lib's deploy-time handler: PutBucketNotification on the bucket"],
      [/^CustomVpcRestrictDefaultSG/, "aws-cdk-lib's deploy-time handler: the default security group's rules"],
    ];
    const roles = Object.entries(s.model.resources).filter(([, r]) => r.Type === 'AWS::IAM::Role').map(([id]) => id);

    // Act
    const unaccounted = roles.filter((id) => !Object.values(s.roles).includes(id) && !outside.some(([pattern]) => pattern.test(id)));

    // Assess
    expect(unaccounted).toEqual([]);
  });

  it.each(rows.map((r, i) => [label(r), i] as const))('%s', async (_label, i) => {
    // Prepare
    const c = cases[i]!;

    // Act
    const decision = await evaluate(s, s.model, c);

    // Assess
    if (c.expect === 'Allowed') {
      expect(decision).toBe('Allowed');
      return;
    }
    expect(decision).not.toBe('Allowed');
    // Mutation: taking away every guard allows the call; with more than one guard, each alone leaves it denied.
    expect(await evaluate(s, mutated(s, c, c.guards), c), `allowed once ${c.guards.map((g) => g.what).join(' and ')} is gone`).toBe('Allowed');
    if (c.guards.length > 1) {
      for (const g of c.guards) expect(await evaluate(s, mutated(s, c, [g]), c), `still denied without ${g.what} alone`).not.toBe('Allowed');
    }
  }, 300_000);
});
