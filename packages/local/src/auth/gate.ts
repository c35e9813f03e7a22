/**
 * The gate in front of every local endpoint that can act on the user's
 * behalf: no request passes unless it is signed (SigV4) with credentials this
 * bridge issued, comes from no web browser and names the loopback address
 * the endpoint listens on, and the signer's IAM policies allow it.
 *
 * Interface (all an endpoint needs):
 *
 *   const store = await CredentialStore.open(stateDir);        // or CredentialStore.inMemory()
 *   const fn = store.addPrincipal('register-job', roleArn, policyDocuments); // credentials for a function
 *   const authorizer = s3Authorizer({ store, listening })           // or jsonAuthorizer('dynamodb' | 'secretsmanager' | 'states' | 'events', { store, listening, resourceOf? })
 *   const verdict = await authorizer.authorize({ method, url, headers }, rawBody);
 *   if (!verdict.allowed) { response.writeHead(verdict.status, verdict.headers); response.end(verdict.body); }  // or sendRefusal(response, verdict)
 *
 * `listening()` returns the port the endpoint listens on (on 127.0.0.1).
 * `rawBody` is needed by JSON-protocol services (their clients sign the
 * body's hash and the resource is in it); S3 signs x-amz-content-sha256.
 * A refusal is plain data (it crosses the IPC to s3rver's process) already in
 * the service's own error shape: S3's XML (403 AccessDenied,
 * InvalidAccessKeyId, SignatureDoesNotMatch, ...) or the JSON protocol's
 * `{"__type": ..., "message": ...}` (400 AccessDeniedException,
 * UnrecognizedClientException, InvalidSignatureException, ...).
 *
 * A call that is no HTTP request (the local engine invoking a function as the
 * state machine's role) is judged directly:
 *
 *   const sm = store.addPrincipal('state-machine', smRoleArn, smPolicies);   // keep sm.accessKeyId
 *   const decision = await evaluate(store.principal(sm.accessKeyId)!, [{ action: 'lambda:InvokeFunction', resource: functionArn }]);
 *   if (!decision.allowed) throw new AccessDenied(accessDeniedMessage(principal, decision));
 *
 * The checks, in order: Host (DNS rebinding), browser (Origin header, form
 * POST), signature (sigv4.ts), IAM (s3-actions.ts / json-actions.ts mapped,
 * evaluate.ts evaluated). See docs/local-security.md.
 */
import type { ServerResponse } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { CredentialStore, Principal } from './credentials.ts';
import { accessDeniedMessage, evaluate } from './evaluate.ts';
import { JSON_SERVICES, jsonAuthorization, type JsonAuthorizationOptions, type JsonServiceName } from './json-actions.ts';
import { s3Authorization } from './s3-actions.ts';
import { verifySignature, type IncomingSignedRequest, type SignatureResult } from './sigv4.ts';

export type { IncomingSignedRequest } from './sigv4.ts';
export { accessDeniedMessage, evaluate, type Decision } from './evaluate.ts';
export { CredentialStore, type IssuedCredentials, type PolicyDocument, type Principal } from './credentials.ts';
export { LOCAL_AWS } from './account.ts';

export interface Refusal {
  allowed: false;
  status: number;
  /** The service's error code (AccessDenied, AccessDeniedException, SignatureDoesNotMatch, ...). */
  code: string;
  message: string;
  headers: Record<string, string>;
  body: string;
}

export interface Admission {
  allowed: true;
  /** The name and ARN of the signer. */
  principal: { name: string; arn: string; accessKeyId: string };
  /**
   * S3 GET/HEAD of an object only: when the key is missing, ask
   * S3Authorizer.missingKey what to answer (AWS answers 404 NoSuchKey to a
   * principal allowed s3:ListBucket on the key, 403 AccessDenied to one that
   * is not). Asked only then: most reads find their key.
   */
  askIfMissing?: boolean;
}

export type Verdict = Admission | Refusal;

export interface Authorizer {
  authorize(request: IncomingSignedRequest, rawBody?: string | Uint8Array): Promise<Verdict>;
}

export interface S3Authorizer extends Authorizer {
  /** What a GET/HEAD of a missing key answers for this (admitted) request's signer. */
  missingKey(request: IncomingSignedRequest): Promise<{ code: 'NoSuchKey' } | { code: 'AccessDenied'; message: string }>;
}

export interface GateOptions {
  store: CredentialStore;
  /** The port the endpoint listens on (127.0.0.1); undefined while it is not listening yet. */
  listening: () => number | undefined;
  /** Told of every refusal (the bridge logs denied calls of its functions). */
  onRefused?: (refusal: Refusal, request: IncomingSignedRequest) => void;
}

type Problem = { kind: 'host' | 'browser' | 'unmapped'; message: string } | { kind: 'signature'; result: Extract<SignatureResult, { ok: false }> } | { kind: 'denied'; message: string };

function header(request: IncomingSignedRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : (value as string | undefined);
}

/** The checks every endpoint makes before the signature: the Host it listens on, and no web browser. */
function outsideProblem(request: IncomingSignedRequest, port: number | undefined, endpoint: string): Problem | undefined {
  const host = header(request, 'host') ?? '';
  if (port === undefined || (host !== `127.0.0.1:${port}` && host !== `localhost:${port}`)) {
    return { kind: 'host', message: `The ${endpoint} of mapflow-bridge answers only requests for 127.0.0.1:${port ?? '?'}, not for Host ${JSON.stringify(host)} (DNS rebinding).` };
  }
  // No AWS SDK or CLI sends Origin; a browser sends it on every cross-origin request and every POST.
  const origin = header(request, 'origin');
  const contentType = header(request, 'content-type') ?? '';
  // An HTML form can only POST (a PUT with such a type is a tool like curl, judged by its signature).
  const form = request.method.toUpperCase() === 'POST' && /^\s*(multipart\/form-data|application\/x-www-form-urlencoded|text\/plain)/i.test(contentType);
  if (origin !== undefined || form) {
    return {
      kind: 'browser',
      message: `The ${endpoint} of mapflow-bridge refuses requests from web browsers (${origin !== undefined ? `Origin ${JSON.stringify(origin)}` : 'an HTML form upload'}): only clients signing with the credentials the bridge issued may use it.`,
    };
  }
  return undefined;
}

const requestId = () => randomBytes(8).toString('hex').toUpperCase();

const xmlEscape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function s3Refusal(problem: Problem): Refusal {
  const [status, code, message] = ((): [number, string, string] => {
    switch (problem.kind) {
      case 'host':
      case 'browser':
        return [403, 'AccessDenied', problem.message];
      case 'unmapped':
        return [403, 'AccessDenied', `Access Denied: ${problem.message}`];
      case 'denied':
        return [403, 'AccessDenied', problem.message];
      case 'signature':
        switch (problem.result.failure) {
          case 'Unsigned':
            return [403, 'AccessDenied', 'Access Denied'];
          case 'UnknownAccessKey':
            return [403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.'];
          case 'SignatureMismatch':
            return [403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.'];
          case 'Expired':
            return [403, 'AccessDenied', 'Request has expired'];
          case 'TimeSkewed':
            return [403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.'];
          case 'WrongRegion':
          case 'Malformed':
            return [400, 'AuthorizationHeaderMalformed', `The authorization header is malformed; ${problem.result.message}.`];
        }
    }
  })();
  const id = requestId();
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message><RequestId>${id}</RequestId><HostId>${id}</HostId></Error>`;
  return { allowed: false, status, code, message, headers: { 'content-type': 'application/xml', 'x-amz-request-id': id }, body };
}

function jsonRefusal(problem: Problem, contentType: string): Refusal {
  const [code, message] = ((): [string, string] => {
    switch (problem.kind) {
      case 'host':
      case 'browser':
      case 'denied':
        return ['AccessDeniedException', problem.message];
      case 'unmapped':
        return ['AccessDeniedException', `The local endpoint cannot authorize this request: ${problem.message}`];
      case 'signature':
        switch (problem.result.failure) {
          case 'Unsigned':
            return ['MissingAuthenticationTokenException', 'Request is missing Authentication Token'];
          case 'UnknownAccessKey':
            return ['UnrecognizedClientException', 'The security token included in the request is invalid.'];
          case 'SignatureMismatch':
            return ['InvalidSignatureException', 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.'];
          case 'Expired':
            return ['InvalidSignatureException', 'Signature expired.'];
          case 'TimeSkewed':
            return ['InvalidSignatureException', 'Signature expired: the request time is too far from the current time.'];
          case 'WrongRegion':
          case 'Malformed':
            return ['IncompleteSignatureException', problem.result.message];
        }
    }
  })();
  const id = requestId();
  return {
    allowed: false,
    status: 400,
    code,
    message,
    headers: { 'content-type': contentType, 'x-amzn-requestid': id, 'x-amzn-errortype': `${code}:` },
    body: JSON.stringify({ __type: `com.amazon.coral.service#${code}`, message, Message: message }),
  };
}

const admitted = (principal: Principal): Admission['principal'] => ({ name: principal.name, arn: principal.arn, accessKeyId: principal.accessKeyId });

/** The gate of the local S3 (REST, path-style; signing name s3). */
export function s3Authorizer(options: GateOptions): S3Authorizer {
  return {
    async missingKey(request) {
      const signature = await verifySignature(request, options.store, { service: 's3', uriEscapePath: false });
      const mapped = s3Authorization(request.method, request.url, request.headers);
      if (!signature.ok || typeof mapped === 'string' || !mapped.listBucketIfMissing) return { code: 'AccessDenied', message: 'Access Denied' };
      const list = await evaluate(signature.principal, [mapped.listBucketIfMissing]);
      return list.allowed ? { code: 'NoSuchKey' } : { code: 'AccessDenied', message: 'Access Denied' };
    },
    async authorize(request) {
      const refuse = (problem: Problem) => {
        const refusal = s3Refusal(problem);
        options.onRefused?.(refusal, request);
        return refusal;
      };
      const outside = outsideProblem(request, options.listening(), 'local S3');
      if (outside) return refuse(outside);
      const signature = await verifySignature(request, options.store, { service: 's3', uriEscapePath: false });
      if (!signature.ok) return refuse({ kind: 'signature', result: signature });
      const mapped = s3Authorization(request.method, request.url, request.headers);
      if (typeof mapped === 'string') return refuse({ kind: 'unmapped', message: mapped });
      const decision = await evaluate(signature.principal, mapped.requests);
      if (!decision.allowed) return refuse({ kind: 'denied', message: decision.error ? `Access Denied: ${decision.error}` : accessDeniedMessage(signature.principal, decision, true) });
      // The user may list anything: only a role's missing key needs the ListBucket check.
      return { allowed: true, principal: admitted(signature.principal), ...(mapped.listBucketIfMissing && signature.principal.policies ? { askIfMissing: true } : {}) };
    },
  };
}

/** The gate of a local endpoint in the AWS JSON protocol (DynamoDB, Secrets Manager, Step Functions, EventBridge). */
export function jsonAuthorizer(service: JsonServiceName, options: GateOptions & JsonAuthorizationOptions): Authorizer {
  const { signingName } = JSON_SERVICES[service];
  const contentType = service === 'dynamodb' || service === 'states' ? 'application/x-amz-json-1.0' : 'application/x-amz-json-1.1';
  return {
    async authorize(request, rawBody) {
      const refuse = (problem: Problem) => {
        const refusal = jsonRefusal(problem, contentType);
        options.onRefused?.(refusal, request);
        return refusal;
      };
      const outside = outsideProblem(request, options.listening(), `local ${service} endpoint`);
      if (outside) return refuse(outside);
      const signature = await verifySignature(request, options.store, { service: signingName, uriEscapePath: true, body: rawBody ?? '' });
      if (!signature.ok) return refuse({ kind: 'signature', result: signature });
      const target = request.headers['x-amz-target'];
      const mapped = jsonAuthorization(service, Array.isArray(target) ? target[0] : (target as string | undefined), rawBody, options);
      if (typeof mapped === 'string') return refuse({ kind: 'unmapped', message: mapped });
      const decision = await evaluate(signature.principal, mapped);
      if (!decision.allowed) return refuse({ kind: 'denied', message: decision.error ? `Access denied: ${decision.error}` : accessDeniedMessage(signature.principal, decision) });
      return { allowed: true, principal: admitted(signature.principal) };
    },
  };
}

/** Sends a refusal on a node:http response. */
export function sendRefusal(response: ServerResponse, refusal: Refusal, method = 'POST'): void {
  response.writeHead(refusal.status, { ...refusal.headers, 'content-length': Buffer.byteLength(refusal.body) });
  response.end(method.toUpperCase() === 'HEAD' ? undefined : refusal.body);
}
