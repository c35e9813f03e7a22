/** CDK app of the example subscriber (see stack.ts). */
import { App } from 'aws-cdk-lib';
import { SubscriberStack } from './stack.ts';

const app = new App();
new SubscriberStack(app, 'MapflowBridgeSubscriberExample');
