/**
 * Helpers of the CDK tests: synthesize a bridge with bundling skipped (fast,
 * no esbuild), find a function's resources and policy statements.
 */
import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Construct } from 'constructs';
import { MapflowBridge, type MapflowBridgeProps } from '../../lib/mapflow-bridge.ts';
import type { BridgeFunctionName } from '../../lib/private/defaults.ts';

export interface SynthesizedBridge {
  app: App;
  stack: Stack;
  bridge: MapflowBridge;
  template: Template;
}

/** A stack with one bridge; `configure` may add bring-your-own resources to the stack first. */
export function synthBridge(
  props: MapflowBridgeProps | ((stack: Stack) => MapflowBridgeProps) = {},
  options: { bundle?: boolean; outdir?: string } = {},
): SynthesizedBridge {
  const app = new App({
    ...(options.outdir ? { outdir: options.outdir } : {}),
    context: options.bundle ? {} : { 'aws:cdk:bundling-stacks': [] },
  });
  const stack = new Stack(app, 'Test');
  const bridge = new MapflowBridge(stack, 'Bridge', typeof props === 'function' ? props(stack) : props);
  return { app, stack, bridge, template: Template.fromStack(stack) };
}

export interface PolicyStatement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

export function actionsOf(statement: PolicyStatement): string[] {
  return Array.isArray(statement.Action) ? statement.Action : [statement.Action];
}

export function resourcesOf(statement: PolicyStatement): unknown[] {
  return Array.isArray(statement.Resource) ? statement.Resource : [statement.Resource];
}

/** Logical id of a construct's default CloudFormation resource. */
export function logicalIdOf(stack: Stack, construct: Construct): string {
  const child = construct.node.defaultChild;
  if (!child) throw new Error(`${construct.node.path} has no default child`);
  return stack.resolve(stack.getLogicalId(child as never)) as string;
}

/** All statements of the policies attached to a bridge function's role. */
export function statementsOfFunction(synth: SynthesizedBridge, name: BridgeFunctionName): PolicyStatement[] {
  const role = synth.bridge.functions[name].role;
  if (!role) throw new Error(`${name} has no role`);
  const roleId = logicalIdOf(synth.stack, role);
  const policies = synth.template.findResources('AWS::IAM::Policy');
  return Object.values(policies)
    .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement as PolicyStatement[]);
}

/** Statements that grant `action` (exact). */
export function statementsWith(statements: PolicyStatement[], action: string): PolicyStatement[] {
  return statements.filter((s) => s.Effect === 'Allow' && actionsOf(s).includes(action));
}

/** Renders an S3 object ARN resource (Fn::Join of the bucket ARN and a suffix) as '<bucket>/suffix'. */
export function objectArnSuffix(resource: unknown): string | undefined {
  const join = (resource as { 'Fn::Join'?: [string, unknown[]] })['Fn::Join'];
  if (!join) return undefined;
  const last = join[1][join[1].length - 1];
  return typeof last === 'string' ? last : undefined;
}

/** EventBridge wildcard semantics: '*' matches any characters, '\\*' a literal star. */
export function wildcardMatches(pattern: string, value: string): boolean {
  let regex = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\' && i + 1 < pattern.length) regex += escape(pattern[++i]);
    else if (c === '*') regex += '.*';
    else regex += escape(c);
  }
  return new RegExp(`^${regex}$`, 's').test(value);
}

function escape(c: string): string {
  return c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
