/**
 * The launch-grant writes on a slot item (`slot#{n}` in the leases table), split out of
 * SlotLeaseStore, which delegates to them: grant, withdraw, record the launched task.
 * Each is one conditional UpdateItem; the decisions they mirror are lease-logic.ts's.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LivenessOptions } from '../lease-logic.ts';

const slotKey = (slot: number) => `slot#${slot}`;

/** The table a grant is written to. */
export interface LaunchGrantTable {
  readonly ddb: DynamoDBDocumentClient;
  readonly tableName: string;
}

/**
 * Grants one launch for a slot: succeeds for one caller per grace window, only
 * while the slot has no live owner (or `force`, when its task is known to have
 * stopped, or its owner missed heartbeats), and never during the backoff of a launch
 * that did not happen ({@link withdrawLaunchGrant}). "No live owner" and "missed heartbeats"
 * allow `clockSkewToleranceMs`, as lease-logic's needsLaunch does. Returns the launch
 * sequence number. The grant only holds the slot while its launch may still come: a
 * caller whose launch failed withdraws it, and the janitor voids one whose task stopped.
 */
export async function requestLaunchGrant(t: LaunchGrantTable, slot: number, nowMs: number, o: LivenessOptions, mode: 'if-dead' | 'force'): Promise<number | undefined> {
  const skewMs = Math.max(0, o.clockSkewToleranceMs ?? 0);
  const graceCutoffMs = nowMs - o.taskStartGraceSeconds * 1000;
  const staleHeartbeatMs = nowMs - 2 * o.heartbeatIntervalSeconds * 1000 - skewMs;
  const grace = '(attribute_not_exists(launchRequestedAtMs) OR launchRequestedAtMs < :cutoff OR launchRequestedAtMs < heartbeatAtMs)';
  const backoff = ' AND (attribute_not_exists(launchRetryAtMs) OR launchRetryAtMs <= :now)';
  const dead =
    mode === 'force'
      ? ''
      : ' AND (attribute_not_exists(#owner) OR attribute_not_exists(expiresAtMs) OR expiresAtMs <= :lapsed OR heartbeatAtMs < :stale)';
  try {
    const r = await t.ddb.send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: { pk: slotKey(slot) },
        UpdateExpression: 'SET launchRequestedAtMs = :now, slot = :slot, videoCount = if_not_exists(videoCount, :zero) ADD launchSeq :one REMOVE launchTaskId',
        ConditionExpression: `${grace}${backoff}${dead}`,
        ExpressionAttributeNames: mode === 'force' ? undefined : { '#owner': 'owner' },
        ExpressionAttributeValues: {
          ':now': nowMs,
          ':cutoff': graceCutoffMs,
          ':slot': slot,
          ':one': 1,
          ':zero': 0,
          ...(mode === 'force' ? {} : { ':stale': staleHeartbeatMs, ':lapsed': nowMs - skewMs }),
        },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return Number(r.Attributes?.launchSeq);
  } catch (e) {
    if (e instanceof ConditionalCheckFailedException) return undefined;
    throw e;
  }
}

/**
 * Withdraws the launch grant `launchSeq` of a slot because its launch did not happen
 * (RunTask throttled, denied, answered `failures[]`; or the task stopped before its
 * first heartbeat): the slot stops counting as launching, and a new grant is possible
 * from `retryAtMs` (jittered backoff). Conditional on the grant still being `launchSeq`:
 * a newer grant by someone else is left alone. Returns whether it was withdrawn.
 */
export async function withdrawLaunchGrant(t: LaunchGrantTable, slot: number, launchSeq: number, retryAtMs: number): Promise<boolean> {
  try {
    await t.ddb.send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: { pk: slotKey(slot) },
        UpdateExpression: 'SET launchRequestedAtMs = :zero, launchRetryAtMs = :retry ADD launchFailures :one REMOVE launchTaskId',
        ConditionExpression: 'launchSeq = :seq',
        ExpressionAttributeValues: { ':seq': launchSeq, ':retry': retryAtMs, ':zero': 0, ':one': 1 },
      }),
    );
    return true;
  } catch (e) {
    if (e instanceof ConditionalCheckFailedException) return false;
    throw e;
  }
}

/**
 * Records the task a granted launch started (ECS task ARN, local pid), so the janitor
 * can ask its launcher about it instead of waiting out the grace, and resets the
 * failure count that sizes the backoff. Conditional on the grant still being `launchSeq`.
 */
export async function recordLaunchedTaskOnSlot(t: LaunchGrantTable, slot: number, launchSeq: number, taskId: string): Promise<boolean> {
  try {
    await t.ddb.send(
      new UpdateCommand({
        TableName: t.tableName,
        Key: { pk: slotKey(slot) },
        UpdateExpression: 'SET launchTaskId = :task, launchFailures = :zero',
        ConditionExpression: 'launchSeq = :seq',
        ExpressionAttributeValues: { ':seq': launchSeq, ':task': taskId, ':zero': 0 },
      }),
    );
    return true;
  } catch (e) {
    if (e instanceof ConditionalCheckFailedException) return false;
    throw e;
  }
}
