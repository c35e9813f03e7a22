/**
 * Reads a synthesized cloud assembly (a `cdk.out` folder) the way CloudFormation
 * and the Lambda service would deploy it, for the local bridge: each bridge
 * function with its code asset, handler, timeout, memory, reserved concurrency
 * and environment; the state machine's definition; the trigger (rule, queue,
 * dead-letter queue, event source mapping) and the reconcile schedule; and each
 * role's policies.
 *
 * Every `Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::Join` (and `Fn::Select`/`Fn::Split`)
 * is resolved to the local resources in the fake account and region of
 * packages/local/src/local-account.ts: the ledger table and bucket by the names the local
 * bridge uses, queue URLs, secret and state machine ARNs. An intrinsic this
 * module cannot resolve is an error, never a silently wrong value.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { LOCAL_AWS } from '../local-account.ts';

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
  Metadata?: Record<string, unknown>;
  DependsOn?: unknown;
}

export interface CloudFormationTemplate {
  Resources: Record<string, TemplateResource>;
}

/** An IAM policy document with every intrinsic resolved to plain strings. */
export interface PolicyDocument {
  Version?: string;
  Statement: PolicyStatement[];
}

export interface PolicyStatement {
  Sid?: string;
  Effect: 'Allow' | 'Deny';
  Action?: string | string[];
  NotAction?: string | string[];
  Resource?: string | string[];
  NotResource?: string | string[];
  Condition?: Record<string, Record<string, unknown>>;
}

/** The names the local bridge gives the template's resources. */
export interface LocalNames {
  /** The data bucket (the one that sends its notifications to EventBridge). */
  bucket: string;
  /** The ledger table (the one named in LEDGER_TABLE). */
  ledgerTable: string;
  /** The state machine's name in its ARN. */
  stateMachineName: string;
  /** Base URL of queue URLs (default the regional SQS endpoint). */
  sqsBaseUrl?: string;
}

export interface AssemblyFunctionSpec {
  logicalId: string;
  /** BRIDGE_FUNCTION: the catalogue name the function runs. */
  bridgeFunction: string;
  /** The function's local name (`mapflow-bridge-<bridgeFunction>`) and ARN. */
  functionName: string;
  arn: string;
  /** Absolute folder of the code asset, and the module file and export of `Handler`. */
  assetDir: string;
  moduleFile: string;
  exportName: string;
  timeoutSeconds: number;
  memoryMb: number;
  reservedConcurrency?: number;
  /** The template's Environment.Variables, resolved. */
  environment: Record<string, string>;
  roleLogicalId?: string;
}

export interface QueueSpec {
  logicalId: string;
  name: string;
  url: string;
  arn: string;
  visibilityTimeoutSeconds: number;
  /** From the RedrivePolicy: after this many receives a message goes to the dead-letter queue. */
  maxReceiveCount?: number;
  deadLetterArn?: string;
}

export interface TriggerSpec {
  ruleArn: string;
  /** The rule's event pattern, resolved. */
  eventPattern: Record<string, unknown>;
  queue: QueueSpec;
  deadLetterQueue?: QueueSpec;
  batchSize: number;
  reportBatchItemFailures: boolean;
  functionLogicalId: string;
}

export interface ScheduleSpec {
  ruleArn: string;
  expression: string;
  functionLogicalId: string;
  /** EventBridge's retries of a delivery that failed (the target's RetryPolicy). */
  retryAttempts: number;
  /** Lambda's retries of an asynchronous invocation whose function returned an error (EventInvokeConfig, default 2). */
  asyncRetryAttempts: number;
}

export interface AssemblyModel {
  assemblyDir: string;
  templateFile: string;
  template: CloudFormationTemplate;
  functions: AssemblyFunctionSpec[];
  stateMachine: { logicalId: string; name: string; arn: string; definition: Record<string, unknown>; roleLogicalId?: string };
  trigger?: TriggerSpec;
  schedules: ScheduleSpec[];
  secrets: { logicalId: string; name: string; arn: string }[];
  eventBuses: { name: string; arn: string }[];
  /** The data bucket's VersioningConfiguration is Enabled (the stack's own bucket is versioned): the local S3 keeps versions. */
  dataBucketVersioned: boolean;
  resolve(value: unknown): unknown;
}

/** A template this module cannot run: what is missing or unresolvable. */
export class AssemblyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AssemblyError';
  }
}

const { partition, region, account, urlSuffix } = LOCAL_AWS;
const NO_VALUE = Symbol('AWS::NoValue');

/** The local name of a bridge function. */
export function localFunctionName(bridgeFunction: string): string {
  return `mapflow-bridge-${bridgeFunction}`;
}

/** The stack template of an assembly folder: the given file, or the one stack whose functions carry BRIDGE_FUNCTION. */
export async function findBridgeTemplate(assemblyDir: string, templateFile?: string): Promise<string> {
  if (templateFile) return templateFile;
  const manifest = JSON.parse(await readFile(path.join(assemblyDir, 'manifest.json'), 'utf8').catch((error: unknown) => {
    throw new AssemblyError(`${assemblyDir} is not a cloud assembly (no manifest.json): synthesize it with \`npx cdk synth -o <dir>\``, { cause: error });
  })) as { artifacts?: Record<string, { type?: string; properties?: { templateFile?: string } }> };
  const candidates: string[] = [];
  for (const artifact of Object.values(manifest.artifacts ?? {})) {
    const file = artifact.properties?.templateFile;
    if (artifact.type !== 'aws:cloudformation:stack' || !file) continue;
    const text = await readFile(path.join(assemblyDir, file), 'utf8');
    if (text.includes('"BRIDGE_FUNCTION"')) candidates.push(file);
  }
  if (candidates.length !== 1) {
    throw new AssemblyError(
      candidates.length === 0
        ? `no stack of the assembly in ${assemblyDir} holds a mapflow-bridge (no function with BRIDGE_FUNCTION)`
        : `several stacks of the assembly in ${assemblyDir} hold a mapflow-bridge (${candidates.join(', ')}): name one`,
    );
  }
  return candidates[0] as string;
}

/** Reads and resolves the bridge of a synthesized assembly. */
export async function readAssembly(assemblyDir: string, names: LocalNames, templateFile?: string): Promise<AssemblyModel> {
  const file = await findBridgeTemplate(assemblyDir, templateFile);
  const template = JSON.parse(await readFile(path.join(assemblyDir, file), 'utf8')) as CloudFormationTemplate;
  return modelOf(path.resolve(assemblyDir), file, template, names, await assetFolders(assemblyDir, file));
}

/**
 * The asset folder of each file asset's object key, from the stack's assets
 * manifest (`<stack>.assets.json`): what `cdk deploy` zips and uploads under
 * that key. An app synthesized without the CDK CLI (`node app.ts`) has no
 * aws:asset:path metadata on its functions; their Code.S3Key finds the folder.
 */
async function assetFolders(assemblyDir: string, templateFile: string): Promise<Map<string, string>> {
  type AssetsManifest = { files?: Record<string, { source?: { path?: string }; destinations?: Record<string, { objectKey?: string }> }> };
  const manifest: AssetsManifest = await readFile(path.join(assemblyDir, templateFile.replace(/\.template\.json$/, '.assets.json')), 'utf8').then(
    (text) => JSON.parse(text) as AssetsManifest,
    () => ({ files: {} }),
  );
  const folders = new Map<string, string>();
  for (const asset of Object.values(manifest.files ?? {})) {
    if (!asset.source?.path) continue;
    for (const destination of Object.values(asset.destinations ?? {})) {
      if (destination.objectKey) folders.set(destination.objectKey, asset.source.path);
    }
  }
  return folders;
}

export function modelOf(
  assemblyDir: string,
  templateFile: string,
  template: CloudFormationTemplate,
  names: LocalNames,
  assetsByObjectKey: ReadonlyMap<string, string> = new Map(),
): AssemblyModel {
  const resources = template.Resources ?? {};
  const props = (logicalId: string) => resources[logicalId]?.Properties ?? {};
  const ofType = (type: string) => Object.entries(resources).filter(([, r]) => r.Type === type);

  const dataBuckets = ofType('AWS::S3::Bucket').filter(([, r]) => isRecord(r.Properties?.NotificationConfiguration) &&
    'EventBridgeConfiguration' in (r.Properties?.NotificationConfiguration as Record<string, unknown>));
  const dataBucket = dataBuckets[0]?.[0];
  const functionNames = new Map<string, string>();
  for (const [logicalId, resource] of ofType('AWS::Lambda::Function')) {
    const bridgeFunction = bridgeFunctionOf(resource);
    const explicit = resource.Properties?.FunctionName;
    functionNames.set(logicalId, bridgeFunction ? localFunctionName(bridgeFunction) : typeof explicit === 'string' ? explicit : logicalId);
  }
  const sqsBase = (names.sqsBaseUrl ?? `https://sqs.${region}.${urlSuffix}`).replace(/\/+$/, '');
  const queueName = (logicalId: string) => stringProp(props(logicalId).QueueName) ?? logicalId;
  const secretName = (logicalId: string) => stringProp(props(logicalId).Name) ?? logicalId;
  const busName = (logicalId: string) => stringProp(props(logicalId).Name) ?? logicalId;
  const ruleName = (logicalId: string) => stringProp(props(logicalId).Name) ?? logicalId;
  const logGroupName = (logicalId: string) => stringProp(props(logicalId).LogGroupName) ?? `/local/${logicalId}`;
  const tableName = (logicalId: string) => (isLedgerTable(logicalId) ? names.ledgerTable : stringProp(props(logicalId).TableName) ?? logicalId);
  const bucketName = (logicalId: string) => (logicalId === dataBucket ? names.bucket : stringProp(props(logicalId).BucketName) ?? logicalId.toLowerCase());
  const stateMachineName = (logicalId: string) => names.stateMachineName ?? stringProp(props(logicalId).StateMachineName) ?? logicalId;
  // The ledger: the table LEDGER_TABLE names (the only one in the bridge's stack).
  const ledgerIds = new Set<string>();
  for (const [, resource] of ofType('AWS::Lambda::Function')) {
    const ref = (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.LEDGER_TABLE;
    if (isRecord(ref) && typeof ref.Ref === 'string') ledgerIds.add(ref.Ref);
  }
  function isLedgerTable(logicalId: string): boolean {
    return ledgerIds.has(logicalId) || (ledgerIds.size === 0 && ofType('AWS::DynamoDB::Table').length === 1);
  }

  const ref = (logicalId: string): string => {
    const resource = resources[logicalId];
    if (!resource) throw new AssemblyError(`Ref ${logicalId}: no such resource or pseudo parameter`);
    switch (resource.Type) {
      case 'AWS::DynamoDB::Table': return tableName(logicalId);
      case 'AWS::S3::Bucket': return bucketName(logicalId);
      case 'AWS::SecretsManager::Secret': return secretArn(logicalId);
      case 'AWS::Events::EventBus': return busName(logicalId);
      case 'AWS::Events::Rule': return ruleName(logicalId);
      case 'AWS::StepFunctions::StateMachine': return `arn:${partition}:states:${region}:${account}:stateMachine:${stateMachineName(logicalId)}`;
      case 'AWS::SQS::Queue': return `${sqsBase}/${account}/${queueName(logicalId)}`;
      case 'AWS::Lambda::Function': return functionNames.get(logicalId) as string;
      case 'AWS::Logs::LogGroup': return logGroupName(logicalId);
      case 'AWS::SNS::Topic': return `arn:${partition}:sns:${region}:${account}:${logicalId}`;
      case 'AWS::KMS::Key': return logicalId;
      default: return logicalId;
    }
  };
  // Secrets Manager appends six random characters to a secret's name in its ARN.
  const secretArn = (logicalId: string) => `arn:${partition}:secretsmanager:${region}:${account}:secret:${secretName(logicalId)}-LOCAL0`;
  const getAtt = (logicalId: string, attribute: string): string => {
    const resource = resources[logicalId];
    if (!resource) throw new AssemblyError(`Fn::GetAtt ${logicalId}.${attribute}: no such resource`);
    const arnOf: Record<string, () => string> = {
      'AWS::DynamoDB::Table': () => `arn:${partition}:dynamodb:${region}:${account}:table/${tableName(logicalId)}`,
      'AWS::S3::Bucket': () => `arn:${partition}:s3:::${bucketName(logicalId)}`,
      'AWS::SecretsManager::Secret': () => secretArn(logicalId),
      'AWS::Events::EventBus': () => `arn:${partition}:events:${region}:${account}:event-bus/${busName(logicalId)}`,
      'AWS::Events::Rule': () => `arn:${partition}:events:${region}:${account}:rule/${ruleName(logicalId)}`,
      'AWS::StepFunctions::StateMachine': () => ref(logicalId),
      'AWS::SQS::Queue': () => `arn:${partition}:sqs:${region}:${account}:${queueName(logicalId)}`,
      'AWS::Lambda::Function': () => `arn:${partition}:lambda:${region}:${account}:function:${functionNames.get(logicalId)}`,
      'AWS::IAM::Role': () => `arn:${partition}:iam::${account}:role/${logicalId}`,
      'AWS::Logs::LogGroup': () => `arn:${partition}:logs:${region}:${account}:log-group:${logGroupName(logicalId)}:*`,
      'AWS::SNS::Topic': () => ref(logicalId),
      'AWS::KMS::Key': () => `arn:${partition}:kms:${region}:${account}:key/${logicalId}`,
    };
    if (attribute === 'Arn') {
      const make = arnOf[resource.Type];
      if (!make) throw new AssemblyError(`Fn::GetAtt ${logicalId}.Arn: no local ARN for ${resource.Type}`);
      return make();
    }
    if (resource.Type === 'AWS::SQS::Queue' && attribute === 'QueueName') return queueName(logicalId);
    if (resource.Type === 'AWS::SQS::Queue' && attribute === 'QueueUrl') return ref(logicalId);
    if (resource.Type === 'AWS::Events::EventBus' && attribute === 'Name') return busName(logicalId);
    if (resource.Type === 'AWS::StepFunctions::StateMachine' && attribute === 'Name') return stateMachineName(logicalId);
    if (resource.Type === 'AWS::S3::Bucket' && attribute === 'RegionalDomainName') return `${bucketName(logicalId)}.s3.${region}.${urlSuffix}`;
    throw new AssemblyError(`Fn::GetAtt ${logicalId}.${attribute}: not resolved locally (${resource.Type})`);
  };
  const pseudo: Record<string, string> = {
    'AWS::Partition': partition,
    'AWS::Region': region,
    'AWS::AccountId': account,
    'AWS::URLSuffix': urlSuffix,
    'AWS::StackName': path.basename(templateFile).replace(/\.template\.json$/, ''),
  };

  const resolveAny = (value: unknown): unknown => {
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map(resolveAny).filter((v) => v !== NO_VALUE);
    const object = value as Record<string, unknown>;
    const keys = Object.keys(object);
    if (keys.length === 1) {
      const key = keys[0] as string;
      const argument = object[key];
      switch (key) {
        case 'Ref': {
          const name = argument as string;
          if (name === 'AWS::NoValue') return NO_VALUE;
          return pseudo[name] ?? ref(name);
        }
        case 'Fn::GetAtt': {
          const [logicalId, ...attribute] = typeof argument === 'string' ? argument.split('.') : (argument as string[]);
          return getAtt(logicalId as string, attribute.join('.'));
        }
        case 'Fn::Join': {
          const [separator, parts] = argument as [string, unknown];
          const list = resolveAny(parts);
          if (!Array.isArray(list)) throw new AssemblyError('Fn::Join of something that is not a list');
          return list.map(String).join(separator);
        }
        case 'Fn::Sub': {
          const [text, variables] = typeof argument === 'string' ? [argument, {}] : (argument as [string, Record<string, unknown>]);
          const resolvedVariables = resolveAny(variables) as Record<string, unknown>;
          return text.replace(/\$\{([^}]+)\}/g, (_match, name: string) => {
            if (name.startsWith('!')) return `\${${name.slice(1)}}`;
            if (name in resolvedVariables) return String(resolvedVariables[name]);
            if (pseudo[name] !== undefined) return pseudo[name] as string;
            const [logicalId, ...attribute] = name.split('.');
            return attribute.length > 0 ? getAtt(logicalId as string, attribute.join('.')) : ref(logicalId as string);
          });
        }
        case 'Fn::Select': {
          const [index, list] = argument as [unknown, unknown];
          const items = resolveAny(list);
          if (!Array.isArray(items)) throw new AssemblyError('Fn::Select of something that is not a list');
          return items[Number(resolveAny(index))];
        }
        case 'Fn::Split': {
          const [separator, text] = argument as [string, unknown];
          return String(resolveAny(text)).split(separator);
        }
        default:
          if (key.startsWith('Fn::')) throw new AssemblyError(`${key} is not resolved locally`);
      }
    }
    const out: Record<string, unknown> = {};
    for (const k of keys) {
      const v = resolveAny(object[k]);
      if (v !== NO_VALUE) out[k] = v;
    }
    return out;
  };

  // ---- functions
  const functions: AssemblyFunctionSpec[] = [];
  for (const [logicalId, resource] of ofType('AWS::Lambda::Function')) {
    const bridgeFunction = bridgeFunctionOf(resource);
    if (!bridgeFunction) continue;
    const p = resource.Properties ?? {};
    const objectKey = (p.Code as { S3Key?: unknown } | undefined)?.S3Key;
    const assetPath = resource.Metadata?.['aws:asset:path'] ?? (typeof objectKey === 'string' ? assetsByObjectKey.get(objectKey) : undefined);
    if (typeof assetPath !== 'string') throw new AssemblyError(`${logicalId} (${bridgeFunction}): no code asset found (no aws:asset:path metadata, no file asset for its S3Key)`);
    const handler = stringProp(p.Handler) ?? 'index.handler';
    const dot = handler.lastIndexOf('.');
    const variables = resolveAny((p.Environment as { Variables?: unknown } | undefined)?.Variables ?? {}) as Record<string, unknown>;
    const role = p.Role;
    functions.push({
      logicalId,
      bridgeFunction,
      functionName: functionNames.get(logicalId) as string,
      arn: getAtt(logicalId, 'Arn'),
      assetDir: path.resolve(assemblyDir, assetPath),
      moduleFile: handler.slice(0, dot),
      exportName: handler.slice(dot + 1),
      // CloudFormation's defaults when the template sets none.
      timeoutSeconds: typeof p.Timeout === 'number' ? p.Timeout : 3,
      memoryMb: typeof p.MemorySize === 'number' ? p.MemorySize : 128,
      ...(typeof p.ReservedConcurrentExecutions === 'number' ? { reservedConcurrency: p.ReservedConcurrentExecutions } : {}),
      environment: Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, String(v)])),
      ...(isRecord(role) && Array.isArray(role['Fn::GetAtt']) ? { roleLogicalId: (role['Fn::GetAtt'] as string[])[0] as string } : {}),
    });
  }
  if (functions.length === 0) throw new AssemblyError(`${templateFile} has no bridge function (no AWS::Lambda::Function with BRIDGE_FUNCTION)`);

  // ---- state machine
  const machines = ofType('AWS::StepFunctions::StateMachine');
  if (machines.length !== 1) throw new AssemblyError(`${templateFile} has ${machines.length} state machines; the bridge has one`);
  const [machineId, machine] = machines[0] as [string, TemplateResource];
  const definitionString = resolveAny(machine.Properties?.DefinitionString);
  if (typeof definitionString !== 'string') throw new AssemblyError(`${machineId}: DefinitionString did not resolve to a string`);
  const machineRole = machine.Properties?.RoleArn;

  // ---- trigger: the rule whose target is a queue that feeds a bridge function
  const queueSpec = (logicalId: string): QueueSpec => {
    const p = props(logicalId);
    const redrive = resolveAny(p.RedrivePolicy) as { deadLetterTargetArn?: string; maxReceiveCount?: number } | undefined;
    return {
      logicalId,
      name: queueName(logicalId),
      url: ref(logicalId),
      arn: getAtt(logicalId, 'Arn'),
      visibilityTimeoutSeconds: typeof p.VisibilityTimeout === 'number' ? p.VisibilityTimeout : 30,
      ...(redrive?.maxReceiveCount !== undefined ? { maxReceiveCount: Number(redrive.maxReceiveCount) } : {}),
      ...(redrive?.deadLetterTargetArn ? { deadLetterArn: redrive.deadLetterTargetArn } : {}),
    };
  };
  const queueByArn = new Map(ofType('AWS::SQS::Queue').map(([id]) => [getAtt(id, 'Arn'), id]));
  const functionByName = new Map([...functionNames].map(([id, name]) => [name, id]));
  const functionByArn = new Map([...functionNames.keys()].map((id) => [getAtt(id, 'Arn'), id]));
  let trigger: TriggerSpec | undefined;
  for (const [mappingId, mapping] of ofType('AWS::Lambda::EventSourceMapping')) {
    const p = resolveAny(mapping.Properties ?? {}) as { EventSourceArn?: string; FunctionName?: string; BatchSize?: number; FunctionResponseTypes?: string[] };
    const queueId = p.EventSourceArn ? queueByArn.get(p.EventSourceArn) : undefined;
    const functionId = p.FunctionName ? functionByName.get(p.FunctionName) ?? functionByArn.get(p.FunctionName) : undefined;
    if (!queueId || !functionId) continue;
    const rule = ofType('AWS::Events::Rule').find(([, r]) =>
      ((resolveAny(r.Properties?.Targets ?? []) as { Arn?: string }[]).some((t) => t.Arn === p.EventSourceArn)));
    if (!rule) throw new AssemblyError(`${mappingId}: no rule sends events to the queue ${queueId}`);
    const queue = queueSpec(queueId);
    const dlqId = queue.deadLetterArn ? queueByArn.get(queue.deadLetterArn) : undefined;
    trigger = {
      ruleArn: getAtt(rule[0], 'Arn'),
      eventPattern: resolveAny(rule[1].Properties?.EventPattern) as Record<string, unknown>,
      queue,
      ...(dlqId ? { deadLetterQueue: queueSpec(dlqId) } : {}),
      // Lambda's default batch size for SQS.
      batchSize: typeof p.BatchSize === 'number' ? p.BatchSize : 10,
      reportBatchItemFailures: (p.FunctionResponseTypes ?? []).includes('ReportBatchItemFailures'),
      functionLogicalId: functionId,
    };
  }

  // ---- schedules: rules with a ScheduleExpression that target a function
  const schedules: ScheduleSpec[] = [];
  for (const [ruleId, rule] of ofType('AWS::Events::Rule')) {
    const expression = rule.Properties?.ScheduleExpression;
    if (typeof expression !== 'string') continue;
    for (const target of resolveAny(rule.Properties?.Targets ?? []) as { Arn?: string; RetryPolicy?: { MaximumRetryAttempts?: number } }[]) {
      const functionId = target.Arn ? functionByArn.get(target.Arn) : undefined;
      if (!functionId) continue;
      // EventBridge retries a failed asynchronous invocation up to 185 times by default.
      // Once invoked, Lambda retries a function error twice unless the function's
      // EventInvokeConfig says otherwise (docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html).
      const invokeConfig = ofType('AWS::Lambda::EventInvokeConfig').find(([, c]) => {
        const name = resolveAny(c.Properties?.FunctionName);
        return typeof name === 'string' && (functionByName.get(name) ?? functionByArn.get(name)) === functionId;
      });
      const asyncRetries = invokeConfig?.[1].Properties?.MaximumRetryAttempts;
      schedules.push({
        ruleArn: getAtt(ruleId, 'Arn'),
        expression,
        functionLogicalId: functionId,
        retryAttempts: target.RetryPolicy?.MaximumRetryAttempts ?? 185,
        asyncRetryAttempts: typeof asyncRetries === 'number' ? asyncRetries : 2,
      });
    }
  }

  return {
    assemblyDir,
    templateFile,
    template,
    functions,
    stateMachine: {
      logicalId: machineId,
      name: stateMachineName(machineId),
      arn: ref(machineId),
      definition: JSON.parse(definitionString) as Record<string, unknown>,
      ...(isRecord(machineRole) && Array.isArray(machineRole['Fn::GetAtt']) ? { roleLogicalId: (machineRole['Fn::GetAtt'] as string[])[0] as string } : {}),
    },
    ...(trigger ? { trigger } : {}),
    schedules,
    secrets: ofType('AWS::SecretsManager::Secret').map(([id]) => ({ logicalId: id, name: secretName(id), arn: secretArn(id) })),
    eventBuses: ofType('AWS::Events::EventBus').map(([id]) => ({ name: busName(id), arn: getAtt(id, 'Arn') })),
    dataBucketVersioned: dataBucket !== undefined && (props(dataBucket).VersioningConfiguration as { Status?: unknown } | undefined)?.Status === 'Enabled',
    resolve: resolveAny,
  };
}

/**
 * The policy documents of a role (its inline Policies and every
 * AWS::IAM::Policy attached to it), with every intrinsic resolved to plain
 * ARNs of the local resources. Managed policies are not followed (the bridge's
 * roles have none).
 */
export function rolePolicies(model: AssemblyModel, roleLogicalId: string): PolicyDocument[] {
  const resources = model.template.Resources;
  const role = resources[roleLogicalId];
  if (!role || role.Type !== 'AWS::IAM::Role') throw new AssemblyError(`${roleLogicalId} is not an AWS::IAM::Role of the template`);
  const documents: PolicyDocument[] = [];
  for (const inline of (role.Properties?.Policies as { PolicyDocument: unknown }[] | undefined) ?? []) {
    documents.push(normalisePolicy(model.resolve(inline.PolicyDocument)));
  }
  for (const resource of Object.values(resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = (resource.Properties?.Roles as unknown[] | undefined) ?? [];
    if (!roles.some((r) => isRecord(r) && r.Ref === roleLogicalId)) continue;
    documents.push(normalisePolicy(model.resolve(resource.Properties?.PolicyDocument)));
  }
  return documents;
}

/** A principal of the template: a bridge function or the state machine, with its role's resolved policies. */
export interface Principal {
  /** The function's catalogue name (BRIDGE_FUNCTION), or 'state-machine'. */
  name: string;
  roleArn: string;
  policies: PolicyDocument[];
}

/** For each bridge function and for the state machine: its role's policy documents, resolved (the hook of local IAM). */
export function principalsOf(model: AssemblyModel): Principal[] {
  const principals: Principal[] = [];
  const roleArn = (logicalId: string) => `arn:${partition}:iam::${account}:role/${logicalId}`;
  for (const fn of model.functions) {
    if (!fn.roleLogicalId) continue;
    principals.push({ name: fn.bridgeFunction, roleArn: roleArn(fn.roleLogicalId), policies: rolePolicies(model, fn.roleLogicalId) });
  }
  const machineRole = model.stateMachine.roleLogicalId;
  if (machineRole) principals.push({ name: 'state-machine', roleArn: roleArn(machineRole), policies: rolePolicies(model, machineRole) });
  return principals;
}

function normalisePolicy(document: unknown): PolicyDocument {
  if (!isRecord(document) || document.Statement === undefined) throw new AssemblyError('a policy without Statement');
  const statements = Array.isArray(document.Statement) ? document.Statement : [document.Statement];
  return { ...(typeof document.Version === 'string' ? { Version: document.Version } : {}), Statement: statements as PolicyStatement[] };
}

function bridgeFunctionOf(resource: TemplateResource): string | undefined {
  const name = (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.BRIDGE_FUNCTION;
  return typeof name === 'string' ? name : undefined;
}

function stringProp(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
