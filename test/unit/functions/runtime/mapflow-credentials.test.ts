import { beforeEach, describe, expect, it } from 'vitest';
import { mockClient } from 'aws-sdk-client-mock';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { loadConfig } from '../../../../functions/runtime/config.ts';
import { REDACTED, redactSecrets } from '../../../../functions/runtime/logger.ts';
import { mapflowClient, mapflowCredentials, parseSecret } from '../../../../functions/runtime/mapflow.ts';
import { MapflowClient } from '../../../../functions/mapflow/index.ts';

const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:mapflow-AbCdEf';
const secrets = mockClient(SecretsManagerClient);

function awsConfig() {
  return loadConfig({ LEDGER_TABLE: 'ledger', MAPFLOW_SECRET_ARN: SECRET_ARN, AWS_REGION: 'eu-west-1' });
}

describe('Mapflow credentials', () => {
  beforeEach(() => secrets.reset());

  it('reads {token, email} from the secret once and caches it', async () => {
    // Prepare
    secrets.on(GetSecretValueCommand, { SecretId: SECRET_ARN }).resolves({ SecretString: '{"token": "tok-from-secret-1", "email": "a@b.c"}' });
    const config = awsConfig();
    // Act
    const first = await mapflowCredentials(config);
    const second = await mapflowCredentials(config);
    // Assess
    expect(first).toEqual({ token: 'tok-from-secret-1', email: 'a@b.c' });
    expect(second).toEqual(first);
    expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    expect(redactSecrets('x tok-from-secret-1 y')).toBe(`x ${REDACTED} y`);
  });

  it('re-reads the secret on refresh and builds a new client only when the token changed', async () => {
    // Prepare
    secrets.on(GetSecretValueCommand).resolvesOnce({ SecretString: '{"token": "tok-before-rotation"}' }).resolves({ SecretString: '{"token": "tok-after-rotation"}' });
    const config = awsConfig();
    // Act
    const a = await mapflowClient(config);
    const b = await mapflowClient(config);
    const c = await mapflowClient(config, { refresh: true });
    // Assess
    expect(a).toBeInstanceOf(MapflowClient);
    expect(b).toBe(a);
    expect(c).not.toBe(a);
    expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(2);
  });

  it('uses MAPFLOW_TOKEN / MAPFLOW_EMAIL when no secret is configured (local mode)', async () => {
    // Prepare
    const config = loadConfig({ LEDGER_TABLE: 'ledger' });
    // Act
    const credentials = await mapflowCredentials(config, { env: { MAPFLOW_TOKEN: ' local-token-1 ', MAPFLOW_EMAIL: 'me@x.y' } });
    // Assess
    expect(credentials).toEqual({ token: 'local-token-1', email: 'me@x.y' });
    expect(secrets.commandCalls(GetSecretValueCommand)).toHaveLength(0);
  });

  it('explains missing credentials', async () => {
    // Prepare
    const config = loadConfig({ LEDGER_TABLE: 'ledger' });
    // Act
    const attempt = mapflowCredentials(config, { env: {} });
    // Assess
    await expect(attempt).rejects.toThrow(/set MAPFLOW_SECRET_ARN .* or MAPFLOW_TOKEN/);
  });

  it('explains an unreadable secret without quoting it', async () => {
    // Prepare
    secrets.on(GetSecretValueCommand).rejects(Object.assign(new Error('denied'), { name: 'AccessDeniedException' }));
    // Act
    const attempt = mapflowCredentials(awsConfig());
    // Assess
    await expect(attempt).rejects.toMatchObject({ name: 'ConfigurationError', message: expect.stringMatching(/AccessDeniedException.*GetSecretValue/) });
  });

  it('validates the secret shape and never echoes its content', () => {
    // Prepare
    const cases = ['plain-secret-token-xyz', '{"tok": "plain-secret-token-xyz"}', '["plain-secret-token-xyz"]', '{"token": "t0k3n-long", "email": 5}'];
    // Act
    const messages = cases.map((raw) => {
      try {
        parseSecret(raw, SECRET_ARN);
        return 'accepted';
      } catch (error) {
        return (error as Error).message;
      }
    });
    // Assess
    expect(messages[0]).toMatch(/is not JSON/);
    expect(messages[1]).toMatch(/has no "token" string/);
    expect(messages[2]).toMatch(/has no "token" string/);
    expect(messages[3]).toMatch(/"email" that is not a string/);
    for (const message of messages) {
      expect(message).not.toContain('plain-secret-token-xyz');
      expect(message).not.toContain('t0k3n-long');
    }
  });
});
