/**
 * IAM evaluation of a principal's requests with @cloud-copilot/iam-simulate
 * (identity policies only: the local account has no SCPs, resource policies
 * or permission boundaries). The user's own principal has no policies and
 * may do anything, as an account's administrator.
 */
import type { runSimulation as RunSimulation } from '@cloud-copilot/iam-simulate';
import { LOCAL_AWS } from './account.ts';
import type { Principal } from './credentials.ts';
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

// Loaded on the first role's request (about a second of module loading): the user's own never needs it.
let simulator: Promise<typeof RunSimulation> | undefined;

/** Evaluates `requests` in order; the first that is not allowed decides. */
export async function evaluate(principal: Principal, requests: readonly IamRequest[]): Promise<Decision> {
  if (!principal.policies) return { allowed: true };
  const runSimulation = await (simulator ??= import('@cloud-copilot/iam-simulate').then((module) => module.runSimulation));
  for (const request of requests) {
    const result = await runSimulation(
      {
        request: {
          principal: principal.arn,
          action: request.action,
          resource: { resource: request.resource, accountId: LOCAL_AWS.accountId },
          contextVariables: { 'aws:RequestedRegion': LOCAL_AWS.region, ...request.context },
        },
        identityPolicies: principal.policies.map((policy, index) => ({ name: `policy-${index}`, policy })),
        serviceControlPolicies: [],
        resourceControlPolicies: [],
      },
      {},
    );
    if (result.resultType === 'error') return { allowed: false, request, explicit: false, error: result.errors.message };
    if (result.overallResult !== 'Allowed') return { allowed: false, request, explicit: result.overallResult === 'ExplicitlyDenied' };
  }
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
