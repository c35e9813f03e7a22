/**
 * The state machine definition for the local engine (aws-local-stepfunctions):
 * the very definition the stack deploys, synthesized from the same construct
 * with bundling skipped, its CloudFormation intrinsics resolved to plain
 * Lambda ARNs `arn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-<fn>`.
 */
import { App, Stack, type CfnResource } from 'aws-cdk-lib';
import { TASKS, type HandlerName } from 'mapflow-bridge/functions/core/catalog.ts';
import { LOCAL_AWS } from '../local-account.ts';
import { MapflowBridge, type PollPolicy } from 'mapflow-bridge/internal';

export const LOCAL_REGION = LOCAL_AWS.region;
export const LOCAL_ACCOUNT = LOCAL_AWS.account;

/** The ARN the local definition uses for a task function. */
export function localFunctionArn(fn: string): string {
  return `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:mapflow-bridge-${fn}`;
}

export interface LocalDefinitionOptions {
  pollPolicy?: Partial<PollPolicy>;
  maxConcurrentProcessings?: number;
}

export interface LocalDefinition {
  /** Plain ASL (JSONPath), no CloudFormation left in it. */
  definition: Record<string, unknown>;
  /** Every Task state of the definition with its handler (the catalogue's). */
  taskStates: { state: string; fn: HandlerName }[];
}

/** Synthesis takes seconds: the result is kept per options (callers get their own copy). */
const cache = new Map<string, LocalDefinition>();

export function synthLocalDefinition(options: LocalDefinitionOptions = {}): LocalDefinition {
  const key = JSON.stringify([options.pollPolicy ?? null, options.maxConcurrentProcessings ?? null]);
  let synthesized = cache.get(key);
  if (!synthesized) {
    synthesized = synthesize(options);
    cache.set(key, synthesized);
  }
  return structuredClone(synthesized);
}

function synthesize(options: LocalDefinitionOptions): LocalDefinition {
  // Bundling is skipped for every stack: only the definition is wanted.
  // Nor CDK's CloudFormation validation of the template: it is for a deploy (about 6 s of CPU per process).
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] }, builtinCloudFormationValidation: false });
  const stack = new Stack(app, 'MapflowBridgeLocal');
  const bridge = new MapflowBridge(stack, 'Bridge', {
    pollPolicy: options.pollPolicy,
    maxConcurrentProcessings: options.maxConcurrentProcessings,
    dashboard: false,
  });

  // Logical id of each function -> its plain local ARN.
  const functionArns = new Map<string, string>();
  for (const [fn, lambdaFunction] of Object.entries(bridge.functions)) {
    const logicalId = stack.resolve(stack.getLogicalId(lambdaFunction.node.defaultChild as CfnResource)) as string;
    functionArns.set(logicalId, localFunctionArn(fn));
  }
  const stateMachineLogicalId = stack.resolve(stack.getLogicalId(bridge.stateMachine.node.defaultChild as CfnResource)) as string;

  const template = app.synth().getStackByName(stack.stackName).template as {
    Resources: Record<string, { Properties?: { DefinitionString?: unknown } }>;
  };
  const definitionString = template.Resources[stateMachineLogicalId]?.Properties?.DefinitionString;
  if (definitionString === undefined) throw new Error('synthLocalDefinition: the state machine has no DefinitionString');
  const resolved = resolveIntrinsics(definitionString, functionArns);
  if (typeof resolved !== 'string') throw new Error('synthLocalDefinition: DefinitionString did not resolve to a string');
  const definition = JSON.parse(resolved) as Record<string, unknown>;

  return { definition, taskStates: taskStatesOf(definition) };
}

/** Every Task state (at any depth) with its handler, from the catalogue by state name. */
function taskStatesOf(definition: Record<string, unknown>): { state: string; fn: HandlerName }[] {
  const found: { state: string; fn: HandlerName }[] = [];
  const walk = (states: Record<string, Record<string, unknown>>): void => {
    for (const [name, state] of Object.entries(states)) {
      if (state.Type === 'Task') {
        const entry = TASKS.find((t) => t.state === name);
        if (!entry) throw new Error(`synthLocalDefinition: Task state '${name}' is not in the catalogue`);
        found.push({ state: name, fn: entry.fn });
      }
      const processor = (state.ItemProcessor ?? state.Iterator) as { States?: Record<string, Record<string, unknown>> } | undefined;
      if (processor?.States) walk(processor.States);
      for (const branch of (state.Branches as { States: Record<string, Record<string, unknown>> }[] | undefined) ?? []) walk(branch.States);
    }
  };
  walk(definition.States as Record<string, Record<string, unknown>>);
  return found;
}

const PSEUDO_PARAMETERS: Record<string, string> = {
  'AWS::Partition': 'aws',
  'AWS::Region': LOCAL_REGION,
  'AWS::AccountId': LOCAL_ACCOUNT,
  'AWS::URLSuffix': 'amazonaws.com',
};

/**
 * Resolves the intrinsics a DefinitionString can hold: Fn::Join, Fn::GetAtt
 * of a function's Arn, Ref of a pseudo parameter or a function. Anything else
 * is an error rather than a silently broken definition.
 */
export function resolveIntrinsics(value: unknown, functionArns: ReadonlyMap<string, string>): unknown {
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => resolveIntrinsics(v, functionArns));
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  if (keys.length === 1) {
    const [key] = keys;
    const argument = object[key];
    switch (key) {
      case 'Fn::Join': {
        const [separator, parts] = argument as [string, unknown[]];
        return parts.map((p) => String(resolveIntrinsics(p, functionArns))).join(separator);
      }
      case 'Fn::GetAtt': {
        const [logicalId, attribute] = argument as [string, string];
        const arn = functionArns.get(logicalId);
        if (attribute !== 'Arn' || arn === undefined) throw new Error(`synthLocalDefinition: cannot resolve Fn::GetAtt ${logicalId}.${attribute}`);
        return arn;
      }
      case 'Ref': {
        const name = argument as string;
        const resolved = PSEUDO_PARAMETERS[name] ?? functionArns.get(name);
        if (resolved === undefined) throw new Error(`synthLocalDefinition: cannot resolve Ref ${name}`);
        return resolved;
      }
      default:
        if (key.startsWith('Fn::')) throw new Error(`synthLocalDefinition: unsupported intrinsic ${key}`);
    }
  }
  return Object.fromEntries(keys.map((k) => [k, resolveIntrinsics(object[k], functionArns)]));
}
