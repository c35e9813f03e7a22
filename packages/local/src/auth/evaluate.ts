/**
 * IAM evaluation of a principal's requests (identity policies only: the
 * local account has no SCPs, resource policies or permission boundaries),
 * with our own evaluator (policy-evaluator.ts) and IAM's catalogue of
 * actions (action-catalogue.ts). The user's own principal has no policies and
 * may do anything, as an account's administrator.
 */
import { LOCAL_AWS } from './account.ts';
import { catalogueProblem } from './action-catalogue.ts';
import type { Principal } from './credentials.ts';
import { compilePolicies, judge, PolicyEvaluationError, type CompiledPolicies } from './policy-evaluator.ts';
import type { IamRequest } from './s3-actions.ts';

export type Decision =
  | { allowed: true }
  | {
      allowed: false;
      /** The first request that was refused. */
      request: IamRequest;
      /** A Deny statement matched (else no statement allowed it). */
      explicit: boolean;
      /** Set when the evaluator could not judge the request (an action or resource IAM does not know, a policy element it does not evaluate): refused. */
      error?: string;
    };

/**
 * Task-token calls: IAM's service authorization reference lists no resource
 * type for them (so the catalogue would refuse any resource but '*'), yet Step
 * Functions judges them against the state machine of the token: its
 * AccessDenied names `on resource: arn:aws:states:...:stateMachine:<name>`,
 * and a policy on the state machine's ARN allows them (aws/aws-cdk#8486).
 * The real service wins: their resource is not checked against the catalogue.
 */
const TASK_TOKEN_ACTIONS = new Set(['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat']);

/**
 * The context keys the gate supplies: the global ones below on every request,
 * and those s3-actions.ts sets on s3:ListBucket (s3:prefix, s3:delimiter,
 * s3:max-keys). A condition on any other key is refused by the evaluator.
 */
const CONTEXT_KEYS: ReadonlySet<string> = new Set(['aws:requestedregion', 'aws:principalarn', 'aws:principalaccount', 's3:prefix', 's3:delimiter', 's3:max-keys']);

/** Each principal's policies, compiled once (or why they cannot be evaluated). */
const compiled = new WeakMap<Principal, CompiledPolicies | PolicyEvaluationError>();

function compiledOf(principal: Principal): CompiledPolicies | PolicyEvaluationError {
  let result = compiled.get(principal);
  if (!result) {
    try {
      result = compilePolicies(principal.policies ?? [], { contextKeys: CONTEXT_KEYS });
    } catch (error) {
      if (!(error instanceof PolicyEvaluationError)) throw error;
      result = error;
    }
    compiled.set(principal, result);
  }
  return result;
}

/**
 * Judgements already made, per principal: a principal's policies never change
 * (a new role is a new principal). One evaluation costs about 10 µs of CPU
 * (it was about a millisecond with iam-simulate), paid on every call a
 * function makes otherwise; the same table, bucket prefix or secret recurs on
 * most of them.
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
      decision = await evaluateOne(principal, request);
      if (table.size >= MAX_JUDGED_PER_PRINCIPAL) table.clear();
      table.set(key, decision);
    }
    if (!decision.allowed) return decision;
  }
  return { allowed: true };
}

async function evaluateOne(principal: Principal, request: IamRequest): Promise<Decision> {
  const policies = compiledOf(principal);
  // A policy the evaluator does not evaluate refuses every request, saying which element (never a guess).
  if (policies instanceof PolicyEvaluationError) return { allowed: false, request, explicit: false, error: policies.message };
  if (!TASK_TOKEN_ACTIONS.has(request.action)) {
    const problem = await catalogueProblem(request.action, request.resource);
    if (problem) return { allowed: false, request, explicit: false, error: problem };
  }
  const context = { 'aws:RequestedRegion': LOCAL_AWS.region, 'aws:PrincipalArn': principal.arn, 'aws:PrincipalAccount': LOCAL_AWS.accountId, ...request.context };
  let verdict;
  try {
    verdict = judge(policies, { action: request.action, resource: request.resource, context });
  } catch (error) {
    if (!(error instanceof PolicyEvaluationError)) throw error;
    return { allowed: false, request, explicit: false, error: error.message };
  }
  return verdict === 'allowed' ? { allowed: true } : { allowed: false, request, explicit: verdict === 'explicitly-denied' };
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
