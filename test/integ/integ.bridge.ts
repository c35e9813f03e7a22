/**
 * Entry of the integration test for integ-runner (see bridge-integ-app.ts):
 *   npx integ-runner --directory test/integ --app "npx tsx {filePath}" --parallel-regions eu-west-1 --force
 */
import { App } from 'aws-cdk-lib';
import { buildIntegApp } from './bridge-integ-app.ts';

const app = new App();
buildIntegApp(app);
app.synth();
