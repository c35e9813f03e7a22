import { describe, expect, it } from 'vitest';
import { decodeBasicCredential, resolveAuth } from '../../../../functions/mapflow/index.ts';
import { BASE, BASIC_CREDENTIAL, EMAIL, JSON_HEADERS, POLYGON, TOKEN, mockClientsClosedAfterEach } from './helpers.ts';

const mockClient = mockClientsClosedAfterEach();

/** Captures the headers of one GET /user/status. */
async function headersSent(options: Parameters<typeof mockClient>[0]): Promise<Record<string, string>> {
  const setup = mockClient(options);
  let seen: Record<string, string> = {};
  setup.pool.intercept({ path: `${BASE}/user/status`, method: 'GET' }).reply(200, (opts) => {
    seen = opts.headers as Record<string, string>;
    return { models: [] };
  }, JSON_HEADERS);
  await setup.client.getUserStatus();
  return seen;
}

describe('authorization header', () => {
  it('sends Bearer <token> with the bearer scheme', async () => {
    // Act
    const headers = await headersSent({ authScheme: 'bearer' });

    // Assess
    expect(headers.authorization).toBe(`Bearer ${TOKEN}`);
  });

  it('sends Basic base64(email:token) with the basic scheme and an email', async () => {
    // Act
    const headers = await headersSent({ authScheme: 'basic', email: EMAIL });

    // Assess
    expect(headers.authorization).toBe(`Basic ${BASIC_CREDENTIAL}`);
    expect(Buffer.from(headers.authorization!.slice(6), 'base64').toString()).toBe(`${EMAIL}:${TOKEN}`);
  });

  it('sends a token that already is base64 of email:token as is with Basic', async () => {
    // Act
    const headers = await headersSent({ authScheme: 'basic', token: BASIC_CREDENTIAL, email: EMAIL });

    // Assess
    expect(headers.authorization).toBe(`Basic ${BASIC_CREDENTIAL}`);
  });

  it('auto: Basic for a pre-encoded token, Basic when an email is given, else Bearer', () => {
    // Act
    const preEncoded = resolveAuth({ token: BASIC_CREDENTIAL });
    const withEmail = resolveAuth({ token: TOKEN, email: EMAIL });
    const plain = resolveAuth({ token: TOKEN });

    // Assess
    expect(preEncoded).toMatchObject({ scheme: 'basic', header: `Basic ${BASIC_CREDENTIAL}` });
    expect(withEmail).toMatchObject({ scheme: 'basic', header: `Basic ${BASIC_CREDENTIAL}` });
    expect(plain).toMatchObject({ scheme: 'bearer', header: `Bearer ${TOKEN}` });
  });

  it('refuses Basic without an email for a plain token, without naming the token', () => {
    // Act
    let error: Error | undefined;
    try {
      resolveAuth({ token: TOKEN, authScheme: 'basic' });
    } catch (e) {
      error = e as Error;
    }

    // Assess
    expect(error?.name).toBe('ConfigurationError');
    expect(error?.message).toMatch(/email/);
    expect(String(error)).not.toContain(TOKEN);
  });

  it('decodes only canonical base64 of printable user:secret', () => {
    // Assess
    expect(decodeBasicCredential(BASIC_CREDENTIAL)).toEqual({ user: EMAIL, secret: TOKEN });
    expect(decodeBasicCredential(TOKEN)).toBeUndefined();
    expect(decodeBasicCredential(Buffer.from('no-colon-here').toString('base64'))).toBeUndefined();
    expect(decodeBasicCredential(Buffer.from(':empty-user').toString('base64'))).toBeUndefined();
    expect(decodeBasicCredential(Buffer.from([0xff, 0x3a, 0x01, 0x02]).toString('base64'))).toBeUndefined();
    // A hex API token is valid base64 text but decodes to bytes, not user:secret.
    expect(decodeBasicCredential('0123456789abcdef0123456789abcdef')).toBeUndefined();
  });
});

describe('client identity', () => {
  it('sends x-client-name and x-client-version on every request', async () => {
    // Act
    const headers = await headersSent({ clientName: 'bridge-test', clientVersion: '9.9.9' });

    // Assess
    expect(headers['x-client-name']).toBe('bridge-test');
    expect(headers['x-client-version']).toBe('9.9.9');
    expect(headers['user-agent']).toBe('bridge-test/9.9.9');
  });

  it('puts source-app and version into processing meta without overwriting the caller keys', async () => {
    // Prepare
    const setup = mockClient({ clientName: 'bridge-test', clientVersion: '9.9.9' });
    const bodies: Record<string, unknown>[] = [];
    const capture = (opts: { body?: unknown }) => {
      bodies.push(JSON.parse(String(opts.body)) as Record<string, unknown>);
      return { id: 'p', status: 'IN_PROGRESS' };
    };
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'POST' }).reply(200, capture, JSON_HEADERS);
    setup.pool.intercept({ path: `${BASE}/processings`, method: 'POST' }).reply(200, capture, JSON_HEADERS);

    // Act
    await setup.client.createProcessing({
      name: 'n',
      wdId: 'wd',
      geometry: POLYGON,
      params: { sourceParams: { myImagery: { imageIds: ['i'] } } },
      meta: { jobId: 'job-1', version: 'caller-version' },
    });
    await setup.client.createProcessingV1({ wdId: 'wd', geometry: POLYGON });

    // Assess
    expect(bodies[0]?.meta).toEqual({ 'source-app': 'bridge-test', version: 'caller-version', jobId: 'job-1' });
    expect(bodies[1]?.meta).toEqual({ 'source-app': 'bridge-test', version: '9.9.9' });
  });
});
