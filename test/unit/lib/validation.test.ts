import { App, Duration, Errors, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { describe, expect, it } from 'vitest';
import { settingsFromContext } from '../../../lib/app-context.ts';
import { MapflowBridge, type MapflowBridgeProps } from '../../../lib/mapflow-bridge.ts';
import { MAX_POLLS } from '../../../lib/private/defaults.ts';
import { MapflowBridgeConfigError } from '../../../lib/errors.ts';
import { resolveBridgeSettings } from '../../../lib/private/validation.ts';

function construct(props: MapflowBridgeProps | ((stack: Stack) => MapflowBridgeProps)): () => MapflowBridge {
  return () => {
    const stack = new Stack(new App({ context: { 'aws:cdk:bundling-stacks': [] } }), 'Test');
    return new MapflowBridge(stack, 'Bridge', typeof props === 'function' ? props(stack) : props);
  };
}

/** What `act` throws (undefined when it returns). */
function thrown(act: () => unknown): unknown {
  try {
    act();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('props validation', () => {
  it.each<[string, MapflowBridgeProps, RegExp]>([
    ['results under the inbox', { resultsPrefix: 'inbox/results/' }, /resultsPrefix 'inbox\/results\/' lies under inboxPrefix 'inbox\/'/],
    ['inbox under work', { inboxPrefix: 'work/in/' }, /inboxPrefix 'work\/in\/' lies under workPrefix/],
    ['a prefix without a trailing slash', { inboxPrefix: 'inbox' }, /inboxPrefix 'inbox' must be .* ending in '\/'/],
    ['a prefix with a wildcard', { inboxPrefix: 'in*box/' }, /inboxPrefix/],
    ['a leading slash', { failedPrefix: '/failed/' }, /failedPrefix/],
    ['plain http', { mapflowBaseUrl: 'http://api.mapflow.ai/rest' }, /must use https/],
    ['not a URL', { mapflowBaseUrl: 'api.mapflow.ai' }, /is not a URL/],
    ['credentials in the URL', { mapflowBaseUrl: 'https://me:tok@api.mapflow.ai/rest' }, /must not carry credentials/],
    ['an unknown auth scheme', { authScheme: 'token' as never }, /authScheme 'token' must be one of basic, bearer, auto/],
    ['zero concurrency', { maxConcurrentProcessings: 0 }, /maxConcurrentProcessings must be an integer from 1 to 100 \(got 0\)/],
    ['fractional concurrency', { maxConcurrentProcessings: 2.5 }, /maxConcurrentProcessings/],
    ['too many polls for the execution history', { pollPolicy: { maxPolls: MAX_POLLS + 1 } }, /pollPolicy.maxPolls must be an integer from 1 to/],
    ['maxSeconds below initialSeconds', { pollPolicy: { initialSeconds: 30, maxSeconds: 10 } }, /maxSeconds \(10\) must not be below pollPolicy.initialSeconds \(30\)/],
    ['a shrinking factor', { pollPolicy: { factor: 0.5 } }, /pollPolicy.factor/],
    ['an unknown poll field', { pollPolicy: { everySeconds: 5 } as never }, /unknown field 'everySeconds'/],
    ['an aws. event source', { eventSource: 'aws.s3' }, /must not start with 'aws.'/],
    ['routes with a duplicate name', { routes: [{ name: 'a', prefix: '' }, { name: 'a', prefix: 'b/' }] }, /invalid routes: .*a/],
    ['routes that are too large for the environment', { routes: Array.from({ length: 60 }, (_, i) => ({ name: `route-${i}`, prefix: `folder-number-${i}/`, model: '🏠 Buildings' })) }, /Lambda environments hold 4 KB/],
  ])('rejects %s with a clear message', (_case, props, message) => {
    // Act
    const error = thrown(construct(props));
    // Assess: a CDK ValidationError on the bridge's path, with the message
    expect(error).toBeInstanceOf(MapflowBridgeConfigError);
    expect(Errors.isValidationError(error)).toBe(true);
    expect((error as MapflowBridgeConfigError).constructPath).toBe('Test/Bridge');
    expect((error as Error).message).toMatch(message);
  }, 240_000);

  it('rejects options that only apply to a created bucket when the bucket is yours', () => {
    const own = (stack: Stack, id = 'Own') => s3.Bucket.fromBucketName(stack, id, id.toLowerCase());
    expect(construct((stack) => ({ bucket: own(stack), workExpiration: Duration.days(3) }))).toThrow(/workExpiration only applies/);
    expect(Errors.isValidationError(thrown(construct((stack) => ({ bucket: own(stack), workExpiration: Duration.days(3) }))))).toBe(true);
    expect(construct((stack) => ({ bucket: own(stack), serverAccessLogsBucket: own(stack, 'Logs') }))).toThrow(
      /serverAccessLogsBucket only applies/,
    );
  }, 240_000);

  it('applies the documented defaults', () => {
    // Act
    const settings = resolveBridgeSettings(new App(), {});

    // Assess
    expect(settings).toEqual({
      routes: undefined,
      prefixes: { inbox: 'inbox/', results: 'results/', failed: 'failed/', work: 'work/' },
      mapflowBaseUrl: 'https://api.mapflow.ai/rest',
      authScheme: 'auto',
      maxConcurrentProcessings: 5,
      pollPolicy: { initialSeconds: 15, maxSeconds: 60, factor: 1.5, maxJobSeconds: 86_400 },
      eventSource: 'mapflow.bridge',
    });
  }, 240_000);

  it('accepts valid routes and passes them to the functions as ROUTES', () => {
    // Prepare
    const routes = [{ name: 'default', prefix: '' }, { name: 'roads', prefix: 'roads/', model: 'Roads' }];

    // Act
    const bridge = construct({ routes, maxConcurrentProcessings: 3, mapflowBaseUrl: 'https://api.example.test/rest/' })();
    const [fn] = Object.values(
      Template.fromStack(Stack.of(bridge)).findResources('AWS::Lambda::Function', {
        Properties: { Environment: { Variables: { BRIDGE_FUNCTION: 'plan-processing' } } },
      }),
    );
    const env = fn.Properties.Environment.Variables as Record<string, string>;

    // Assess
    expect(JSON.parse(env.ROUTES).routes.map((r: { name: string }) => r.name)).toEqual(['default', 'roads']);
    expect(env.MAX_CONCURRENT_PROCESSINGS).toBe('3');
    expect(env.MAPFLOW_BASE_URL).toBe('https://api.example.test/rest');
  }, 240_000);
});

describe('settingsFromContext', () => {
  it('reads -c values (strings) into bridge settings', () => {
    // Prepare
    const app = new App({
      context: {
        routes: '[{"name":"default","prefix":""}]',
        maxConcurrentProcessings: '3',
        pollPolicy: '{"maxPolls":100}',
        removalPolicy: 'destroy',
        logRetentionDays: '30',
        reconcileMinutes: '5',
        bucketName: 'existing-bucket',
        dashboard: 'false',
      },
    });

    // Act
    const settings = settingsFromContext(app);

    // Assess
    expect(settings).toMatchObject({
      stackName: 'MapflowBridge',
      routes: [{ name: 'default', prefix: '' }],
      maxConcurrentProcessings: 3,
      pollPolicy: { maxPolls: 100 },
      removalPolicy: RemovalPolicy.DESTROY,
      logRetention: 30,
      existing: { bucketName: 'existing-bucket' },
      dashboard: false,
    });
    expect(settings.reconcileSchedule?.expressionString).toBe('rate(5 minutes)');
  }, 240_000);

  it('explains bad context values', () => {
    const bad = (context: Record<string, string>) => () => settingsFromContext(new App({ context }));
    expect(bad({ maxConcurrentProcessings: 'five' })).toThrow(/maxConcurrentProcessings must be an integer/);
    expect(bad({ routes: '{not json' })).toThrow(/routes is neither JSON nor the path of a JSON file/);
    expect(bad({ removalPolicy: 'keep' })).toThrow(/removalPolicy must be retain or destroy/);
    expect(bad({ logRetentionDays: '31' })).toThrow(/not a CloudWatch Logs retention/);
    expect(bad({ bucketKmsKeyArn: 'arn:aws:kms:eu-west-1:123456789012:key/abc' })).toThrow(/bucketKmsKeyArn only applies with bucketName/);
    expect(bad({ bucketName: 'b', bucketKmsKeyArn: 'my-key' })).toThrow(/bucketKmsKeyArn must be a KMS key ARN/);
    // a CDK ValidationError on the app (the context is the app's)
    expect(Errors.isValidationError(thrown(bad({ removalPolicy: 'keep' })))).toBe(true);
    expect(thrown(bad({ removalPolicy: 'keep' }))).toBeInstanceOf(MapflowBridgeConfigError);
  }, 240_000);
});
