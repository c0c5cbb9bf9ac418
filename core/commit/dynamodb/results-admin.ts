/**
 * The operator operations' access to a video's records and events on DynamoDB
 * ({@link ResultsAdmin}): reads through the results reader, and deletes each item with its
 * own condition on the token (BatchWriteItem has none), so a record or event a newer owner
 * committed is never removed.
 */
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, QueryCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { eventId } from '../../analytics/event-schema.ts';
import type { ResultsAdmin, SummaryCounts } from '../port.ts';
import type { FrameResultItem } from '../results.ts';
import { SUMMARY_FRAME } from '../results.ts';
import { queryResults } from './results-reader.ts';

/** Where the results and events tables are. */
export interface ResultsAdminTables {
  readonly ddb: Pick<DynamoDBDocumentClient, 'send'>;
  readonly resultsTable: string;
  readonly eventsTable: string;
}

export class DynamoDbResultsAdmin implements ResultsAdmin {
  private readonly t: ResultsAdminTables;

  constructor(tables: ResultsAdminTables) {
    this.t = tables;
  }

  pages(videoId: string, range: { readonly fromFrame?: number; readonly beforeFrame?: number } = {}): AsyncIterable<readonly FrameResultItem[]> {
    return queryResults({ ddb: this.t.ddb as DynamoDBDocumentClient, resultsTable: this.t.resultsTable }, videoId, range);
  }

  async deleteRecord(videoId: string, frame: number, maxToken: number): Promise<'deleted' | 'absent' | 'newer'> {
    try {
      const r = await this.t.ddb.send(
        new DeleteCommand({
          TableName: this.t.resultsTable,
          Key: { videoId, frame },
          ConditionExpression: 'attribute_not_exists(#token) OR #token <= :old',
          ExpressionAttributeNames: { '#token': 'token' },
          ExpressionAttributeValues: { ':old': maxToken },
          ReturnValues: 'ALL_OLD',
        }),
      );
      return r.Attributes ? 'deleted' : 'absent';
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return 'newer';
      throw e;
    }
  }

  /** Event ids sort by frame, so one query from the frame's id prefix finds them; life events of no frame (-1) stay. */
  async deleteEventsFrom(videoId: string, fromFrame: number, maxToken: number): Promise<number> {
    let deleted = 0;
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.t.ddb.send(
        new QueryCommand({
          TableName: this.t.eventsTable,
          KeyConditionExpression: 'videoId = :v AND eventId >= :from',
          ExpressionAttributeValues: { ':v': videoId, ':from': eventId({ frame: fromFrame, kind: 'video.started' }).split('#')[0]! },
          ProjectionExpression: 'eventId',
          ConsistentRead: true,
          ...(start ? { ExclusiveStartKey: start } : {}),
        }),
      );
      for (const item of page.Items ?? []) {
        try {
          await this.t.ddb.send(
            new DeleteCommand({
              TableName: this.t.eventsTable,
              Key: { videoId, eventId: item.eventId },
              ConditionExpression: 'attribute_exists(eventId) AND #token <= :old',
              ExpressionAttributeNames: { '#token': 'token' },
              ExpressionAttributeValues: { ':old': maxToken },
            }),
          );
          deleted++;
        } catch (e) {
          if (!(e instanceof ConditionalCheckFailedException)) throw e;
        }
      }
      start = page.LastEvaluatedKey;
    } while (start);
    return deleted;
  }

  async reopenSummary(videoId: string, counts: SummaryCounts, token: number, nowMs: number): Promise<boolean> {
    try {
      await this.t.ddb.send(
        new UpdateCommand({
          TableName: this.t.resultsTable,
          Key: { videoId, frame: SUMMARY_FRAME },
          UpdateExpression: 'SET #status = :active, framesOk = :ok, framesLate = :late, framesFailed = :failed, framesGap = :gap, #token = :token, updatedAtMs = :now',
          ConditionExpression: 'attribute_exists(videoId) AND #token <= :token',
          ExpressionAttributeNames: { '#status': 'status', '#token': 'token' },
          ExpressionAttributeValues: {
            ':active': 'active',
            ':ok': counts.framesOk,
            ':late': counts.framesLate,
            ':failed': counts.framesFailed,
            ':gap': counts.framesGap,
            ':token': token,
            ':now': nowMs,
          },
        }),
      );
      return true;
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) return false;
      throw e;
    }
  }
}
