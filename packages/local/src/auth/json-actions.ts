/**
 * What IAM authorizes for a request in the AWS JSON protocol (awsJson1_0 /
 * awsJson1_1: POST / with `X-Amz-Target: <Prefix>.<Operation>` and a JSON
 * body): the action is `<iam prefix>:<Operation>`, the resource comes from
 * the body, per operation.
 *
 * DynamoDB: the table (or `table/<t>/index/<i>` for a Query or Scan of an
 * index); batch operations name every table of RequestItems; transactions
 * need the item action on each item's table, as AWS documents.
 * Other services (Secrets Manager, Step Functions, EventBridge): the resource
 * field of the operation (SecretId, stateMachineArn, executionArn, the
 * event bus of each entry), else '*'. An endpoint that knows better (the
 * state machine of a task token, say) passes `resourceOf`.
 */
import { LOCAL_AWS } from './account.ts';
import type { IamRequest } from './s3-actions.ts';

export type JsonBody = Record<string, unknown>;

/** The AWS JSON services the gate knows: target prefix -> IAM prefix. */
export const JSON_SERVICES = {
  dynamodb: { targetPrefix: 'DynamoDB_20120810', iamPrefix: 'dynamodb', signingName: 'dynamodb' },
  secretsmanager: { targetPrefix: 'secretsmanager', iamPrefix: 'secretsmanager', signingName: 'secretsmanager' },
  states: { targetPrefix: 'AWSStepFunctions', iamPrefix: 'states', signingName: 'states' },
  events: { targetPrefix: 'AWSEvents', iamPrefix: 'events', signingName: 'events' },
} as const;

export type JsonServiceName = keyof typeof JSON_SERVICES;

const arn = (service: string, resource: string) => `arn:${LOCAL_AWS.partition}:${service}:${LOCAL_AWS.region}:${LOCAL_AWS.accountId}:${resource}`;

export function tableArn(name: string): string {
  return name.startsWith('arn:') ? name : arn('dynamodb', `table/${name}`);
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

/** The operation of an X-Amz-Target for `service`, or undefined when the target is not that service's. */
export function operationOf(service: JsonServiceName, target: string | undefined): string | undefined {
  const prefix = `${JSON_SERVICES[service].targetPrefix}.`;
  if (!target?.startsWith(prefix)) return undefined;
  const operation = target.slice(prefix.length);
  return /^[A-Za-z]+$/.test(operation) ? operation : undefined;
}

/** DynamoDB operations whose resource is '*' (not a table). */
const DYNAMODB_ACCOUNT_WIDE = new Set(['ListTables', 'DescribeEndpoints', 'DescribeLimits', 'ListBackups', 'ListGlobalTables', 'ListExports', 'ListImports', 'ListStreams']);

function dynamodbRequests(operation: string, body: JsonBody): IamRequest[] | string {
  const action = `dynamodb:${operation}`;
  if (DYNAMODB_ACCOUNT_WIDE.has(operation)) return [{ action, resource: '*' }];
  if (operation === 'BatchGetItem' || operation === 'BatchWriteItem') {
    const tables = Object.keys((body['RequestItems'] ?? {}) as object);
    return tables.length > 0 ? tables.map((table) => ({ action, resource: tableArn(table) })) : 'RequestItems names no table';
  }
  if (operation === 'TransactWriteItems' || operation === 'TransactGetItems') {
    const items = Array.isArray(body['TransactItems']) ? (body['TransactItems'] as Record<string, { TableName?: unknown } | undefined>[]) : [];
    const kinds: Record<string, string> = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem', Get: 'GetItem' };
    const requests: IamRequest[] = [];
    for (const item of items) {
      const [kind, detail] = Object.entries(item ?? {})[0] ?? [];
      const table = text(detail?.TableName);
      if (!kind || !kinds[kind] || !table) return `a transaction item names no ${Object.keys(kinds).join('/')} with a TableName`;
      requests.push({ action: `dynamodb:${kinds[kind]}`, resource: tableArn(table) });
    }
    return requests.length > 0 ? requests : 'TransactItems is empty';
  }
  const resourceArn = text(body['ResourceArn']);
  if (resourceArn) return [{ action, resource: resourceArn }];
  const table = text(body['TableName']);
  if (!table) return `${operation} names no TableName`;
  const index = text(body['IndexName']);
  return [{ action, resource: index && (operation === 'Query' || operation === 'Scan') ? `${tableArn(table)}/index/${index}` : tableArn(table) }];
}

function genericResources(service: Exclude<JsonServiceName, 'dynamodb'>, operation: string, body: JsonBody): string[] {
  if (service === 'secretsmanager') {
    const id = text(body['SecretId']);
    if (!id) return ['*'];
    return [id.startsWith('arn:') ? id : arn('secretsmanager', `secret:${id}`)];
  }
  if (service === 'states') {
    const resource = text(body['executionArn']) ?? text(body['stateMachineArn']) ?? text(body['activityArn']) ?? text(body['mapRunArn']);
    return [resource ?? '*'];
  }
  // events: PutEvents names a bus per entry (the default bus when none); the rest a Name or an Arn.
  if (operation === 'PutEvents') {
    const entries = Array.isArray(body['Entries']) ? (body['Entries'] as Record<string, unknown>[]) : [];
    const buses = new Set(entries.map((entry) => text(entry?.['EventBusName']) ?? 'default'));
    if (buses.size === 0) buses.add('default');
    return [...buses].map((bus) => (bus.startsWith('arn:') ? bus : arn('events', `event-bus/${bus}`)));
  }
  const bus = text(body['EventBusName']);
  return [bus ? (bus.startsWith('arn:') ? bus : arn('events', `event-bus/${bus}`)) : '*'];
}

export interface JsonAuthorizationOptions {
  /** The resource(s) of an operation when the endpoint knows better than the body (the state machine of a task token, say). */
  resourceOf?: (operation: string, body: JsonBody) => string[] | undefined;
}

/**
 * The IAM requests of a JSON-protocol request, or a string saying why it
 * maps to none (the caller refuses it).
 */
export function jsonAuthorization(service: JsonServiceName, target: string | undefined, rawBody: string | Uint8Array | undefined, options: JsonAuthorizationOptions = {}): IamRequest[] | string {
  const operation = operationOf(service, target);
  if (!operation) return `X-Amz-Target ${JSON.stringify(target ?? '')} is not a ${service} operation`;
  let body: JsonBody = {};
  const bodyText = typeof rawBody === 'string' ? rawBody : rawBody ? Buffer.from(rawBody).toString('utf8') : '';
  if (bodyText.trim() !== '') {
    try {
      const parsed: unknown = JSON.parse(bodyText);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return 'the body is not a JSON object';
      body = parsed as JsonBody;
    } catch {
      return 'the body is not JSON';
    }
  }
  const given = options.resourceOf?.(operation, body);
  const action = `${JSON_SERVICES[service].iamPrefix}:${operation}`;
  if (given) return given.map((resource) => ({ action, resource }));
  if (service === 'dynamodb') return dynamodbRequests(operation, body);
  return genericResources(service, operation, body).map((resource) => ({ action, resource }));
}
