/**
 * IAM evaluation of a principal's requests with @cloud-copilot/iam-simulate
 * (identity policies only: the local account has no SCPs, resource policies
 * or permission boundaries). The user's own principal has no policies and
 * may do anything, as an account's administrator.
 */
import type { runSimulation as RunSimulation } from '@cloud-copilot/iam-simulate';
import { LOCAL_AWS } from './account.ts';
import type { PolicyDocument, Principal } from './credentials.ts';
import type { IamRequest } from './s3-actions.ts';

export type Decision =
  | { allowed: true }
  | {
      allowed: false;
      /** The first request that was refused. */
      request: IamRequest;
      /** A Deny statement matched (else no statement allowed it). */
      explicit: boolean;
      /** Set when the evaluator could not judge the request (an action it does not know): refused. */
      error?: string;
    };

/**
 * Task-token calls: IAM's service authorization reference lists no resource
 * type for them (so iam-simulate refuses any resource but '*'), yet Step
 * Functions judges them against the state machine of the token: its
 * AccessDenied names `on resource: arn:aws:states:...:stateMachine:<name>`,
 * and a policy on the state machine's ARN allows them (aws/aws-cdk#8486).
 * The real service wins: these are matched here, statement by statement.
 */
const TASK_TOKEN_ACTIONS = new Set(['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat']);

interface Statement {
  Effect?: string;
  Action?: string | string[];
  NotAction?: unknown;
  Resource?: string | string[];
  NotResource?: unknown;
  Condition?: unknown;
}

const glob = (pattern: string, value: string, ignoreCase: boolean): boolean =>
  new RegExp(`^${pattern.split('*').map((part) => part.split('?').map((piece) => piece.replace(/[.+^${}()|[\]\\]/g, '\\$&')).join('.')).join('.*')}$`, ignoreCase ? 'i' : '').test(value);

function evaluateTaskToken(principal: Principal, request: IamRequest): Decision {
  const statements = (principal.policies ?? []).flatMap((policy) => [(policy as { Statement?: Statement | Statement[] }).Statement ?? []].flat());
  const matches = (statement: Statement) =>
    statement.NotAction === undefined &&
    statement.NotResource === undefined &&
    statement.Condition === undefined &&
    [statement.Action ?? []].flat().some((action) => glob(action, request.action, true)) &&
    [statement.Resource ?? []].flat().some((resource) => glob(resource, request.resource, false));
  if (statements.some((statement) => statement.Effect === 'Deny' && matches(statement))) return { allowed: false, request, explicit: true };
  return statements.some((statement) => statement.Effect === 'Allow' && matches(statement)) ? { allowed: true } : { allowed: false, request, explicit: false };
}

// Loaded on the first role's request (about a second of module loading): the user's own never needs it.
let simulator: Promise<typeof RunSimulation> | undefined;

/**
 * Judgements already made, per principal: a principal's policies never change
 * (a new role is a new principal), and one evaluation costs about a millisecond
 * of CPU (resource pattern matching), paid on every call a function makes
 * otherwise; the same table, bucket prefix or secret recurs on most of them.
 * Bounded: a principal's table is emptied when full.
 */
const judged = new WeakMap<Principal, Map<string, Decision>>();
const MAX_JUDGED_PER_PRINCIPAL = 10_000;

/** Evaluates `requests` in order; the first that is not allowed decides. */
export async function evaluate(principal: Principal, requests: readonly IamRequest[]): Promise<Decision> {
  const { policies } = principal;
  if (!policies) return { allowed: true };
  let table = judged.get(principal);
  if (!table) judged.set(principal, (table = new Map()));
  for (const request of requests) {
    const key = JSON.stringify([request.action, request.resource, request.context ?? null]);
    let decision = table.get(key);
    if (!decision) {
      decision = await evaluateOne(principal, policies, request);
      if (table.size >= MAX_JUDGED_PER_PRINCIPAL) table.clear();
      table.set(key, decision);
    }
    if (!decision.allowed) return decision;
  }
  return { allowed: true };
}

async function evaluateOne(principal: Principal, policies: readonly PolicyDocument[], request: IamRequest): Promise<Decision> {
  if (TASK_TOKEN_ACTIONS.has(request.action)) return evaluateTaskToken(principal, request);
  const runSimulation = await (simulator ??= import('@cloud-copilot/iam-simulate').then((module) => module.runSimulation));
  const result = await runSimulation(
    {
      request: {
        principal: principal.arn,
        action: request.action,
        resource: { resource: request.resource, accountId: LOCAL_AWS.accountId },
        contextVariables: { 'aws:RequestedRegion': LOCAL_AWS.region, ...request.context },
      },
      identityPolicies: policies.map((policy, index) => ({ name: `policy-${index}`, policy })),
      serviceControlPolicies: [],
      resourceControlPolicies: [],
    },
    {},
  );
  if (result.resultType === 'error') return { allowed: false, request, explicit: false, error: result.errors.message };
  if (result.overallResult !== 'Allowed') return { allowed: false, request, explicit: result.overallResult === 'ExplicitlyDenied' };
  return { allowed: true };
}

/**
 * AWS's AccessDenied message: "User: <arn> is not authorized to perform:
 * <action> on resource: <resource> because no identity-based policy allows
 * the <action> action" (or "with an explicit deny in an identity-based policy").
 * S3 quotes the resource.
 */
export function accessDeniedMessage(principal: Principal, decision: Extract<Decision, { allowed: false }>, quoteResource = false): string {
  const { action, resource } = decision.request;
  const why = decision.explicit ? 'with an explicit deny in an identity-based policy' : `because no identity-based policy allows the ${action} action`;
  return `User: ${principal.arn} is not authorized to perform: ${action} on resource: ${quoteResource ? JSON.stringify(resource) : resource} ${why}`;
}
