/**
 * The token and the Basic credential must never appear in an error, however
 * it is printed, nor in a log line, nor in the client's own printed form.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MapflowClient } from '../../../../functions/mapflow/index.ts';
import { BASE, BASIC_CREDENTIAL, EMAIL, ORIGIN, TOKEN, mockClientsClosedAfterEach, netError, rejectionOf, MINIMAL_CREATE } from './helpers.ts';

const SECRETS = [TOKEN, BASIC_CREDENTIAL, `${EMAIL}:${TOKEN}`];

/** Every way an error ends up as text: String, JSON, util.inspect (with causes), the stack. */
function renderings(value: unknown): string[] {
  const error = value as Error;
  return [
    String(error),
    JSON.stringify(error),
    inspect(error, { depth: 10, showHidden: true }),
    error.stack ?? '',
    String(error.message),
    inspect(error.cause, { depth: 10, showHidden: true }),
  ];
}

function expectNoSecret(texts: string[]) {
  for (const text of texts) for (const secret of SECRETS) expect(text).not.toContain(secret);
}

const mockClient = mockClientsClosedAfterEach();

describe('token redaction', () => {
  it('keeps the credential out of errors whose body echoes the Authorization header', async () => {
    // Prepare: a server (or proxy) that echoes the header back in its error.
    const setup = mockClient({ authScheme: 'basic', email: EMAIL, retry: { maxAttempts: 2, baseDelayMs: 1 } });
    const echo = (opts: { headers?: unknown }) => {
      const header = String((opts.headers as Record<string, string>).authorization);
      return { code: `BAD_${header}`, message: `rejected ${header} (${EMAIL}:${TOKEN})`, params: { header, token: TOKEN } };
    };
    setup.pool.intercept({ path: `${BASE}/projects`, method: 'POST' }).reply(400, echo);
    setup.pool.intercept({ path: `${BASE}/user/status`, method: 'GET' }).reply(500, echo).times(2);
    setup.pool
      .intercept({ path: `${BASE}/rasters/mosaic/m/image`, method: 'GET' })
      .reply(413, (opts) => ({ detail: { code: 'FileTooBig', parameters: { auth: String((opts.headers as Record<string, string>).authorization) } } }));
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'GET' }).reply(502, `proxy saw Authorization: Basic ${BASIC_CREDENTIAL}`).times(2);

    // Act
    const errors = [
      await rejectionOf(setup.client.createProject({ name: 'p' })),
      await rejectionOf(setup.client.getUserStatus()),
      await rejectionOf(setup.client.listMosaicImages('m')),
      await rejectionOf(setup.client.listProcessings()),
    ];

    // Assess
    expect(errors.map((e) => e.name)).toEqual(['MapflowRequestError', 'MapflowUnavailable', 'MapflowRequestError', 'MapflowUnavailable']);
    expect(errors[0]?.message).toContain('[REDACTED]'); // the echo reached the error, redacted
    for (const error of errors) expectNoSecret(renderings(error));
    // The retried 500 and 502 were logged as warnings; none of them carries the credential.
    expect(setup.warnings.length).toBeGreaterThan(0);
    expectNoSecret(setup.warnings.map((w) => JSON.stringify(w)));
  });

  it('keeps the credential out of errors whose network cause mentions it', async () => {
    // Prepare
    const setup = mockClient({ authScheme: 'bearer', retry: { maxAttempts: 1 } });
    const cause = netError('ECONNRESET', `reset while sending Bearer ${TOKEN}`);
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'POST' }).replyWithError(cause);

    // Act
    const error = await rejectionOf(setup.client.createProcessing(MINIMAL_CREATE));

    // Assess
    expect(error.name).toBe('MapflowOutcomeUnknown');
    expect(error.cause).toBeInstanceOf(Error);
    expect((error.cause as { code?: string }).code).toBe('ECONNRESET');
    expectNoSecret(renderings(error));
  });

  it('keeps the credential out of the printed client', () => {
    // Prepare
    const client = new MapflowClient({ baseUrl: `${ORIGIN}${BASE}`, token: TOKEN, email: EMAIL });

    // Act
    const texts = [String(client), JSON.stringify(client), inspect(client, { depth: 10, showHidden: true }), `${client}`];

    // Assess
    expectNoSecret(texts);
  });

  it('keeps the pre-encoded token and its decoded secret out of errors', async () => {
    // Prepare
    const setup = mockClient({ token: BASIC_CREDENTIAL, authScheme: 'auto' });
    setup.pool.intercept({ path: `${BASE}/processings/v2`, method: 'GET' }).reply(401, { code: 'UNAUTHORIZED', message: `bad token ${BASIC_CREDENTIAL} for ${TOKEN}` });

    // Act
    const error = await rejectionOf(setup.client.listProcessings());

    // Assess
    expect(error.name).toBe('MapflowAuthError');
    expectNoSecret(renderings(error));
  });
});
