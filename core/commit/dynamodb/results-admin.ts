/**
 * The operator operations' access to a video's records and events on DynamoDB
 * ({@link ResultsAdmin}): reads through the results reader, and deletes each item with its
 * own condition on the token (BatchWriteItem has none), so a record or event a newer owner
 * committed is never removed.
 */
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { DeleteCommand, TransactWriteCommand, UpdateCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { eventsOfItem, replayCut } from '../../analytics/event-packing.ts';
import { storedEventsFrom } from '../../analytics/dynamodb/events-reader.ts';
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

  /**
   * Event ids sort by frame, so the items from the frame's id prefix hold its events and
   * later ones; a batch of rule events among them may also hold events before the frame
   * (event-packing.ts): it is replaced, in one transaction, by the same batch trimmed to
   * those and keyed by its new last event. Every removal is conditional on the token.
   * Life events of no frame (-1) stay. Counts events removed.
   */
  async deleteEventsFrom(videoId: string, fromFrame: number, maxToken: number): Promise<number> {
    let deleted = 0;
    const fenced = {
      ConditionExpression: 'attribute_exists(eventId) AND #token <= :old',
      ExpressionAttributeNames: { '#token': 'token' },
      ExpressionAttributeValues: { ':old': maxToken },
    };
    for (const item of await storedEventsFrom(this.t.ddb as DynamoDBDocumentClient, this.t.eventsTable, videoId, fromFrame)) {
      const cut = replayCut(item, fromFrame);
      if (cut.action === 'keep') continue;
      const remove = { TableName: this.t.eventsTable, Key: { videoId, eventId: item.eventId }, ...fenced };
      try {
        if (cut.action === 'delete') await this.t.ddb.send(new DeleteCommand(remove));
        else await this.t.ddb.send(new TransactWriteCommand({ TransactItems: [{ Delete: remove }, { Put: { TableName: this.t.eventsTable, Item: cut.item } }] }));
        deleted += cut.action === 'delete' ? eventsOfItem(item).length : cut.removed;
      } catch (e) {
        // A newer token's item stays; anything else (a conflict, a throttle) fails the operation.
        const newer = e instanceof ConditionalCheckFailedException || (e instanceof TransactionCanceledException && (e.CancellationReasons ?? []).some((r) => r.Code === 'ConditionalCheckFailed'));
        if (!newer) throw e;
      }
    }
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
