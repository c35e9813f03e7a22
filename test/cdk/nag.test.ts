import { App, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import { MapflowBridge } from '../../lib/mapflow-bridge.ts';
import { bridgeNagAcknowledgements } from '../../lib/private/nag.ts';
import { synthBridge } from './support.ts';

/** Synthesizes (so the acknowledging aspect runs) and checks with the AwsSolutions pack. */
function nagReport(app: App) {
  app.synth();
  return new AwsSolutionsChecks(app).validateScope(app);
}

// Synthesis with cdk-nag is slow on a loaded machine.
const SYNTH_TIMEOUT = 240_000;

describe('cdk-nag AwsSolutions', () => {
  it('reports no unacknowledged error or warning for the default bridge', () => {
    // Prepare
    const { app } = synthBridge();

    // Act
    const report = nagReport(app);

    // Assess
    expect(report.violations.map((v) => `${v.severity} ${v.ruleName}`)).toEqual([]);
    expect(report.success).toBe(true);
  }, SYNTH_TIMEOUT);

  it('reports no unacknowledged finding with removalPolicy DESTROY (the bucket auto-delete provider)', () => {
    // Prepare
    const { app } = synthBridge({ removalPolicy: RemovalPolicy.DESTROY });

    // Act
    const report = nagReport(app);

    // Assess
    expect(report.violations.map((v) => `${v.severity} ${v.ruleName} ${v.violatingResources.map((r) => r.constructPath).join()}`)).toEqual([]);
  }, SYNTH_TIMEOUT);

  it('still reports a finding nobody acknowledged (a wildcard action added to a function)', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Test');
    const bridge = new MapflowBridge(stack, 'Bridge');
    bridge.functions['poll-processing'].addToRolePolicy(new iam.PolicyStatement({ actions: ['s3:*'], resources: ['*'] }));

    // Act
    const report = nagReport(app);

    // Assess
    expect(report.violations.map((v) => v.ruleName)).toContain('AwsSolutions-IAM5[Action::s3:*]');
  }, SYNTH_TIMEOUT);

  it('gives every acknowledgement a written reason', () => {
    const acknowledgements = bridgeNagAcknowledgements(['inbox/', 'results/', 'failed/', 'work/']);
    expect(acknowledgements.length).toBeGreaterThan(0);
    for (const ack of acknowledgements) {
      expect(ack.reason.length, ack.rule).toBeGreaterThan(40);
    }
  });

  it('runs as a validation plugin on the app, like bin/app.ts registers it', () => {
    // Prepare: a wildcard nobody acknowledged makes the synth fail.
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Test');
    const bridge = new MapflowBridge(stack, 'Bridge');
    bridge.functions['finish-job'].addToRolePolicy(new iam.PolicyStatement({ actions: ['dynamodb:*'], resources: ['*'] }));
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));

    // Act / Assess
    expect(() => app.synth()).toThrow(/Validation failed|AwsSolutions/);
  }, SYNTH_TIMEOUT);

  it('the clean bridge synthesizes with the plugin registered', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    new MapflowBridge(new Stack(app, 'Test'), 'Bridge');
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
  }, SYNTH_TIMEOUT);
});
