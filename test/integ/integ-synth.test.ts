/**
 * The real-account integration test (bridge-integ-app.ts) synthesizes: the
 * test stack (simulator behind a function URL, the bridge pointed at it, the
 * two drops) and the assertion stack integ-runner deploys after it. Running it
 * for real needs an account: see docs/deploy.md.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildIntegApp, INTEG_STACK_NAME, type IntegApp } from './bridge-integ-app.ts';

const SYNTH_TIMEOUT = 240_000;

let integ: IntegApp;
let template: Template;
let assertions: Template;
beforeAll(() => {
  // Prepare / Act: synthesize like integ-runner does (bundling skipped: only the templates are checked).
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  integ = buildIntegApp(app);
  const assembly = app.synth();
  template = Template.fromJSON(assembly.getStackByName(INTEG_STACK_NAME).template as Record<string, unknown>);
  const assertStack = assembly.stacks.find((s) => s.stackName !== INTEG_STACK_NAME);
  if (!assertStack) throw new Error('no assertion stack');
  assertions = Template.fromJSON(assertStack.template as Record<string, unknown>);
}, SYNTH_TIMEOUT);

describe('integration test app', () => {
  it('packages the simulator as one Lambda instance behind a public function URL', () => {
    const simulatorId = integ.stack.resolve((integ.simulator.function.node.defaultChild as unknown as { logicalId: string }).logicalId) as string;
    template.hasResourceProperties('AWS::Lambda::Url', { AuthType: 'NONE', TargetFunctionArn: { 'Fn::GetAtt': [simulatorId, 'Arn'] } });
    expect(template.toJSON().Resources[simulatorId].Properties.ReservedConcurrentExecutions).toBe(1);
  });

  it('points every bridge function at the simulator URL and its secret', () => {
    const functions = Object.values(integ.bridge.functions).map((f) => integ.stack.resolve((f.node.defaultChild as unknown as { logicalId: string }).logicalId) as string);
    const resources = template.toJSON().Resources as Record<string, { Properties: { Environment: { Variables: Record<string, unknown> } } }>;
    for (const id of functions) {
      const env = resources[id].Properties.Environment.Variables;
      expect(JSON.stringify(env.MAPFLOW_BASE_URL), id).toContain('FunctionUrl');
      expect(JSON.stringify(env.MAPFLOW_SECRET_ARN), id).toContain('SimulatorToken');
    }
  });

  it('is deleted whole after the test: buckets emptied, nothing retained', () => {
    const resources = Object.values(template.toJSON().Resources as Record<string, { Type: string; DeletionPolicy?: string }>);
    expect(resources.filter((r) => r.DeletionPolicy === 'Retain').map((r) => r.Type)).toEqual([]);
    expect(resources.filter((r) => r.Type === 'Custom::S3AutoDeleteObjects')).toHaveLength(2);
  });

  it('drops a GeoJSON and a GeoTIFF into the inbox after the bridge exists', () => {
    const deployments = template.findResources('Custom::CDKBucketDeployment');
    const prefixes = Object.values(deployments).map((d) => d.Properties.DestinationBucketKeyPrefix);
    expect(prefixes.sort()).toEqual(['inbox/', 'inbox/buildings/']);
    for (const deployment of Object.values(deployments)) expect((deployment.DependsOn as string[]).length).toBeGreaterThan(20);
  });

  it('asserts results in S3, SUCCEEDED ledger rows and "Job Succeeded" events, waiting for them', () => {
    const calls = assertions.toJSON().Resources as Record<string, { Type: string; Properties: Record<string, unknown> }>;
    const apiCalls = Object.values(calls).filter((r) => r.Type.startsWith('Custom::DeployAssert@SdkCall'));
    const described = apiCalls.map((c) => `${c.Properties.service} ${c.Properties.api}`);
    expect(described).toEqual(expect.arrayContaining(['S3 listObjectsV2', 'DynamoDB query', 'SQS receiveMessage']));
    // waitForAssertions: a state machine polls each call until it matches.
    expect(Object.values(calls).filter((r) => r.Type === 'AWS::StepFunctions::StateMachine').length).toBeGreaterThanOrEqual(3);
  });
});
