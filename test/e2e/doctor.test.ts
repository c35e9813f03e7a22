/**
 * `mapflow-bridge doctor`: against the local bridge (simulator, s3rver,
 * DynamoDB Local, all on 127.0.0.1) with a good and a bad token, and against a
 * "deployed stack" whose AWS answers come from aws-sdk-client-mock (the
 * Mapflow answers still come from the local simulator).
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DescribeRuleCommand, EventBridgeClient, ListTargetsByRuleCommand } from '@aws-sdk/client-eventbridge';
import { GetBucketNotificationConfigurationCommand, S3Client } from '@aws-sdk/client-s3';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_POLL_POLICY } from '../../functions/polling/poll-policy.ts';
import { runDoctorCommand, type DoctorAwsClients } from '../../packages/cli/src/doctor.ts';
import { writeMapflowAccess } from '../../packages/cli/src/state-dir.ts';
import { startLocalBridge, type LocalBridge } from '../../packages/local/src/bridge.ts';
import { startSimulator, type RunningSimulator } from '../../packages/simulator/src/index.ts';
import { testTmp } from '../support/temp.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';

const GOOD_TOKEN = 'doctor-good-token-0123456789';
const BAD_TOKEN = 'doctor-bad-token-9876543210';
// Starting DynamoDB Local and s3rver takes a while on a loaded machine.
const START_TIMEOUT = 240_000;
const CHECK_TIMEOUT = 120_000;

let simulator: RunningSimulator;
let bridge: LocalBridge;
let stateDir: string;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(testTmp(), 'doctor-'));
  stateDir = path.join(scratch, 'state');
  simulator = await startSimulator({ host: '127.0.0.1', port: 0, token: GOOD_TOKEN, email: 'doctor@example.com', dataDir: path.join(scratch, 'sim') });
}, START_TIMEOUT);

afterAll(async () => {
  await simulator?.close();
  await rm(scratch, { recursive: true, force: true });
}, START_TIMEOUT);

async function doctor(args: string[], awsClients?: DoctorAwsClients): Promise<{ code: number; lines: string[] }> {
  const printed: string[] = [];
  const code = await runDoctorCommand(args, { out: (s) => printed.push(s), awsClients });
  return { code, lines: printed.join('\n').split('\n') };
}

describe('doctor --local', () => {
  beforeAll(async () => {
    bridge = await startLocalBridge({ stateDir, ...(await sharedLedgerOptions('doctor')), mapflow: { url: simulator.url, token: GOOD_TOKEN }, log: () => undefined, reconcileIntervalMs: 0 });
    // What `mapflow-bridge start` writes for the other commands.
    await writeFile(
      path.join(stateDir, 'endpoints.json'),
      JSON.stringify({ ...bridge.endpoints, bucket: bridge.bucket, ledgerTable: bridge.ledgerTable, pid: process.pid }),
    );
  }, START_TIMEOUT);
  afterAll(async () => {
    await bridge?.close();
  }, START_TIMEOUT);

  it('polls a Mapflow given by URL at the production pace, not the simulator\'s', () => {
    // Assess: what the bridge gave its handlers (and its definition) to poll with
    expect(JSON.parse(process.env.POLL_POLICY ?? '{}')).toEqual(DEFAULT_POLL_POLICY);
  });

  it('passes every check with the token the bridge uses, one line per check', async () => {
    // Act
    const { code, lines } = await doctor(['--local', '--state-dir', stateDir, '--token', GOOD_TOKEN]);

    // Assess
    expect(lines.filter((l) => !l.startsWith('PASS  '))).toEqual([]);
    expect(lines.map((l) => l.split(/\s+/)[1])).toEqual(expect.arrayContaining(['local', 'mapflow', 'route', 'bucket', 'ledger']));
    expect(lines.some((l) => /route default .*model '.*Buildings'/.test(l))).toBe(true);
    expect(code).toBe(0);
  }, CHECK_TIMEOUT);

  it('fails the token check with a token Mapflow refuses, and never prints the token', async () => {
    // Act
    const { code, lines } = await doctor(['--local', '--state-dir', stateDir, '--token', BAD_TOKEN]);

    // Assess
    expect(code).toBe(1);
    expect(lines.find((l) => l.includes('mapflow token'))).toMatch(/^FAIL .*refused the token/);
    expect(lines.join('\n')).not.toContain(BAD_TOKEN);
    expect(lines.find((l) => l.includes(' bucket '))).toMatch(/^PASS/);
  }, CHECK_TIMEOUT);

  it('fails a route whose model the account does not have', async () => {
    // Prepare
    const routes = path.join(scratch, 'routes.json');
    await writeFile(routes, JSON.stringify({ routes: [{ name: 'roads', prefix: 'roads/', model: 'No Such Model' }] }));

    // Act
    const { code, lines } = await doctor(['--local', '--state-dir', stateDir, '--token', GOOD_TOKEN, '--routes', routes]);

    // Assess
    expect(code).toBe(1);
    expect(lines.find((l) => l.includes('route roads'))).toMatch(/^FAIL .*'No Such Model' is not available/);
  }, CHECK_TIMEOUT);

  it('passes without flags on the default set-up: the simulator token comes from the state folder (0600), not the shell', async () => {
    // Prepare: what `start` writes on the embedded simulator, and a shell with no MAPFLOW_TOKEN
    const file = await writeMapflowAccess(stateDir, { url: bridge.endpoints.mapflow, token: GOOD_TOKEN, email: 'doctor@example.com', pid: process.pid });
    const saved = process.env.MAPFLOW_TOKEN;
    delete process.env.MAPFLOW_TOKEN;
    let result: { code: number; lines: string[] };
    try {
      // Act: the README line as written
      result = await doctor(['--local', '--state-dir', stateDir]);
    } finally {
      if (saved !== undefined) process.env.MAPFLOW_TOKEN = saved;
    }
    // Assess
    expect(result.code, result.lines.join('\n')).toBe(0);
    expect(result.lines.find((l) => l.includes('mapflow token'))).toMatch(/^PASS/);
    expect(result.lines.join('\n')).not.toContain(GOOD_TOKEN);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    await rm(file);
  }, CHECK_TIMEOUT);

  it('says to start the bridge when no bridge runs there, and exits 1', async () => {
    const { code, lines } = await doctor(['--local', '--state-dir', path.join(scratch, 'nothing'), '--token', GOOD_TOKEN]);
    expect(code).toBe(1);
    expect(lines).toEqual([expect.stringMatching(/^FAIL  local bridge .*npm start/)]);
  });

  it('with the bridge stopped, fails once and skips the checks that follow from it', async () => {
    // Prepare: an endpoints.json left by a bridge whose process is gone (killed before it could remove it)
    const left = path.join(scratch, 'stopped');
    await mkdir(left, { recursive: true });
    const gone = spawnSync(process.execPath, ['-e', '']).pid;
    await writeFile(path.join(left, 'endpoints.json'), JSON.stringify({ ...bridge.endpoints, mapflow: 'http://127.0.0.1:1/rest', bucket: bridge.bucket, ledgerTable: bridge.ledgerTable, pid: gone }));

    // Act
    const { code, lines } = await doctor(['--local', '--state-dir', left, '--token', GOOD_TOKEN]);

    // Assess: one FAIL that says why, then SKIP lines that say why, none a FAIL of its own
    expect(code).toBe(1);
    expect(lines.filter((l) => l.startsWith('FAIL'))).toEqual([expect.stringMatching(/^FAIL  local bridge .*not running: start the bridge again/)]);
    const rest = lines.slice(1);
    expect(rest.map((l) => l.split(/\s{2,}/)[1])).toEqual(expect.arrayContaining(['mapflow token', 'route default', 'bucket', 'ledger']));
    for (const line of rest) expect(line).toMatch(/^SKIP  .*skipped: the local bridge is not running$/);
  });

  it('refuses unclear options with exit 2', async () => {
    expect((await doctor([])).code).toBe(2);
    expect((await doctor(['--local', '--stack', 'x'])).code).toBe(2);
    expect((await doctor(['--stack', 'x', '--token', 't'])).code).toBe(2);
  });
});

describe('doctor --stack (AWS answers mocked)', () => {
  const BUCKET = 'mapflow-bridge-bucket-1';
  const QUEUE_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/trigger';
  const DLQ_URL = 'https://sqs.eu-west-1.amazonaws.com/123456789012/dlq';
  const QUEUE_ARN = 'arn:aws:sqs:eu-west-1:123456789012:trigger';
  const DLQ_ARN = 'arn:aws:sqs:eu-west-1:123456789012:dlq';
  const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:mapflow-AbCdEf';

  /** A healthy stack; `change` breaks one thing. */
  function stack(change: { token?: string; eventBridge?: boolean; dlqMessages?: number; ruleState?: string; noSecret?: boolean } = {}): DoctorAwsClients {
    const clients: DoctorAwsClients = {
      cloudformation: new CloudFormationClient({ region: 'eu-west-1' }),
      secrets: new SecretsManagerClient({ region: 'eu-west-1' }),
      s3: new S3Client({ region: 'eu-west-1' }),
      events: new EventBridgeClient({ region: 'eu-west-1' }),
      sqs: new SQSClient({ region: 'eu-west-1' }),
    };
    const outputs = {
      SecretArn: SECRET_ARN,
      BucketName: BUCKET,
      DeadLetterQueueUrl: DLQ_URL,
      TriggerQueueUrl: QUEUE_URL,
      TriggerRuleName: 'Stack-InboxObjectCreated-1',
      MapflowBaseUrl: simulator.url,
      MapflowAuthScheme: 'auto',
      Routes: 'default',
    };
    mockClient(clients.cloudformation)
      .on(DescribeStacksCommand)
      .resolves({ Stacks: [{ StackName: 'MapflowBridge', CreationTime: new Date(), StackStatus: 'CREATE_COMPLETE', Outputs: Object.entries(outputs).map(([OutputKey, OutputValue]) => ({ OutputKey, OutputValue })) }] });
    const secrets = mockClient(clients.secrets);
    if (change.noSecret) secrets.on(GetSecretValueCommand).rejects(Object.assign(new Error('Secrets Manager can not find the specified secret.'), { name: 'ResourceNotFoundException' }));
    else secrets.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ token: change.token ?? GOOD_TOKEN, email: '' }) });
    mockClient(clients.s3)
      .on(GetBucketNotificationConfigurationCommand, { Bucket: BUCKET })
      .resolves(change.eventBridge === false ? {} : { EventBridgeConfiguration: {} });
    const events = mockClient(clients.events);
    events.on(DescribeRuleCommand).resolves({
      State: (change.ruleState ?? 'ENABLED') as 'ENABLED',
      EventPattern: JSON.stringify({ source: ['aws.s3'], detail: { bucket: { name: [BUCKET] }, object: { key: [{ prefix: 'inbox/' }] } } }),
    });
    events.on(ListTargetsByRuleCommand).resolves({ Targets: [{ Id: 'Target0', Arn: QUEUE_ARN }] });
    const sqs = mockClient(clients.sqs);
    sqs.on(GetQueueAttributesCommand, { QueueUrl: QUEUE_URL }).resolves({ Attributes: { QueueArn: QUEUE_ARN, RedrivePolicy: JSON.stringify({ deadLetterTargetArn: DLQ_ARN, maxReceiveCount: 5 }) } });
    sqs.on(GetQueueAttributesCommand, { QueueUrl: DLQ_URL }).resolves({
      Attributes: { QueueArn: DLQ_ARN, ApproximateNumberOfMessages: String(change.dlqMessages ?? 0), ApproximateNumberOfMessagesNotVisible: '0', ApproximateNumberOfMessagesDelayed: '0' },
    });
    return clients;
  }

  it('passes a healthy stack: secret, token, routes, bucket events, rule, queue, empty DLQ', async () => {
    // Act
    const { code, lines } = await doctor(['--stack', 'MapflowBridge'], stack());

    // Assess
    expect(lines.filter((l) => !l.startsWith('PASS  '))).toEqual([]);
    for (const name of ['stack', 'secret', 'mapflow token', 'route default', 'bucket events', 'trigger rule', 'trigger queue', 'dead-letter queue']) {
      expect(lines.some((l) => l.startsWith(`PASS  ${name}`)), name).toBe(true);
    }
    expect(code).toBe(0);
  }, CHECK_TIMEOUT);

  it.each([
    ['a token Mapflow refuses', { token: BAD_TOKEN }, /^FAIL  mapflow token .*refused the token/],
    ['no secret', { noSecret: true }, /^FAIL  secret .*can not find/],
    ['a bucket without EventBridge notifications', { eventBridge: false }, /^FAIL  bucket events .*does not send events to EventBridge/],
    ['a disabled rule', { ruleState: 'DISABLED' }, /^FAIL  trigger rule .*DISABLED/],
    ['messages in the dead-letter queue', { dlqMessages: 3 }, /^FAIL  dead-letter queue .*3 message/],
  ])('fails on %s (exit 1) and names it', async (_label, change, expected) => {
    // Act
    const { code, lines } = await doctor(['--stack', 'MapflowBridge'], stack(change));

    // Assess
    expect(code).toBe(1);
    expect(lines.some((l) => expected.test(l)), lines.join('\n')).toBe(true);
    expect(lines.join('\n')).not.toContain(BAD_TOKEN);
  }, CHECK_TIMEOUT);
});
