/**
 * The real-account integration test of mapflow-bridge, as a CDK app for
 * `integ-runner` (@aws-cdk/integ-tests-alpha): a stack with the Mapflow
 * simulator behind a function URL (no Mapflow credits spent) and a bridge
 * pointed at it; a GeoJSON and a GeoTIFF are dropped into the inbox during the
 * deployment; the assertions wait for their results in S3, their SUCCEEDED
 * ledger rows and the "Job Succeeded" events; integ-runner then destroys the
 * stack (removalPolicy DESTROY empties the buckets).
 *
 * Run it (needs an AWS account, credentials and a bootstrapped region):
 *   npx integ-runner --directory test/integ --app "npx tsx {filePath}" --parallel-regions eu-west-1 --force
 */
import * as path from 'node:path';
import { App, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { ExpectedResult, IntegTest, Match } from '@aws-cdk/integ-tests-alpha';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as s3deploy from 'aws-cdk-lib/aws-s3-deployment';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { GSI_BY_STATUS } from '../../functions/ledger/schema.ts';
import { PROJECT_ROOT } from '../../lib/private/bridge-function.ts';
import { MapflowBridge } from '../../lib/mapflow-bridge.ts';
import { MapflowSimulator } from '../../packages/simulator/cdk/mapflow-simulator.ts';

export const INTEG_STACK_NAME = 'MapflowBridgeInteg';
/** About 1 km² in central Amsterdam: one cheap simulated processing. */
export const INTEG_AOI = {
  type: 'FeatureCollection',
  features: [
    {
      type: 'Feature',
      properties: { name: 'integ' },
      geometry: { type: 'Polygon', coordinates: [[[4.885, 52.366], [4.900, 52.366], [4.900, 52.375], [4.885, 52.375], [4.885, 52.366]]] },
    },
  ],
};
/** The GeoTIFF goes under buildings/, the route that uploads and then processes images. */
export const INTEG_GEOTIFF = 'cogeo.tif';
const WAIT = { totalTimeout: Duration.minutes(25), interval: Duration.seconds(30) };

export interface IntegApp {
  stack: Stack;
  bridge: MapflowBridge;
  simulator: MapflowSimulator;
  test: IntegTest;
}

export function buildIntegApp(app: App): IntegApp {
  const stack = new Stack(app, INTEG_STACK_NAME, { description: 'mapflow-bridge integration test (deleted after the test)' });
  const simulator = new MapflowSimulator(stack, 'Simulator', { processingSeconds: 20 });
  const bridge = new MapflowBridge(stack, 'Bridge', {
    mapflowBaseUrl: simulator.baseUrl,
    secret: simulator.secret,
    removalPolicy: RemovalPolicy.DESTROY,
    dashboard: false,
    maxConcurrentProcessings: 2,
    pollPolicy: { initialSeconds: 5, maxSeconds: 15, maxJobSeconds: 3_600 },
    routes: [
      { name: 'default', prefix: '', creditBudget: 10_000 },
      { name: 'buildings', prefix: 'buildings/', model: '🏠 Buildings', processImages: true, creditBudget: 10_000 },
    ],
  });

  // Every event the bridge publishes lands in a queue the assertions read.
  const eventsQueue = new sqs.Queue(stack, 'BridgeEvents', { enforceSSL: true, removalPolicy: RemovalPolicy.DESTROY });
  new events.Rule(stack, 'AllBridgeEvents', {
    eventBus: bridge.eventBus,
    eventPattern: { source: [bridge.settings.eventSource] },
    targets: [new targets.SqsQueue(eventsQueue)],
  });

  // The drops, once the whole bridge (rule, queue, dispatch) exists.
  const dropGeoJson = new s3deploy.BucketDeployment(stack, 'DropGeoJson', {
    destinationBucket: bridge.bucket,
    destinationKeyPrefix: bridge.settings.prefixes.inbox,
    sources: [s3deploy.Source.jsonData('aoi.geojson', INTEG_AOI)],
    prune: false,
  });
  const dropGeoTiff = new s3deploy.BucketDeployment(stack, 'DropGeoTiff', {
    destinationBucket: bridge.bucket,
    destinationKeyPrefix: `${bridge.settings.prefixes.inbox}buildings/`,
    sources: [s3deploy.Source.asset(path.join(PROJECT_ROOT, 'samples', 'rasters'), { exclude: ['*', `!${INTEG_GEOTIFF}`] })],
    prune: false,
  });
  dropGeoJson.node.addDependency(bridge);
  dropGeoTiff.node.addDependency(bridge);

  const test = new IntegTest(app, 'MapflowBridgeIntegTest', {
    testCases: [stack],
    diffAssets: false,
    cdkCommandOptions: { destroy: { args: { force: true } } },
  });
  const results = test.assertions
    .awsApiCall('S3', 'listObjectsV2', { Bucket: bridge.bucket.bucketName, Prefix: bridge.settings.prefixes.results })
    .expect(
      ExpectedResult.objectLike({
        Contents: Match.arrayWith([
          Match.objectLike({ Key: Match.stringLikeRegexp('^results/aoi\\.geojson/.+/result\\.geojson$') }),
          Match.objectLike({ Key: Match.stringLikeRegexp(`^results/buildings/${INTEG_GEOTIFF.replace('.', '\\.')}/.+/result\\.geojson$`) }),
        ]),
      }),
    )
    .waitForAssertions(WAIT);
  const ledger = test.assertions
    .awsApiCall('DynamoDB', 'query', {
      TableName: bridge.ledgerTable.tableName,
      IndexName: GSI_BY_STATUS,
      KeyConditionExpression: '#status = :status',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':status': { S: 'SUCCEEDED' } },
      Select: 'COUNT',
    })
    .expect(ExpectedResult.objectLike({ Count: 2 }))
    .waitForAssertions(WAIT);
  const succeededEvents = test.assertions
    .awsApiCall('SQS', 'receiveMessage', { QueueUrl: eventsQueue.queueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 10 })
    .expect(ExpectedResult.objectLike({ Messages: Match.arrayWith([Match.objectLike({ Body: Match.stringLikeRegexp('"detail-type":"Job Succeeded"') })]) }))
    .waitForAssertions(WAIT);
  results.next(ledger).next(succeededEvents);
  return { stack, bridge, simulator, test };
}
