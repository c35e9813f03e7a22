/**
 * CDK app: `npx cdk synth` / `npx cdk deploy` (cdk.json runs this with tsx).
 * Settings come from context, e.g.
 *   npx cdk deploy -c routes=routes.json -c maxConcurrentProcessings=3
 * cdk-nag's AwsSolutions checks run at every synth; a finding that is neither
 * fixed nor acknowledged with a reason (lib/private/nag.ts) fails the synth.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { settingsFromContext } from '../lib/app-context.ts';
import { MapflowBridgeStack } from '../lib/mapflow-bridge-stack.ts';

const app = new App();
const { stackName, existing, ...bridge } = settingsFromContext(app);

new MapflowBridgeStack(app, stackName, {
  description: 'mapflow-bridge: S3 drop box for the Mapflow geospatial AI API',
  bridge,
  existing,
});

// cdk-nag 3 is a policy validation plugin (it replaced the v2 Aspect): unacknowledged findings fail the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
