/**
 * The AWS services the bundles call that have no local stand-in, played on
 * 127.0.0.1 with the operations, shapes and error codes the bundles rely on:
 *
 *   Step Functions   StartExecution, DescribeExecution, ListExecutions, StopExecution,
 *                    SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat (the local engine)
 *   EventBridge      PutEvents, appended to the bridge's events.jsonl
 *   Secrets Manager  GetSecretValue of the template's secret, serving the Mapflow token
 *
 * S3 (s3rver) and DynamoDB (DynamoDB Local) have stand-ins of their own.
 */
import { randomUUID } from 'node:crypto';
import { appendFile, stat, truncate } from 'node:fs/promises';
import type { LocalEventRecord } from 'mapflow-bridge/functions/events/publisher.ts';
import type { ExecutionRecord, LocalEngine } from '../engine/engine.ts';
import { TaskTokenError, type LocalTaskTokens } from '../engine/task-tokens.ts';
import { STATE_PAYLOAD_LIMIT_BYTES } from '../engine/lambda.ts';
import { retryAfterNoSpace, type DiskHold } from '../disk-watch.ts';
import { AwsServiceError, startAwsJsonEndpoint, type AuthorizeHook, type RunningEndpoint } from './aws-endpoint.ts';

const epochSeconds = (iso: string | undefined) => (iso ? Date.parse(iso) / 1000 : undefined);

export interface StepFunctionsServiceOptions {
  engine: LocalEngine;
  taskTokens: LocalTaskTokens;
  /**
   * Called after a StartExecution that found the name taken (the bridge says
   * when a re-dropped file was already done); the answer waits for it, so the
   * note is made before the dispatch that caused it ends.
   */
  onDuplicateStart?: (name: string, input: unknown) => void | Promise<void>;
  authorize?: AuthorizeHook;
}

export function startStepFunctionsEndpoint(options: StepFunctionsServiceOptions): Promise<RunningEndpoint> {
  const { engine, taskTokens } = options;
  const machine = (arn: unknown) => {
    if (arn !== engine.stateMachineArn) throw new AwsServiceError('StateMachineDoesNotExist', `State Machine Does Not Exist: '${String(arn)}'`);
  };
  const execution = (arn: unknown): ExecutionRecord => {
    // Its executions (`execution:<machine>:<name>`) and its Map Runs' children (`execution:<machine>/<label>:<id>`).
    const executions = engine.stateMachineArn.replace(':stateMachine:', ':execution:');
    const record = typeof arn === 'string' && (arn.startsWith(`${executions}:`) || arn.startsWith(`${executions}/`)) ? engine.describe(arn) : undefined;
    if (!record) throw new AwsServiceError('ExecutionDoesNotExist', `Execution Does Not Exist: '${String(arn)}'`);
    return record;
  };
  /** What DescribeExecution and each ListExecutions entry say of an execution. */
  const summary = (record: ExecutionRecord) => ({
    executionArn: record.arn,
    stateMachineArn: engine.stateMachineArn,
    name: record.name,
    status: record.status,
    startDate: epochSeconds(record.startedAt),
    ...(record.stoppedAt ? { stopDate: epochSeconds(record.stoppedAt) } : {}),
  });
  const token = (input: Record<string, unknown>, work: (token: string) => void) => {
    try {
      work(typeof input.taskToken === 'string' ? input.taskToken : '');
      return {};
    } catch (error) {
      if (error instanceof TaskTokenError) throw new AwsServiceError(error.code, error.message);
      throw error;
    }
  };
  return startAwsJsonEndpoint({
    service: 'Step Functions',
    targetPrefix: 'AWSStepFunctions',
    jsonVersion: '1.0',
    ...(options.authorize ? { authorize: options.authorize } : {}),
    operations: {
      StartExecution: async (input) => {
        machine(input.stateMachineArn);
        const name = typeof input.name === 'string' && input.name ? input.name : randomUUID();
        let parsed: unknown = {};
        try {
          parsed = input.input === undefined ? {} : JSON.parse(String(input.input));
        } catch {
          throw new AwsServiceError('InvalidExecutionInput', 'Invalid State Machine Execution Input: the input is not JSON');
        }
        // StartExecution `input`: "Length Constraints: Maximum length of 262144" (UTF-8 bytes); AWS refuses the call.
        const inputBytes = Buffer.byteLength(String(input.input ?? '{}'), 'utf8');
        if (inputBytes > STATE_PAYLOAD_LIMIT_BYTES) {
          throw new AwsServiceError('ValidationException', `1 validation error detected: Value at 'input' failed to satisfy constraint: Member must have length less than or equal to ${STATE_PAYLOAD_LIMIT_BYTES}`);
        }
        const existing = engine.describe(name);
        const { outcome, execution: record } = engine.startExecution(name, parsed);
        if (outcome === 'duplicate') {
          await Promise.resolve(options.onDuplicateStart?.(name, parsed)).catch(() => undefined);
          // A running execution started again with the same input answers as the first start did (Standard workflows).
          const same = existing?.status === 'RUNNING' && JSON.stringify(existing.input) === JSON.stringify(parsed);
          if (!same) throw new AwsServiceError('ExecutionAlreadyExists', `Execution Already Exists: '${record.arn}'`);
        }
        return { executionArn: record.arn, startDate: epochSeconds(record.startedAt) };
      },
      DescribeExecution: (input) => {
        const record = execution(input.executionArn);
        return {
          ...summary(record),
          input: JSON.stringify(record.input ?? {}),
          ...(record.status === 'SUCCEEDED' ? { output: JSON.stringify(record.output ?? null) } : {}),
          ...(record.error ? { error: record.error.Error, cause: record.error.Cause } : {}),
        };
      },
      ListExecutions: (input) => {
        machine(input.stateMachineArn);
        const maxResults = typeof input.maxResults === 'number' && input.maxResults > 0 ? Math.min(input.maxResults, 1000) : 100;
        const offset = typeof input.nextToken === 'string' ? Number.parseInt(input.nextToken, 10) : 0;
        if (!Number.isInteger(offset) || offset < 0) throw new AwsServiceError('InvalidToken', 'Invalid pagination token');
        // Newest first, as AWS lists them.
        const all = engine
          .executions()
          .filter((record) => input.statusFilter === undefined || record.status === input.statusFilter)
          .sort((a, b) => b.startedAt.localeCompare(a.startedAt));
        const page = all.slice(offset, offset + maxResults);
        return {
          executions: page.map(summary),
          ...(offset + maxResults < all.length ? { nextToken: String(offset + maxResults) } : {}),
        };
      },
      StopExecution: async (input) => {
        const record = execution(input.executionArn);
        await engine.stopExecution(record.arn);
        return { stopDate: Date.now() / 1000 };
      },
      SendTaskSuccess: (input) => token(input, (t) => taskTokens.succeed(t, typeof input.output === 'string' ? input.output : 'null')),
      SendTaskFailure: (input) => token(input, (t) => taskTokens.fail(t, String(input.error ?? ''), String(input.cause ?? ''))),
      SendTaskHeartbeat: (input) => token(input, (t) => taskTokens.heartbeat(t)),
    },
  });
}

export interface EventBridgeServiceOptions {
  /** The events file (JSON lines, as packages/local/src/events/file.ts reads them). */
  eventsFile: string;
  /** The buses of the template, by name and ARN ('default' is always there). */
  buses: { name: string; arn: string }[];
  authorize?: AuthorizeHook;
  /** The disk of the events file: appends wait while it is full (appendWhole). Default: none, they fail at once. */
  disk?: DiskHold;
}

/**
 * Appends `text` to `file` whole, one append at a time: while `disk` is full
 * the append waits for space (EventBridge on AWS does not fail for a full
 * local disk); an append a full disk cut short is taken back (the file cut to
 * its size before, so no half line glues onto the next) and made again once
 * space is back. Without `disk`, or when the disk stays full past its hold, it fails.
 */
export function wholeAppender(file: string, disk?: DiskHold): (text: string) => Promise<void> {
  let last: Promise<unknown> = Promise.resolve();
  const append = async (text: string): Promise<void> => {
    for (;;) {
      if (disk?.full) await disk.whenFree('the events file');
      const before = await stat(file).then(
        (info) => info.size,
        () => 0,
      );
      try {
        await appendFile(file, text, 'utf8');
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC' || !disk) throw error;
        await truncate(file, before).catch(() => undefined);
        if (!(await retryAfterNoSpace(disk, 'the events file'))) throw error;
      }
    }
  };
  return (text) => {
    const next = last.then(() => append(text));
    last = next.catch(() => undefined);
    return next;
  };
}

/** EventBridge's limit for one PutEvents entry and for a call. */
const MAX_ENTRY_BYTES = 256 * 1024;
const MAX_ENTRIES = 10;

export function startEventBridgeEndpoint(options: EventBridgeServiceOptions): Promise<RunningEndpoint> {
  const known = new Set(['default', ...options.buses.flatMap((bus) => [bus.name, bus.arn])]);
  const append = wholeAppender(options.eventsFile, options.disk);
  return startAwsJsonEndpoint({
    service: 'EventBridge',
    targetPrefix: 'AWSEvents',
    jsonVersion: '1.1',
    ...(options.authorize ? { authorize: options.authorize } : {}),
    operations: {
      PutEvents: async (input) => {
        const entries = Array.isArray(input.Entries) ? (input.Entries as Record<string, unknown>[]) : [];
        if (entries.length === 0 || entries.length > MAX_ENTRIES) {
          throw new AwsServiceError('ValidationException', `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length between 1 and ${MAX_ENTRIES}`);
        }
        const lines: string[] = [];
        const results = entries.map((entry) => {
          const bus = typeof entry.EventBusName === 'string' ? entry.EventBusName : 'default';
          if (!known.has(bus)) throw new AwsServiceError('ResourceNotFoundException', `Event bus ${bus} does not exist.`);
          if (typeof entry.Source !== 'string' || typeof entry.DetailType !== 'string' || typeof entry.Detail !== 'string') {
            return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Parameters Source, DetailType and Detail are required.' };
          }
          if (Buffer.byteLength(JSON.stringify(entry)) > MAX_ENTRY_BYTES) return { ErrorCode: 'InvalidArgument', ErrorMessage: 'Total size of the entries in the request is over the limit.' };
          let detail: unknown;
          try {
            detail = JSON.parse(entry.Detail);
          } catch {
            return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
          }
          if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
          const time = typeof entry.Time === 'number' ? new Date(entry.Time * 1000) : new Date();
          const record = { time: time.toISOString(), source: entry.Source, detailType: entry.DetailType, detail } as LocalEventRecord;
          lines.push(JSON.stringify(record));
          return { EventId: randomUUID() };
        });
        // One append per call: concurrent publishers never interleave lines.
        if (lines.length > 0) await append(`${lines.join('\n')}\n`);
        return { FailedEntryCount: results.filter((r) => 'ErrorCode' in r).length, Entries: results };
      },
    },
  });
}

export interface SecretsManagerServiceOptions {
  secrets: { name: string; arn: string; value: () => string }[];
  authorize?: AuthorizeHook;
}

export function startSecretsManagerEndpoint(options: SecretsManagerServiceOptions): Promise<RunningEndpoint> {
  const find = (id: unknown) => {
    const secret = options.secrets.find((s) => id === s.arn || id === s.name || (typeof id === 'string' && s.arn.startsWith(`${id}-`)));
    if (!secret) throw new AwsServiceError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    return secret;
  };
  const created = Date.now() / 1000;
  return startAwsJsonEndpoint({
    service: 'Secrets Manager',
    targetPrefix: 'secretsmanager',
    jsonVersion: '1.1',
    ...(options.authorize ? { authorize: options.authorize } : {}),
    operations: {
      GetSecretValue: (input) => {
        const secret = find(input.SecretId);
        if (input.VersionStage !== undefined && input.VersionStage !== 'AWSCURRENT') {
          throw new AwsServiceError('ResourceNotFoundException', "Secrets Manager can't find the specified secret value for staging label: " + String(input.VersionStage));
        }
        return { ARN: secret.arn, Name: secret.name, VersionId: 'local-current', SecretString: secret.value(), VersionStages: ['AWSCURRENT'], CreatedDate: created };
      },
      DescribeSecret: (input) => {
        const secret = find(input.SecretId);
        return { ARN: secret.arn, Name: secret.name, CreatedDate: created };
      },
    },
  });
}
