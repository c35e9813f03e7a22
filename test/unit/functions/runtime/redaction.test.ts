import { afterEach, describe, expect, it } from 'vitest';
import { REDACTED, createLogger, redactSecrets, registerSecret } from '../../../../functions/runtime/logger.ts';
import { captureLogs, type CapturedLogs } from '../../../support/logs.ts';

const TOKEN = 'mf-token-7c1e5f0b9a4d42b8';
const EMAIL = 'ops@example.com';

describe('redacting logger', () => {
  let logs: CapturedLogs | undefined;
  afterEach(() => logs?.restore());

  it('never prints a registered token, in any field, encoding or error', () => {
    // Prepare
    registerSecret(TOKEN, { email: EMAIL });
    const basic = Buffer.from(`${EMAIL}:${TOKEN}`).toString('base64');
    const logger = createLogger({ serviceName: 'test' });
    logs = captureLogs();
    // Act
    logger.info(`calling Mapflow with ${TOKEN}`);
    logger.warn('request', { headers: { Authorization: `Basic ${basic}` }, url: `https://x/?t=${TOKEN}` });
    logger.error('failed', { error: new Error(`401 for token ${TOKEN}`, { cause: new Error(`inner ${TOKEN}`) }) });
    logger.info('nested', { deep: { list: [{ note: `b64 ${Buffer.from(TOKEN).toString('base64')}` }] } });
    logs.restore();
    // Assess
    const text = logs.text();
    expect(logs.entries()).toHaveLength(4);
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(basic);
    expect(text).not.toContain(Buffer.from(TOKEN).toString('base64'));
    expect(text).toContain(REDACTED);
    expect(text).toContain('calling Mapflow with');
  });

  it('hides values under sensitive keys even when the secret was never registered', () => {
    // Prepare
    const logger = createLogger({ serviceName: 'test' });
    logs = captureLogs();
    // Act
    logger.info('config', { token: 'unregistered-secret-value', password: 'hunter2-long', apiKey: 'k-123456', bucket: 'drop' });
    logs.restore();
    // Assess
    const [entry] = logs.entries();
    expect(entry).toMatchObject({ token: REDACTED, password: REDACTED, apiKey: REDACTED, bucket: 'drop' });
    expect(logs.text()).not.toContain('unregistered-secret-value');
  });

  it('redacts the password inside a Basic token given as the token itself', () => {
    // Prepare
    const basicToken = Buffer.from('someone@example.com:p4ssw0rd-long').toString('base64');
    registerSecret(basicToken);
    // Act
    const text = redactSecrets(`token=${basicToken} password=p4ssw0rd-long`);
    // Assess
    expect(text).toBe(`token=${REDACTED} password=${REDACTED}`);
  });
});
