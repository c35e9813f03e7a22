/**
 * What an operator does to a job: run a FAILED job again (`jobs retry`) and
 * stop a job in flight (`jobs cancel`). The same code runs against the local
 * bridge (inside the `start` process, reached through its control endpoint)
 * and against a deployed stack (from the command line, with AWS credentials);
 * only the backend differs.
 */
import { DescribeStacksCommand, CloudFormationClient } from '@aws-sdk/client-cloudformation';
import { StartExecutionCommand, StopExecutionCommand, ExecutionDoesNotExist, ExecutionAlreadyExists } from '@aws-sdk/client-sfn';
import { eventDetailFromRow } from 'mapflow-bridge/functions/events/publisher.ts';
import { EVENT_DETAIL_TYPES, isFinalStatus, type EventDetailType, type ExecutionInput, type JobPart, type LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import { partsCharge } from 'mapflow-bridge/functions/core/credits.ts';
import { resultPrefix } from 'mapflow-bridge/functions/routing/index.ts';
import type { Ledger } from 'mapflow-bridge/functions/ledger/ledger.ts';
import type { MapflowClient } from 'mapflow-bridge/functions/mapflow/index.ts';
import { createBridgeContext } from 'mapflow-bridge/functions/runtime/context.ts';
import { loadConfig } from 'mapflow-bridge/functions/runtime/config.ts';

/** A job cannot be retried or cancelled (the reason says why and what to do). */
export class OperationRefused extends Error {
  constructor(
    readonly code: 'JOB_NOT_FOUND' | 'NOT_RETRYABLE' | 'ALREADY_RETRIED' | 'ALREADY_FINAL' | 'NO_EXECUTION_CONTROL',
    message: string,
  ) {
    super(message);
    this.name = 'OperationRefused';
  }
}

/** What retry and cancel need from a bridge. */
export interface OperatorBackend {
  readonly ledger: Ledger;
  /** Frees every concurrency slot of the job. */
  releaseSlots(jobId: string): Promise<void>;
  publish(detailType: EventDetailType, row: LedgerRow): Promise<void>;
  /** Starts the state machine for a job (execution name = job id). */
  startExecution(input: ExecutionInput): Promise<{ executionArn?: string }>;
  /** Stops the job's execution; false when it was not running. */
  stopExecution(row: LedgerRow): Promise<boolean>;
  mapflow(): Promise<Pick<MapflowClient, 'deleteProcessing'>>;
  /** The results folder of an input key (where Store Results wrote its parts). */
  resultPrefixOf(inputKey: string): string;
  now(): Date;
}

export interface RetryOutcome {
  jobId: string;
  retryOf: string;
  attempt: number;
  executionArn?: string;
}

/** The id of the retry of `row`: the original job's id and the attempt number (`<id>-r2`, `<id>-r3`, ...). */
export function retryJobId(row: Pick<LedgerRow, 'jobId' | 'retryOf' | 'attempt'>): { jobId: string; attempt: number } {
  const attempt = (row.attempt ?? 1) + 1;
  const root = row.retryOf ? row.jobId.replace(/-r\d+$/, '') : row.jobId;
  return { jobId: `${root}-r${attempt}`, attempt };
}

/**
 * Runs a FAILED (or CANCELLED) job again as a new job: a new ledger row linked
 * to the old one both ways (`retryOf`/`attempt` and `retriedBy`), a
 * `Job Received` event, and a new execution. SUCCEEDED and REJECTED jobs are
 * refused with the reason; so is a job in flight, or one already retried.
 */
export async function retryJob(backend: OperatorBackend, jobId: string): Promise<RetryOutcome> {
  const old = await backend.ledger.get(jobId);
  if (!old) throw new OperationRefused('JOB_NOT_FOUND', `no job '${jobId}' in the ledger.`);
  if (old.status === 'SUCCEEDED') {
    throw new OperationRefused('NOT_RETRYABLE', `job ${jobId} SUCCEEDED: its results are under ${old.resultPrefix ?? 'results/'}; there is nothing to retry.`);
  }
  if (old.status === 'REJECTED') {
    const why = old.error ? `${old.error.code}: ${old.error.message}` : 'the input cannot be processed';
    throw new OperationRefused('NOT_RETRYABLE', `job ${jobId} was REJECTED (${why}); running the same input again would be rejected again. Fix the file and drop it again.`);
  }
  if (!isFinalStatus(old.status)) {
    throw new OperationRefused('NOT_RETRYABLE', `job ${jobId} is still ${old.status}; wait for it to end, or cancel it first (jobs cancel ${jobId}).`);
  }
  if (old.retriedBy) throw new OperationRefused('ALREADY_RETRIED', `job ${jobId} was already retried as ${old.retriedBy}; retry that one instead.`);

  const next = retryJobId(old);
  const { created, row } = await backend.ledger.register({
    jobId: next.jobId,
    input: old.input,
    kind: old.kind,
    routeName: old.routeName,
    retryOf: old.jobId,
    attempt: next.attempt,
  });
  // The link back; a concurrent retry of the same job registers the same id, so both agree.
  await backend.ledger.update(old.jobId, { retriedBy: next.jobId });
  if (created) await backend.publish(EVENT_DETAIL_TYPES.RECEIVED, row);
  const { executionArn } = await backend.startExecution({ jobId: next.jobId, input: old.input });
  return { jobId: next.jobId, retryOf: old.jobId, attempt: next.attempt, ...(executionArn ? { executionArn } : {}) };
}

export interface CancelOutcome {
  jobId: string;
  status: 'CANCELLED';
  executionStopped: boolean;
  /** Mapflow processings deleted (the API has no cancel: DELETE /processings/{id} is how a processing is stopped). */
  processingsDeleted: string[];
  /** Processings that had finished (OK) and were kept, with their results (all are deleted with `deleteFinished`). */
  processingsKept: string[];
  /** Processings that could not be deleted, with the reason. */
  processingErrors: { processingId: string; error: string }[];
  /** Credits Mapflow charged for the job's parts (finished or not); undefined when no part's cost is known. */
  creditsCharged?: number;
}

export interface CancelOptions {
  /** Recorded in the ledger and the event. */
  reason?: string;
  /** Also delete the processings that had finished (their results on Mapflow go with them; those already stored stay in the bucket). */
  deleteFinished?: boolean;
}

/** A part whose processing finished: Mapflow is done with it and (once stored) its results are in the bucket. */
function finished(part: JobPart): boolean {
  return part.status === 'OK' || Boolean(part.resultKey);
}

/**
 * Cancels a job in flight: records CANCELLED first (so no step can finish it
 * afterwards: a final status is never left), stops the execution, deletes its
 * unfinished Mapflow processings (finished ones are kept, with their stored
 * results, unless `deleteFinished`), records the credits already charged,
 * frees its slots and publishes `Job Cancelled`.
 */
export async function cancelJob(backend: OperatorBackend, jobId: string, options: CancelOptions | string = {}): Promise<CancelOutcome> {
  const { reason = 'cancelled by an operator', deleteFinished = false } = typeof options === 'string' ? { reason: options } : options;
  const current = await backend.ledger.get(jobId);
  if (!current) throw new OperationRefused('JOB_NOT_FOUND', `no job '${jobId}' in the ledger.`);
  if (isFinalStatus(current.status)) throw new OperationRefused('ALREADY_FINAL', `job ${jobId} has already ended ${current.status}; there is nothing to cancel.`);

  const error = { code: 'CANCELLED', message: reason };
  const { changed, row } = await backend.ledger.transition(jobId, 'CANCELLED', { error }, `CANCELLED: ${reason}`.slice(0, 500));
  if (!changed) throw new OperationRefused('ALREADY_FINAL', `job ${jobId} ended ${row.status} while it was being cancelled.`);

  const executionStopped = await backend.stopExecution(row);
  // Read again: a step that was running when the execution stopped may have recorded a processing.
  const latest = (await backend.ledger.get(jobId)) ?? row;
  const parts = latest.parts ?? [];
  const kept = new Set(deleteFinished ? [] : parts.filter(finished).map((p) => p.processingId).filter((id): id is string => Boolean(id)));
  const processingIds = [...new Set([latest.processingId, ...parts.map((p) => p.processingId)].filter((id): id is string => Boolean(id)))];
  const processingsDeleted: string[] = [];
  const processingErrors: CancelOutcome['processingErrors'] = [];
  const toDelete = processingIds.filter((id) => !kept.has(id));
  if (toDelete.length > 0) {
    let client: Pick<MapflowClient, 'deleteProcessing'> | undefined;
    try {
      client = await backend.mapflow();
    } catch (err) {
      for (const processingId of toDelete) processingErrors.push({ processingId, error: `no Mapflow client: ${(err as Error).message}` });
    }
    for (const processingId of client ? toDelete : []) {
      try {
        await client!.deleteProcessing(processingId);
        processingsDeleted.push(processingId);
      } catch (err) {
        const status = (err as { status?: number }).status;
        if (status === 404) processingsDeleted.push(processingId); // already gone
        else processingErrors.push({ processingId, error: `${(err as Error).name}: ${(err as Error).message}` });
      }
    }
  }
  // What was charged stays on the job, and the results of finished parts stay findable from it.
  const creditsCharged = partsCharge(parts);
  const stored = parts.some((p) => p.resultKey);
  const patch: Partial<LedgerRow> = {
    ...(creditsCharged !== undefined && { actualCost: creditsCharged }),
    ...(stored && !latest.resultPrefix && { resultPrefix: backend.resultPrefixOf(latest.input.key) }),
  };
  const final = Object.keys(patch).length > 0 ? await backend.ledger.update(jobId, patch) : latest;
  await backend.releaseSlots(jobId);
  await backend.publish(EVENT_DETAIL_TYPES.CANCELLED, final.status === 'CANCELLED' ? final : row);
  await backend.ledger.finalEventPublished(jobId);
  return {
    jobId,
    status: 'CANCELLED',
    executionStopped,
    processingsDeleted,
    processingsKept: processingIds.filter((id) => kept.has(id)),
    processingErrors,
    ...(creditsCharged !== undefined && { creditsCharged }),
  };
}

/** Names of the stack outputs the deployed commands read (lib/mapflow-bridge-stack.ts). */
export interface StackOutputs {
  LedgerTableName?: string;
  StateMachineArn?: string;
  EventBusName?: string;
  SecretArn?: string;
  BucketName?: string;
  DeadLetterQueueUrl?: string;
}

export async function readStackOutputs(stackName: string, region?: string, client?: CloudFormationClient): Promise<StackOutputs> {
  const cfn = client ?? new CloudFormationClient(region ? { region } : {});
  try {
    const { Stacks } = await cfn.send(new DescribeStacksCommand({ StackName: stackName }));
    const outputs = Stacks?.[0]?.Outputs ?? [];
    return Object.fromEntries(outputs.filter((o) => o.OutputKey && o.OutputValue).map((o) => [o.OutputKey, o.OutputValue])) as StackOutputs;
  } finally {
    if (!client) cfn.destroy();
  }
}

/**
 * The backend of a deployed stack: the handlers' own runtime context, built
 * from the stack's outputs (ledger, event bus, secret) and the environment's
 * AWS credentials, plus Step Functions for the execution.
 */
export function deployedBackend(outputs: StackOutputs, options: { region?: string } = {}): OperatorBackend & { close(): void } {
  if (!outputs.LedgerTableName || !outputs.StateMachineArn) {
    throw new OperationRefused('NO_EXECUTION_CONTROL', 'the stack has no LedgerTableName/StateMachineArn outputs; is it a mapflow-bridge stack?');
  }
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...(options.region ? { AWS_REGION: options.region } : {}),
    LEDGER_TABLE: outputs.LedgerTableName,
    STATE_MACHINE_ARN: outputs.StateMachineArn,
    ...(outputs.EventBusName ? { EVENT_BUS_NAME: outputs.EventBusName } : {}),
    ...(outputs.SecretArn ? { MAPFLOW_SECRET_ARN: outputs.SecretArn } : {}),
  };
  const context = createBridgeContext({ config: loadConfig(env), env });
  const stateMachineArn = outputs.StateMachineArn;
  return {
    ledger: context.ledger,
    releaseSlots: (jobId) => context.slots.releaseJob(jobId),
    publish: (detailType, row) => context.events.publish(detailType, { ...eventDetailFromRow(row), at: new Date().toISOString() }),
    async startExecution(input) {
      try {
        const { executionArn } = await context.sfn().send(
          new StartExecutionCommand({ stateMachineArn, name: input.jobId, input: JSON.stringify(input) }),
        );
        return executionArn ? { executionArn } : {};
      } catch (err) {
        if (err instanceof ExecutionAlreadyExists) return { executionArn: executionArnFor(stateMachineArn, input.jobId) };
        throw err;
      }
    },
    async stopExecution(row) {
      const executionArn = row.executionArn ?? executionArnFor(stateMachineArn, row.jobId);
      try {
        await context.sfn().send(new StopExecutionCommand({ executionArn, error: 'JobCancelled', cause: 'cancelled with mapflow-bridge jobs cancel' }));
        return true;
      } catch (err) {
        if (err instanceof ExecutionDoesNotExist) return false;
        throw err;
      }
    },
    mapflow: () => context.mapflow(),
    resultPrefixOf: (key) => resultPrefix(context.config.prefixes, key),
    now: () => new Date(),
    close: () => {
      context.sfn().destroy();
    },
  };
}

/** arn:aws:states:r:a:stateMachine:Name + job id -> arn:aws:states:r:a:execution:Name:jobId */
export function executionArnFor(stateMachineArn: string, name: string): string {
  return `${stateMachineArn.replace(':stateMachine:', ':execution:')}:${name}`;
}
