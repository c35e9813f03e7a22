/**
 * CDK's built-in CloudFormation validation (aws-cdk-lib's CloudFormationValidatePlugin:
 * resource schemas, value ranges, the default rules) is what a user's `cdk synth` runs on
 * the bridge's template. Here it runs in its strictest form: its errors not downgraded
 * (`@aws-cdk/core:validateAgainstDefaultRules`) and a warning failing the synth
 * (`@aws-cdk/core:strictCfnValidateErrors`), on the default bridge and on one with every
 * optional resource. The plugin is registered on the app, so it runs although the test
 * setup turns the automatic one off for every other synth (test/support/setup.ts:
 * about 6 s of CPU per worker and child process, 0.3 s per synth).
 */
import { App, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { CloudFormationValidatePlugin } from 'aws-cdk-lib/core';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import { MapflowBridge, type MapflowBridgeProps } from '../../lib/mapflow-bridge.ts';

const STRICT = {
  'aws:cdk:bundling-stacks': [],
  '@aws-cdk/core:validateAgainstDefaultRules': true,
  '@aws-cdk/core:strictCfnValidateErrors': true,
};

/** An app with the bridge and CDK's CloudFormation validation registered in strict mode. */
function strictApp(props: MapflowBridgeProps = {}): { app: App; bridge: MapflowBridge } {
  const app = new App({ context: STRICT });
  Validations.of(app).addPlugins(new CloudFormationValidatePlugin());
  const bridge = new MapflowBridge(new Stack(app, 'Test'), 'Bridge', props);
  return { app, bridge };
}

// The validation engine starts in a second or two, longer on a loaded machine.
const SYNTH_TIMEOUT = 120_000;

describe("CDK's CloudFormation validation of the bridge's template", () => {
  it('finds nothing in the default bridge', () => {
    // Prepare
    const { app } = strictApp();

    // Act / Assess
    expect(() => app.synth()).not.toThrow();
  }, SYNTH_TIMEOUT);

  it('finds nothing in a bridge with every optional resource (alarms on a credit budget, schema registry, retention, DESTROY)', () => {
    // Prepare
    const { app } = strictApp({
      alarms: { dailyCreditBudget: 500 },
      eventSchemaRegistry: { registryName: 'mapflow-bridge-events' },
      ledgerRetentionDays: 30,
      removalPolicy: RemovalPolicy.DESTROY,
      sourceMaps: true,
      maxConcurrentProcessings: 3,
    });

    // Act / Assess
    expect(() => app.synth()).not.toThrow();
  }, SYNTH_TIMEOUT);

  it('fails the synth on a value CloudFormation refuses (a function timeout of 20,000 s)', () => {
    // Prepare: an escape hatch past the L2's own checks
    const { app, bridge } = strictApp();
    (bridge.functions['poll-processing'].node.defaultChild as lambda.CfnFunction).addPropertyOverride('Timeout', 20_000);

    // Act / Assess: the synth fails with the plugin's finding
    expect(() => app.synth()).toThrow(/Timeout: 20000 is greater than the maximum/);
  }, SYNTH_TIMEOUT);
});
