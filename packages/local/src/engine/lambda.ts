/**
 * Runs a Lambda handler in process the way the Lambda service would, so the
 * state machine sees exactly what it sees on AWS:
 * - the event and the result go through JSON (no Dates, no undefined, no shared objects);
 * - a thrown error becomes a Lambda function error: the Step Functions error
 *   name is the error's `name` (its errorType) and the Cause is the JSON
 *   `{errorType, errorMessage}` — aws-local-stepfunctions writes
 *   `{Error: error.name, Cause: error.message}` at a Catch's ResultPath, so the
 *   message carries that JSON;
 * - a result above the Step Functions payload limit fails like on AWS
 *   (States.DataLimitExceeded, which Retry and Catch do not match).
 */
import type { Context } from 'aws-lambda';

export type LambdaHandler = (event: unknown, context: Context) => unknown;

/** Step Functions' maximum size of a state's input or output (256 KiB). */
export const STATE_PAYLOAD_LIMIT_BYTES = 256 * 1024;

/**
 * A Lambda function error as Step Functions sees it: Error is its errorType,
 * Cause (this message) the JSON of what the runtime answered, `{ errorType,
 * errorMessage, trace }` (trace: the stack, one line an element; none for the
 * errors Lambda itself raises, Sandbox.Timedout and the like). `causeText`
 * replaces that JSON, as Step Functions' own plain-text cause of a
 * Lambda.Unknown does.
 */
export class LambdaFunctionError extends Error {
  readonly errorType: string;
  readonly errorMessage: string;
  readonly trace?: string[];
  constructor(errorType: string, errorMessage: string, options?: { cause?: unknown; trace?: string[]; causeText?: string }) {
    super(options?.causeText ?? JSON.stringify({ errorType, errorMessage, ...(options?.trace ? { trace: options.trace } : {}) }), options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = errorType;
    this.errorType = errorType;
    this.errorMessage = errorMessage;
    if (options?.trace) this.trace = options.trace;
  }
}

/** States.DataLimitExceeded: terminal, never matched by Retry or Catch (as on AWS). */
export class DataLimitExceeded extends Error {
  // Read by aws-local-stepfunctions' retry and catch matching.
  readonly isRetryable = false;
  readonly isCatchable = false;
  constructor(stateName: string, bytes: number, what = 'result') {
    super(`The ${what} of '${stateName}' is ${bytes} bytes, above the ${STATE_PAYLOAD_LIMIT_BYTES}-byte Step Functions limit.`);
    this.name = 'States.DataLimitExceeded';
  }
}

/** The error a thrown value becomes at the Lambda boundary. */
export function toLambdaError(thrown: unknown): LambdaFunctionError {
  if (thrown instanceof LambdaFunctionError) return thrown;
  if (thrown instanceof Error) {
    return new LambdaFunctionError(thrown.name || 'Error', thrown.message, { cause: thrown });
  }
  return new LambdaFunctionError('Error', String(thrown), { cause: thrown });
}

export interface InvokeOptions {
  functionName: string;
  stateName: string;
  /** Lambda timeout, for getRemainingTimeInMillis(). */
  timeoutSeconds?: number;
}

/** Wraps a handler as an aws-local-stepfunctions task override. */
export function asTaskResource(handler: LambdaHandler, options: InvokeOptions): (input: unknown) => Promise<unknown> {
  let invocations = 0;
  return async (input: unknown) => {
    const deadline = Date.now() + (options.timeoutSeconds ?? 900) * 1000;
    const context = lambdaContext(options.functionName, `local-${++invocations}-${Date.now()}`, deadline);
    let result: unknown;
    try {
      result = await handler(roundTrip(input), context);
    } catch (thrown) {
      throw toLambdaError(thrown);
    }
    const json = JSON.stringify(result ?? null);
    const bytes = Buffer.byteLength(json, 'utf8');
    if (bytes > STATE_PAYLOAD_LIMIT_BYTES) throw new DataLimitExceeded(options.stateName, bytes);
    return JSON.parse(json) as unknown;
  };
}

function roundTrip(value: unknown): unknown {
  return JSON.parse(JSON.stringify(value ?? null)) as unknown;
}

function lambdaContext(functionName: string, requestId: string, deadline: number): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${functionName}`,
    memoryLimitInMB: '1024',
    awsRequestId: requestId,
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
