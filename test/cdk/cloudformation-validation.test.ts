/**
 * CDK's built-in CloudFormation validation (aws-cdk-lib's CloudFormationValidatePlugin:
 * resource schemas, value ranges, the default rules) is what a user's `cdk synth` runs on
 * the bridge's template. Here it runs in its strictest form: its errors not downgraded
 * (`@aws-cdk/core:validateAgainstDefaultRules`) and a warning failing the synth
 * (`@aws-cdk/core:strictCfnValidateErrors`), on a bridge with every optional resource.
 * The plugin is registered on the app, so it runs although the test
 * setup turns the automatic one off for every other synth (test/support/setup.ts:
 * about 6 s of CPU per worker and child process, 0.3 s per synth).
 */
import { App, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { CloudFormationValidatePlugin } from 'aws-cdk-lib/core';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { MapflowBridge } from '../../lib/mapflow-bridge.ts';

const STRICT = {
  'aws:cdk:bundling-stacks': [],
  '@aws-cdk/core:validateAgainstDefaultRules': true,
  '@aws-cdk/core:strictCfnValidateErrors': true,
};

/** An app with CDK's CloudFormation validation registered in strict mode, and a stack in it. */
function strictApp(): { app: App; stack: Stack } {
  const app = new App({ context: STRICT });
  Validations.of(app).addPlugins(new CloudFormationValidatePlugin());
  return { app, stack: new Stack(app, 'Test') };
}

// The validation engine starts in a second or two, longer on a loaded machine.
const SYNTH_TIMEOUT = 120_000;

describe("CDK's CloudFormation validation of the bridge's template", () => {
  it('finds nothing in a bridge with every optional resource (dashboard, alarms on a credit budget, schema registry, retention, DESTROY)', () => {
    // Prepare: the options only add resources to the default bridge's (one synth: about 2 s of CPU each in strict mode)
    const { app, stack } = strictApp();
    new MapflowBridge(stack, 'Bridge', {
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

  it('fails the synth on a value CloudFormation refuses, so the check above is live (a queue message hidden for 999,999 s)', () => {
    // Prepare: the same app, with a resource CloudFormation would refuse
    const { app, stack } = strictApp();
    new sqs.CfnQueue(stack, 'Queue', { visibilityTimeout: 999_999 });

    // Act / Assess: the synth fails with the plugin's finding
    expect(() => app.synth()).toThrow(/VisibilityTimeout: 999999 is greater than the maximum/);
  }, SYNTH_TIMEOUT);
});
