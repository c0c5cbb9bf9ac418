import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DescribeTableCommand, DescribeTimeToLiveCommand, DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { GetQueueAttributesCommand, ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { SQSEvent } from 'aws-lambda';
import { slotQueueUrl } from '../../core/config.ts';
import { getTaskLauncher } from '../../core/fleet/launcher-registry.ts';
import { clientConfig, startLocalStack, type LocalStack, type StackFile } from '../../local/stack.ts';
import { isProcessAlive, waitFor } from './helpers.ts';
import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { eventItemOf } from '../../core/analytics/event-delivery.ts';
import { drainBusQueue, sampleEvents } from '../../harness/event-fixtures.ts';

describe('startLocalStack', () => {
  let stack: LocalStack;
  const routerEvents: SQSEvent[] = [];
  let janitorRuns = 0;
  /** Task-stopped events the janitor was invoked with, as EventBridge's rule delivers them. */
  const stoppedEvents: { detail: { startedBy: string; lastStatus: string; containers: { exitCode: number }[]; overrides: { containerOverrides: { environment: { name: string; value: string }[] }[] } } }[] = [];
  const workerLines: string[] = [];
  const stateDir = mkdtempSync(join(tmpdir(), 'local-stack-'));
  const envBefore = process.env.AWS_ENDPOINT_URL_S3;

  beforeAll(async () => {
    stack = await startLocalStack({
      prefix: 'StackTest',
      stateDir,
      quiet: true,
      tunables: { slotCount: 2, slotQueueMaxReceiveCount: 3, ingestMaxReceiveCount: 4 },
      routerHandler: async (event) => {
        routerEvents.push(event);
      },
      janitorHandler: async (event) => {
        if ((event as { 'detail-type'?: string })['detail-type'] === 'ECS Task State Change') stoppedEvents.push(event as never);
        else janitorRuns++;
      },
      janitorIntervalMs: 100,
      routerWaitTimeSeconds: 1,
      workerEntry: 'test/local/fixtures/fake-worker.ts',
      onWorkerLine: (line) => workerLines.push(line),
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('writes stack.json with endpoints, names, queue URLs and credentials', () => {
    // Act
    const file = JSON.parse(readFileSync(join(stateDir, 'stack.json'), 'utf8')) as StackFile;

    // Assess
    expect(file).toMatchObject({
      region: 'us-east-1',
      endpoints: stack.endpoints,
      bucket: 'stacktest-frames',
      tables: { results: 'StackTest-results', leases: 'StackTest-leases', events: 'StackTest-events' },
      queues: {
        eventBus: stack.eventBusQueueUrl,
        ingest: stack.wiring.ingestQueueUrl,
        ingestDlq: stack.wiring.ingestDlqUrl,
        slots: [slotQueueUrl(stack.wiring, 0), slotQueueUrl(stack.wiring, 1)],
      },
      credentials: stack.credentials,
      pids: { stack: process.pid, dynamodb: stack.dynamodbPid },
    });
    expect(file.endpoints.s3).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('creates tables from the shared shapes, with the GSI and TTL', async () => {
    // Prepare
    const ddb = new DynamoDBClient(clientConfig(stack).dynamodb);

    // Act
    const leases = await ddb.send(new DescribeTableCommand({ TableName: stack.wiring.leasesTable }));
    const results = await ddb.send(new DescribeTableCommand({ TableName: stack.wiring.resultsTable }));
    const ttl = await ddb.send(new DescribeTimeToLiveCommand({ TableName: stack.wiring.leasesTable }));

    // Assess
    expect(leases.Table!.KeySchema).toEqual([{ AttributeName: 'pk', KeyType: 'HASH' }]);
    expect(leases.Table!.GlobalSecondaryIndexes![0]).toMatchObject({
      IndexName: stack.wiring.pinnedSlotIndex,
      KeySchema: [
        { AttributeName: 'pinnedSlot', KeyType: 'HASH' },
        { AttributeName: 'pk', KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'KEYS_ONLY' },
    });
    expect(results.Table!.KeySchema).toEqual([
      { AttributeName: 'videoId', KeyType: 'HASH' },
      { AttributeName: 'frame', KeyType: 'RANGE' },
    ]);
    expect(ttl.TimeToLiveDescription).toMatchObject({ AttributeName: 'ttlEpochSeconds', TimeToLiveStatus: 'ENABLED' });
    ddb.destroy();
  });

  it('creates FIFO slot queues whose URLs the wiring predicts, each with a DLQ and redrive', async () => {
    // Prepare
    const sqs = new SQSClient(clientConfig(stack).sqs);

    // Act
    const listed = (await sqs.send(new ListQueuesCommand({ QueueNamePrefix: 'StackTest-' }))).QueueUrls ?? [];
    const slot1 = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: slotQueueUrl(stack.wiring, 1), AttributeNames: ['All'] }));
    const ingest = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: stack.wiring.ingestQueueUrl, AttributeNames: ['All'] }));

    // Assess
    expect(listed).toEqual(expect.arrayContaining([slotQueueUrl(stack.wiring, 0), slotQueueUrl(stack.wiring, 1), stack.wiring.ingestQueueUrl, stack.eventBusQueueUrl]));
    // Two slot queues and their DLQs, ingest and its DLQ, and the event bus's stand-in.
    expect(listed).toHaveLength(7);
    expect(slot1.Attributes).toMatchObject({ FifoQueue: 'true', VisibilityTimeout: String(stack.tunables.slotQueueVisibilitySeconds) });
    expect(JSON.parse(slot1.Attributes!.RedrivePolicy!)).toMatchObject({
      deadLetterTargetArn: expect.stringContaining('StackTest-slot-1-dlq.fifo'),
      maxReceiveCount: 3,
    });
    expect(JSON.parse(ingest.Attributes!.RedrivePolicy!)).toMatchObject({
      deadLetterTargetArn: expect.stringContaining('StackTest-ingest-dlq'),
      maxReceiveCount: 4,
    });
    sqs.destroy();
  });

  it('reaches every emulator with clients configured only by the environment it exports', async () => {
    // Prepare: no endpoint in code, exactly like the Lambda and worker client factory.
    const s3 = new S3Client({ forcePathStyle: process.env.S3_FORCE_PATH_STYLE === 'true' });
    const ddb = new DynamoDBClient({});
    const sqs = new SQSClient({});

    // Act
    await s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: 'frames/env-check/000001.jpg', Body: 'x' }));
    const head = await s3.send(new HeadObjectCommand({ Bucket: stack.wiring.bucket, Key: 'frames/env-check/000001.jpg' }));
    const tables = await ddb.send(new ListTablesCommand({}));
    const attrs = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: stack.wiring.ingestQueueUrl, AttributeNames: ['QueueArn'] }));

    // Assess
    expect(head.ContentLength).toBe(1);
    expect(tables.TableNames).toEqual(expect.arrayContaining([stack.wiring.leasesTable, stack.wiring.resultsTable]));
    expect(attrs.Attributes!.QueueArn).toMatch(/:StackTest-ingest$/);
    expect(process.env.AWS_ENDPOINT_URL_S3).toBe(stack.endpoints.s3);
    for (const c of [s3, ddb, sqs]) c.destroy();
  });

  it('delivers the TestEvent and frame notifications to the router handler through the ingest queue', async () => {
    // Act
    await stack.clients.s3.send(new PutObjectCommand({ Bucket: stack.wiring.bucket, Key: 'frames/v1/000001.jpg', Body: Buffer.alloc(321) }));

    // Assess
    const bodies = await waitFor('router saw the frame', () => {
      const all = routerEvents.flatMap((e) => e.Records.map((r) => JSON.parse(r.body)));
      return all.some((b) => b.Records?.[0]?.s3?.object?.key === 'frames/v1/000001.jpg') ? all : undefined;
    });
    expect(bodies).toContainEqual(expect.objectContaining({ Event: 's3:TestEvent', Bucket: stack.wiring.bucket }));
    const frame = bodies.find((b) => b.Records?.[0]?.s3?.object?.key === 'frames/v1/000001.jpg');
    expect(frame.Records[0].s3.object.size).toBe(321);
    expect(routerEvents[0]!.Records[0]!.eventSourceARN).toMatch(/:StackTest-ingest$/);
  });

  it('runs the janitor on its schedule', async () => {
    await waitFor('two janitor runs', () => janitorRuns >= 2);
  });

  it('injects its launcher through the registry, and launched workers get the wiring', async () => {
    // Act
    const launcher = getTaskLauncher();
    const result = await launcher!.launch({ slot: 1, launchSeq: 1, reason: 'test' });

    // Assess
    expect(launcher).toBe(stack.launcher);
    expect(result.launched).toBe(true);
    const envLine = await waitFor('worker env', () => workerLines.find((l) => l.startsWith(`[slot-1 ${result.taskId}] ENV `)));
    expect(JSON.parse(envLine.slice(envLine.indexOf('ENV ') + 4))).toMatchObject({
      SLOT_ID: '1',
      SLOT_QUEUE_URL_PREFIX: stack.wiring.slotQueueUrlPrefix,
      AWS_ENDPOINT_URL_DYNAMODB: stack.endpoints.dynamodb,
    });
    const file = JSON.parse(readFileSync(stack.stackFile, 'utf8')) as StackFile;
    expect(file.pids.workers).toEqual([expect.objectContaining({ slot: 1, pid: Number(result.taskId) })]);
  });

  it('tells the janitor of every worker that stops, exit 0 included, as the STOPPED rule does in AWS', async () => {
    // Prepare: a worker that drains on SIGTERM and exits 0 (a drained worker, or one that
    // gave up claiming its slot: its stop is what voids its launch grant).
    const launched = await stack.launcher.launch({ slot: 0, launchSeq: 7, reason: 'test' });
    const pid = Number(launched.taskId);
    await waitFor('worker env', () => workerLines.find((l) => l.startsWith(`[slot-0 ${pid}] ENV `)));

    // Act
    stack.launcher.kill({ pid }, 'SIGTERM');
    const exited = await stack.launcher.waitForExit(pid);

    // Assess
    expect(exited?.exitCode).toBe(0);
    const event = await waitFor('the stopped event', () => stoppedEvents.find((e) => e.detail.overrides.containerOverrides[0]!.environment.some((v) => v.value === exited!.workerId)));
    expect(event.detail).toMatchObject({ lastStatus: 'STOPPED', startedBy: 'slot-0', containers: [{ exitCode: 0 }] });
  });

  it('relays the events table\'s stream to the queue named like the bus, as the pipe does in AWS', async () => {
    // Prepare
    const [item] = sampleEvents('stack-events', 1);

    // Act: written as the worker writes it, with the stack's own DocumentClient
    await stack.clients.ddb.send(new PutCommand({ TableName: stack.wiring.eventsTable, Item: item }));
    const got = await waitFor('the event on the bus queue', async () => {
      const events = await drainBusQueue(stack.clients.sqs, stack.eventBusQueueUrl);
      return events.length > 0 ? events : undefined;
    }, 20_000);

    // Assess
    expect(stack.eventBusQueueUrl).toMatch(/\/StackTest-events$/);
    expect(got.map((e) => [e.source, e['detail-type'], eventItemOf(e.detail)])).toEqual([['frame-affinity', item!.detailType, item]]);
    expect(stack.eventRelay?.counts).toMatchObject({ delivered: 1, sendFailures: 0 });
  });

  it('stops everything: workers, Java, stack.json, registry and environment', async () => {
    // Prepare
    // The workers still running (an earlier test stopped one).
    const pids = [stack.dynamodbPid, ...stack.launcher.workers().filter((w) => w.exitedAtMs === null).map((w) => w.pid)];
    expect(pids.every(isProcessAlive)).toBe(true);

    // Act
    await stack.stop();

    // Assess
    expect(pids.filter(isProcessAlive)).toEqual([]);
    expect(existsSync(stack.stackFile)).toBe(false);
    expect(getTaskLauncher()).toBeUndefined();
    expect(process.env.AWS_ENDPOINT_URL_S3).toBe(envBefore);
  });
});
