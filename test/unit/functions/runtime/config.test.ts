import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../../../functions/core/errors.ts';
import { DEFAULTS, isLocal, loadConfig } from '../../../../functions/runtime/config.ts';

const minimal = { LEDGER_TABLE: 'bridge-ledger' };

function problemsOf(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigurationError);
    return (error as Error).message;
  }
  throw new Error('loadConfig accepted an invalid environment');
}

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    // Prepare / Act
    const config = loadConfig(minimal);
    // Assess
    expect(config).toMatchObject({
      ledgerTable: 'bridge-ledger',
      eventBusName: 'default',
      eventSource: 'mapflow.bridge',
      mapflow: { baseUrl: 'https://api.mapflow.ai/rest', authScheme: 'auto' },
      prefixes: { inbox: 'inbox/', results: 'results/', failed: 'failed/', work: 'work/' },
      maxConcurrentProcessings: 5,
      pollPolicy: DEFAULTS.pollPolicy,
      local: {},
    });
    expect(config.routes.routes.length).toBeGreaterThan(0);
    expect(config.mapflow.secretArn).toBeUndefined();
    expect(isLocal(config)).toBe(false);
  });

  it('reads every variable, normalising prefixes and the base URL', () => {
    // Prepare
    const env = {
      ...minimal,
      EVENT_BUS_NAME: 'jobs',
      EVENT_SOURCE: 'acme.maps',
      MAPFLOW_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:1:secret:mapflow-AbC',
      MAPFLOW_BASE_URL: 'http://127.0.0.1:8080/rest/',
      MAPFLOW_AUTH_SCHEME: 'Bearer',
      INBOX_PREFIX: 'drop',
      RESULTS_PREFIX: 'out/',
      MAX_CONCURRENT_PROCESSINGS: '2',
      POLL_POLICY: '{"initialSeconds": 5, "maxPolls": 10}',
      STATE_MACHINE_ARN: 'arn:aws:states:eu-west-1:123456789012:stateMachine:bridge',
      BRIDGE_S3_ENDPOINT: 'http://127.0.0.1:4569',
      BRIDGE_EVENTS_FILE: '/tmp/events.jsonl',
      ROUTES: JSON.stringify({ routes: [{ name: 'only', prefix: '' }] }),
    };
    // Act
    const config = loadConfig(env);
    // Assess
    expect(config.mapflow).toEqual({ baseUrl: 'http://127.0.0.1:8080/rest', authScheme: 'bearer', secretArn: env.MAPFLOW_SECRET_ARN });
    expect(config.prefixes).toEqual({ inbox: 'drop/', results: 'out/', failed: 'failed/', work: 'work/' });
    expect(config.pollPolicy).toEqual({ ...DEFAULTS.pollPolicy, initialSeconds: 5, maxPolls: 10 });
    expect(config.maxConcurrentProcessings).toBe(2);
    expect(config.routes.routes.map((r) => r.name)).toEqual(['only']);
    expect(config.local).toEqual({ s3Endpoint: 'http://127.0.0.1:4569', eventsFile: '/tmp/events.jsonl' });
    expect(config.region).toBe('us-east-1');
    expect(isLocal(config)).toBe(true);
  });

  it('names the missing table', () => {
    expect(problemsOf({})).toMatch(/LEDGER_TABLE is required/);
  });

  it('reports every problem at once, each naming its variable', () => {
    // Prepare
    const env = {
      LEDGER_TABLE: 'x',
      EVENT_SOURCE: 'aws.s3',
      MAPFLOW_BASE_URL: 'ftp://example',
      MAPFLOW_AUTH_SCHEME: 'digest',
      MAX_CONCURRENT_PROCESSINGS: '0',
      POLL_POLICY: '{"initialSeconds": 90, "factor": 0.5, "typo": 1}',
      STATE_MACHINE_ARN: 'bridge',
      BRIDGE_DYNAMODB_ENDPOINT: 'localhost:8000',
    };
    // Act
    const message = problemsOf(env);
    // Assess
    for (const expected of [
      /LEDGER_TABLE "x" is not a DynamoDB table name/,
      /EVENT_SOURCE "aws\.s3" may not start with "aws\."/,
      /MAPFLOW_BASE_URL "ftp:\/\/example" is not an http\(s\) URL/,
      /MAPFLOW_AUTH_SCHEME "digest" must be one of basic, bearer, auto/,
      /MAX_CONCURRENT_PROCESSINGS "0" must be a whole number from 1/,
      /POLL_POLICY has an unknown key "typo"/,
      /POLL_POLICY\.factor 0\.5 must be at least 1/,
      /POLL_POLICY\.initialSeconds 90 is above maxSeconds 60/,
      /STATE_MACHINE_ARN "bridge" is not a state machine ARN/,
      /BRIDGE_DYNAMODB_ENDPOINT "localhost:8000" is not an http\(s\) URL/,
    ]) {
      expect(message).toMatch(expected);
    }
  });

  it('refuses results or work areas inside the inbox (they would trigger new jobs)', () => {
    expect(problemsOf({ ...minimal, RESULTS_PREFIX: 'inbox/results/' })).toMatch(
      /INBOX_PREFIX "inbox\/" and RESULTS_PREFIX "inbox\/results\/" overlap/,
    );
    expect(problemsOf({ ...minimal, WORK_PREFIX: '/work' })).toMatch(/WORK_PREFIX "\/work" must not start with "\/"/);
  });

  it('explains a POLL_POLICY that is not JSON and a non-integer poll count', () => {
    expect(problemsOf({ ...minimal, POLL_POLICY: 'fast' })).toMatch(/POLL_POLICY is not JSON/);
    expect(problemsOf({ ...minimal, POLL_POLICY: '{"maxPolls": 2.5}' })).toMatch(/POLL_POLICY\.maxPolls must be a positive whole number/);
  });

  it('passes on the routes module\'s message for bad ROUTES', () => {
    expect(problemsOf({ ...minimal, ROUTES: '{not json' })).toMatch(/ROUTES/);
  });
});
