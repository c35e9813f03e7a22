/**
 * The gate of the local Step Functions, EventBridge and Secrets Manager
 * endpoints (packages/local/src/assembly/services.ts): one authorize hook for the three,
 * which picks the service from the request's X-Amz-Target and judges the
 * request as jsonAuthorizer does (signed with issued credentials, allowed by
 * the signer's policies), answering a refusal in the service's own shape.
 * Task-token calls (SendTaskSuccess...) name no resource in their body: they
 * are judged on the state machine that hands out the tokens, as Step
 * Functions judges them (see evaluate.ts).
 */
import type { IncomingMessage } from 'node:http';
import type { AuthorizeHook, AwsRefusal } from '../assembly/aws-endpoint.ts';
import { jsonAuthorizer, type IncomingSignedRequest, type Refusal } from './gate.ts';
import type { CredentialStore } from './credentials.ts';
import { JSON_SERVICES, type JsonServiceName } from './json-actions.ts';

const SERVICES = ['states', 'events', 'secretsmanager'] as const satisfies readonly JsonServiceName[];

const TASK_TOKEN_OPERATIONS = new Set(['SendTaskSuccess', 'SendTaskFailure', 'SendTaskHeartbeat']);

export function servicesGate(options: {
  store: CredentialStore;
  /** The state machine whose task tokens the local Step Functions endpoint hands out. */
  stateMachineArn: string;
  onRefused?: (refusal: Refusal, request: IncomingSignedRequest) => void;
}): AuthorizeHook {
  return async (request: IncomingMessage, rawBody: Buffer): Promise<AwsRefusal | undefined> => {
    const target = String(request.headers['x-amz-target'] ?? '');
    const service = SERVICES.find((name) => target.startsWith(`${JSON_SERVICES[name].targetPrefix}.`));
    if (!service) return { status: 400, code: 'UnknownOperationException', message: `unknown operation ${target || '(no X-Amz-Target)'}` };
    const authorizer = jsonAuthorizer(service, {
      store: options.store,
      listening: () => request.socket.localPort,
      ...(options.onRefused ? { onRefused: options.onRefused } : {}),
      resourceOf: (operation) => (service === 'states' && TASK_TOKEN_OPERATIONS.has(operation) ? [options.stateMachineArn] : undefined),
    });
    const verdict = await authorizer.authorize({ method: request.method ?? 'POST', url: request.url ?? '/', headers: request.headers }, rawBody);
    return verdict.allowed ? undefined : { status: verdict.status, code: verdict.code, message: verdict.message };
  };
}
