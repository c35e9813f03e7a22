/**
 * The state machine's own role, enforced: before a Task state calls its
 * function, the call is judged against the policies of the role the template
 * gives the state machine (its RoleArn), as Step Functions makes the call with
 * that role's credentials on AWS. A refused call fails the Task as Step
 * Functions fails it there:
 *
 *   Error  Lambda.AWSLambdaException
 *   Cause  User: arn:aws:sts::<account>:assumed-role/<role>/<session> is not
 *          authorized to perform: lambda:InvokeFunction on resource: <arn>
 *          because no identity-based policy allows the lambda:InvokeFunction
 *          action (Service: Lambda, Status Code: 403, Request ID: <uuid>)
 *
 * (the error name and the cause as executions report them, e.g.
 * awslabs/aws-deployment-framework#460; the parenthesis is the AWS SDK for
 * Java v2's AwsServiceException message, which Step Functions' Lambda client
 * writes). The session name is 32 random letters, as Step Functions names the
 * sessions it assumes. Like any Task error it is matched by the state's Retry
 * (the bridge's Lambda tasks retry Lambda.AWSLambdaException) and Catch.
 *
 * A DISTRIBUTED Map state starts one child execution per item with the same
 * role: it needs states:StartExecution on the state machine's own ARN (AWS,
 * "IAM policies for using Distributed Map states"; CDK's DistributedMapPolicy
 * grants it), else the execution fails at the Map state on IAM's
 * "User: … is not authorized to perform: states:StartExecution" (aws-cdk#28820,
 * #35390, serverless-step-functions#543). Judged here too (`authorizeMapRun`,
 * on the template's ARN of the state machine, the one its policy names); a
 * refusal fails the Map state with
 *
 *   Error  States.Runtime
 *   Cause  User: arn:aws:sts::<account>:assumed-role/<role>/<session> is not
 *          authorized to perform: states:StartExecution on resource: <arn>
 *          because no identity-based policy allows the states:StartExecution action
 *
 * The error name is unsourced: the reports above show the message, and no
 * public source we found names the error Step Functions gives this case;
 * States.Runtime is Step Functions' error for "an exception that it couldn't
 * process" (concepts-error-handling). As on AWS for every
 * States.Runtime error, no Retry or Catch matches it (not even States.ALL),
 * so the execution fails. The cause is IAM's AccessDenied message alone: the
 * parenthesis of the Lambda case is the text of the Lambda client Step
 * Functions calls through, and none is known for this one.
 *
 * Judgements are cached per (action, resource): a role's policies do not
 * change while the bridge runs, so each call is evaluated once.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { LOCAL_AWS } from './account.ts';
import { assumedRoleArn, type PolicyDocument, type Principal } from './credentials.ts';
import { accessDeniedMessage, evaluate as evaluateWithIam, type Decision } from './evaluate.ts';
import type { IamRequest } from './s3-actions.ts';

/** What a Task state calls, as IAM judges it. */
export interface TaskCall extends IamRequest {
  /** The Task state. */
  state: string;
  /** The service's prefix of Step Functions' error names ('Lambda' -> Lambda.AWSLambdaException). */
  service: 'Lambda';
}

/** A Task refused by the state machine's role; `name` is the error Retry and Catch match. */
export class TaskAccessDeniedError extends Error {
  constructor(
    readonly call: TaskCall,
    cause: string,
  ) {
    super(cause);
    this.name = `${call.service}.AWS${call.service}Exception`;
  }
}

/** What a DISTRIBUTED Map state calls to start its child executions, as IAM judges it. */
export interface MapRunCall extends IamRequest {
  /** The Map state. */
  state: string;
  action: 'states:StartExecution';
  /** The state machine's own ARN (its children are executions of it). */
  resource: string;
}

/** A Map Run refused by the state machine's role: fails the Map state (States.Runtime, which no Retry or Catch matches). */
export class MapRunAccessDeniedError extends Error {
  constructor(
    readonly call: MapRunCall,
    cause: string,
  ) {
    super(cause);
    // Unsourced (see the head of this file).
    this.name = 'States.Runtime';
  }
}

const LETTERS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** A session name like the ones Step Functions gives the role it assumes (32 letters). */
export function stepFunctionsSessionName(): string {
  return [...randomBytes(32)].map((byte) => LETTERS[byte % LETTERS.length]).join('');
}

/**
 * The ARN Lambda authorizes an Invoke on: a function's name or partial ARN
 * becomes its ARN in the local account and region; a full (or qualified) ARN
 * stays as it is (`arn:...:function:name:$LATEST` is judged as written).
 */
export function lambdaFunctionArn(functionRef: string): string {
  const { partition, region, accountId } = LOCAL_AWS;
  if (functionRef.startsWith('arn:')) return functionRef;
  // "123456789012:function:name" (a partial ARN) or "name" / "name:qualifier".
  const partial = /^(\d{12}):function:(.+)$/.exec(functionRef);
  if (partial) return `arn:${partition}:lambda:${region}:${partial[1]}:function:${partial[2]}`;
  return `arn:${partition}:lambda:${region}:${accountId}:function:${functionRef}`;
}

/**
 * The call a Task state makes: a function ARN as Resource, or the optimized
 * `arn:aws:states:::lambda:invoke` integration (with or without
 * `.waitForTaskToken`) naming it in Parameters.FunctionName. Both are
 * lambda:InvokeFunction. Any other Resource is undefined here: the local
 * engine runs Lambda tasks only (packages/local/src/assembly/runtime.ts refuses a
 * definition with others when it starts).
 */
export function taskCallOf(state: string, definition: { Resource?: unknown; Parameters?: unknown }): TaskCall | undefined {
  const resource = typeof definition.Resource === 'string' ? definition.Resource : '';
  const parameters = (definition.Parameters ?? {}) as Record<string, unknown>;
  const invoke = /^arn:[^:]+:states:::lambda:invoke(\.waitForTaskToken)?$/.test(resource);
  const functionRef = invoke ? parameters.FunctionName : /^arn:[^:]+:lambda:/.test(resource) ? resource : undefined;
  if (typeof functionRef !== 'string' || functionRef === '') return undefined;
  return { state, service: 'Lambda', action: 'lambda:InvokeFunction', resource: lambdaFunctionArn(functionRef) };
}

/** Every Task state's call (Map item processors and Parallel branches included), by state name. */
export function taskCallsOf(definition: Record<string, unknown>): Map<string, TaskCall> {
  const calls = new Map<string, TaskCall>();
  const walk = (states: Record<string, Record<string, unknown>> | undefined): void => {
    for (const [name, state] of Object.entries(states ?? {})) {
      if (state.Type === 'Task') {
        const call = taskCallOf(name, state);
        if (call) calls.set(name, call);
      }
      const processor = (state.ItemProcessor ?? state.Iterator) as { States?: Record<string, Record<string, unknown>> } | undefined;
      walk(processor?.States);
      for (const branch of (state.Branches as { States?: Record<string, Record<string, unknown>> }[] | undefined) ?? []) walk(branch.States);
    }
  };
  walk(definition.States as Record<string, Record<string, unknown>> | undefined);
  return calls;
}

/**
 * Every DISTRIBUTED Map state's StartExecution on the state machine
 * `stateMachineArn` (nested ones included), by Map state name.
 */
export function mapRunCallsOf(definition: Record<string, unknown>, stateMachineArn: string): Map<string, MapRunCall> {
  const calls = new Map<string, MapRunCall>();
  const walk = (states: Record<string, Record<string, unknown>> | undefined): void => {
    for (const [name, state] of Object.entries(states ?? {})) {
      const processor = (state.ItemProcessor ?? state.Iterator) as { ProcessorConfig?: { Mode?: unknown }; States?: Record<string, Record<string, unknown>> } | undefined;
      if (state.Type === 'Map' && processor?.ProcessorConfig?.Mode === 'DISTRIBUTED') {
        calls.set(name, { state: name, action: 'states:StartExecution', resource: stateMachineArn });
      }
      walk(processor?.States);
      for (const branch of (state.Branches as { States?: Record<string, Record<string, unknown>> }[] | undefined) ?? []) walk(branch.States);
    }
  };
  walk(definition.States as Record<string, Record<string, unknown>> | undefined);
  return calls;
}

export type Evaluate = (principal: Principal, requests: readonly IamRequest[]) => Promise<Decision>;

/** The state machine's role, judging its calls (cached per action and resource). */
export class StateMachineRole {
  readonly principal: Principal;
  private readonly decisions = new Map<string, Promise<Decision>>();

  constructor(
    role: { roleArn: string; policies: readonly PolicyDocument[] },
    private readonly evaluate: Evaluate = evaluateWithIam,
    sessionName = stepFunctionsSessionName(),
  ) {
    this.principal = { name: 'state-machine', arn: assumedRoleArn(role.roleArn, sessionName), policies: [...role.policies], accessKeyId: '', secretAccessKey: '' };
  }

  /** The role's decision on one call (evaluated once per action and resource). */
  judge(request: IamRequest): Promise<Decision> {
    const key = `${request.action}\u0000${request.resource}`;
    let decision = this.decisions.get(key);
    if (!decision) {
      decision = this.evaluate(this.principal, [{ action: request.action, resource: request.resource }]);
      // A failed evaluation is not kept: the next call judges again.
      decision.catch(() => this.decisions.delete(key));
      this.decisions.set(key, decision);
    }
    return decision;
  }

  /** Resolves when the role allows the call; rejects with the Task error Step Functions reports otherwise. */
  async authorize(call: TaskCall): Promise<void> {
    const decision = await this.judge(call);
    if (decision.allowed) return;
    const service = call.service;
    throw new TaskAccessDeniedError(call, `${accessDeniedMessage(this.principal, decision)} (Service: ${service}, Status Code: 403, Request ID: ${randomUUID()})`);
  }

  /** Resolves when the role may start the Map's child executions; rejects with the error that fails the Map state otherwise. */
  async authorizeMapRun(call: MapRunCall): Promise<void> {
    const decision = await this.judge(call);
    if (decision.allowed) return;
    throw new MapRunAccessDeniedError(call, accessDeniedMessage(this.principal, decision));
  }
}
