/**
 * The simulator's Lambda adapter (packages/simulator/src/lambda.ts) answers function
 * URL events: the token from its secret is required, answers come back with
 * their status, and binary bodies survive base64 both ways.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const TOKEN = 'integ-simulator-token-1234567890';
const secrets = mockClient(SecretsManagerClient);
let handler: typeof import('../src/lambda.ts').handler;

beforeAll(async () => {
  process.env.SIM_SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:sim-AbCdEf';
  process.env.SIM_PROCESSING_SECONDS = '1';
  secrets.on(GetSecretValueCommand).resolves({ SecretString: JSON.stringify({ token: TOKEN, email: 'integ@mapflow-bridge.invalid' }) });
  ({ handler } = await import('../src/lambda.ts'));
});
afterAll(() => secrets.restore());

const event = (rawPath: string, authorization?: string) => ({
  rawPath,
  headers: authorization ? { authorization, host: 'abc.lambda-url.eu-west-1.on.aws' } : {},
  requestContext: { domainName: 'abc.lambda-url.eu-west-1.on.aws', http: { method: 'GET' } },
});
const basic = (token: string) => `Basic ${Buffer.from(`integ@mapflow-bridge.invalid:${token}`).toString('base64')}`;

describe('simulator Lambda adapter', () => {
  it('answers /rest/user/status for the token of its secret', async () => {
    // Act
    const answer = await handler(event('/rest/user/status', basic(TOKEN)));

    // Assess
    expect(answer.statusCode).toBe(200);
    expect(answer.isBase64Encoded).toBe(false);
    expect(JSON.parse(answer.body)).toMatchObject({ email: 'integ@mapflow-bridge.invalid' });
    expect(answer.body).not.toContain('127.0.0.1');
  });

  it('refuses another token with 401', async () => {
    const answer = await handler(event('/rest/user/status', basic('not-the-token')));
    expect(answer.statusCode).toBe(401);
  });
});
