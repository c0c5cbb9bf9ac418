/**
 * What SQS FIFO accepts and how it refuses, for the model (core/ingest/memory/sqs-fifo-model.ts):
 * the documented limits, request and entry validation, and errors shaped like the SDK's.
 */
import { createHash, randomUUID } from 'node:crypto';
import {
  BatchEntryIdsNotDistinct,
  BatchRequestTooLong,
  EmptyBatchRequest,
  InvalidBatchEntryId,
  InvalidMessageContents,
  MessageNotInflight,
  QueueDoesNotExist,
  ReceiptHandleIsInvalid,
  SQSServiceException,
  TooManyEntriesInBatchRequest,
  type MessageAttributeValue,
} from '@aws-sdk/client-sqs';
import type { Input, QueueState } from './types.ts';

/** SQS's limits, as documented (Amazon SQS message quotas). */
export const SQS_LIMITS = Object.freeze({
  maxBatchEntries: 10,
  maxReceiveMessages: 10,
  maxWaitTimeSeconds: 20,
  maxVisibilityTimeoutSeconds: 43_200,
  maxIdLength: 128,
  maxBatchEntryIdLength: 80,
  /** 256 KiB: one message (body + message attributes), and one batch in all. */
  maxMessageBytes: 262_144,
  dedupWindowMs: 5 * 60 * 1000,
  defaultVisibilityTimeoutSeconds: 30,
});

/** MessageGroupId / MessageDeduplicationId: alphanumerics and punctuation, 1-128 characters. */
const ID_PATTERN = /^[A-Za-z0-9!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]{1,128}$/;
const BATCH_ENTRY_ID_PATTERN = /^[A-Za-z0-9_-]{1,80}$/;
/** Characters SQS rejects in a body: outside #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF. */
const FORBIDDEN_BODY_CHARS = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;

/** Builds an error shaped like the SDK's service exceptions (`name` = SQS error code). */
export function sqsError(name: string, message: string, fault: 'client' | 'server' = 'client'): SQSServiceException {
  const $metadata = { httpStatusCode: fault === 'client' ? 400 : 500, requestId: randomUUID(), attempts: 1, totalRetryDelay: 0 };
  const known: Record<string, new (o: { message: string; $metadata: typeof $metadata }) => SQSServiceException> = {
    BatchEntryIdsNotDistinct,
    BatchRequestTooLong,
    EmptyBatchRequest,
    InvalidBatchEntryId,
    InvalidMessageContents,
    MessageNotInflight,
    QueueDoesNotExist,
    ReceiptHandleIsInvalid,
    TooManyEntriesInBatchRequest,
  };
  const Known = known[name];
  if (Known) return new Known({ message, $metadata });
  return new SQSServiceException({ name, $fault: fault, $metadata, message });
}

/** A throttling error as SQS sends it (`RequestThrottled`), for `SqsFifoModel.throwOn`. */
export function throttled(): SQSServiceException {
  return sqsError('RequestThrottled', 'Rate exceeded', 'client');
}

/** The error an aborted SDK call rejects with. */
export function abortError(signal: AbortSignal): Error {
  // As @smithy/node-http-handler builds it.
  const reason: unknown = signal.reason;
  const e = new Error(reason instanceof Error || reason === undefined ? 'Request aborted' : String(reason));
  e.name = 'AbortError';
  if (reason instanceof Error) (e as Error & { cause?: unknown }).cause = reason;
  return e;
}

/** MD5 of a body, as SQS reports it (MD5OfBody / MD5OfMessageBody). */
export function md5(text: string): string {
  return createHash('md5').update(text, 'utf8').digest('hex');
}

/** The bytes message attributes add to a message's size. */
export function attributesBytes(attrs: Record<string, MessageAttributeValue> | undefined): number {
  let n = 0;
  for (const [k, v] of Object.entries(attrs ?? {})) {
    n += Buffer.byteLength(k) + Buffer.byteLength(v.DataType ?? '');
    if (v.StringValue !== undefined) n += Buffer.byteLength(v.StringValue);
    if (v.BinaryValue !== undefined) n += v.BinaryValue.byteLength;
  }
  return n;
}

/** Validates one message to send; returns an error (code + message) or undefined. */
export function checkEntry(q: QueueState, e: Input, maxMessageBytes: number): { code: string; message: string } | undefined {
  const body = e.MessageBody;
  if (typeof body !== 'string' || body.length === 0) return { code: 'MissingParameter', message: 'The request must contain the parameter MessageBody.' };
  if (FORBIDDEN_BODY_CHARS.test(body)) return { code: 'InvalidMessageContents', message: 'Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF' };
  const size = Buffer.byteLength(body) + attributesBytes(e.MessageAttributes);
  if (size > maxMessageBytes) {
    return { code: 'InvalidParameterValue', message: `One or more parameters are invalid. Reason: Message must be shorter than ${maxMessageBytes} bytes.` };
  }
  if (e.DelaySeconds !== undefined && e.DelaySeconds !== 0) {
    return { code: 'InvalidParameterValue', message: `Value ${e.DelaySeconds} for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.` };
  }
  if (e.MessageGroupId === undefined || e.MessageGroupId === '') return { code: 'MissingParameter', message: 'The request must contain the parameter MessageGroupId.' };
  if (typeof e.MessageGroupId !== 'string' || !ID_PATTERN.test(e.MessageGroupId)) {
    return { code: 'InvalidParameterValue', message: `Value ${String(e.MessageGroupId)} for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.` };
  }
  if (e.MessageDeduplicationId === undefined) {
    if (!q.contentBasedDeduplication) {
      return { code: 'InvalidParameterValue', message: 'The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly' };
    }
  } else if (typeof e.MessageDeduplicationId !== 'string' || !ID_PATTERN.test(e.MessageDeduplicationId)) {
    return { code: 'InvalidParameterValue', message: `Value ${String(e.MessageDeduplicationId)} for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length.` };
  }
  return undefined;
}

/** Checks a batch request as a whole (count, ids); throws SQS's error for the request. */
export function checkBatch(entries: unknown): Input[] {
  if (!Array.isArray(entries) || entries.length === 0) throw sqsError('EmptyBatchRequest', 'There should be at least one SendMessageBatchRequestEntry in the request.');
  if (entries.length > SQS_LIMITS.maxBatchEntries) {
    throw sqsError('TooManyEntriesInBatchRequest', `Maximum number of entries per request are ${SQS_LIMITS.maxBatchEntries}. You have sent ${entries.length}.`);
  }
  const ids = new Set<string>();
  for (const e of entries as Input[]) {
    if (typeof e.Id !== 'string' || !BATCH_ENTRY_ID_PATTERN.test(e.Id)) {
      throw sqsError('InvalidBatchEntryId', 'A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.');
    }
    if (ids.has(e.Id)) throw sqsError('BatchEntryIdsNotDistinct', `Id ${e.Id} repeated.`);
    ids.add(e.Id);
  }
  return entries as Input[];
}

/**
 * Checks a ReceiveMessage request's numbers (throws SQS's error); returns them with
 * SQS's defaults filled in (one message, no wait, the queue's visibility timeout).
 */
export function checkReceive(input: Input, queueVisibilitySeconds: number): { max: number; wait: number; vt: number } {
  const max = input.MaxNumberOfMessages ?? 1;
  if (!Number.isInteger(max) || max < 1 || max > SQS_LIMITS.maxReceiveMessages) {
    throw sqsError('InvalidParameterValue', `Value ${max} for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.`);
  }
  const wait = input.WaitTimeSeconds ?? 0;
  if (!Number.isInteger(wait) || wait < 0 || wait > SQS_LIMITS.maxWaitTimeSeconds) {
    throw sqsError('InvalidParameterValue', `Value ${wait} for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.`);
  }
  const vt = input.VisibilityTimeout ?? queueVisibilitySeconds;
  if (!Number.isInteger(vt) || vt < 0 || vt > SQS_LIMITS.maxVisibilityTimeoutSeconds) {
    throw sqsError('InvalidParameterValue', `Value ${vt} for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.`);
  }
  return { max, wait, vt };
}
