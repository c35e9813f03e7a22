import { describe, expect, it } from 'vitest';
import { backoffDelayMs, classifyNetworkError, parseRetryAfter, resolveRetry } from '../../../../functions/mapflow/http/retry.ts';
import { netError } from './helpers.ts';

describe('retry policy helpers', () => {
  it('reads Retry-After as seconds, fractional seconds or an HTTP date', () => {
    // Prepare
    const now = Date.parse('2024-05-01T12:00:00Z');

    // Assess
    expect(parseRetryAfter('5', now)).toBe(5_000);
    expect(parseRetryAfter('0.25', now)).toBe(250);
    expect(parseRetryAfter('Wed, 01 May 2024 12:00:07 GMT', now)).toBe(7_000);
    expect(parseRetryAfter('Wed, 01 May 2024 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(['2', '9'], now)).toBe(2_000);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('draws full-jitter delays under a capped exponential ceiling', () => {
    // Prepare
    const policy = resolveRetry({ baseDelayMs: 100, maxDelayMs: 700 });

    // Assess
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, policy, () => 0.999999))).toEqual([99, 199, 399, 699, 699]);
    expect(backoffDelayMs(3, policy, () => 0)).toBe(0);
  });

  it('tells requests that never left from those that may have reached the server', () => {
    // Assess
    expect(classifyNetworkError(netError('ECONNREFUSED'))).toEqual({ failure: 'not-sent', transient: true });
    expect(classifyNetworkError(Object.assign(new Error('connect'), { code: 'UND_ERR_CONNECT_TIMEOUT' }))).toEqual({ failure: 'not-sent', transient: true });
    expect(classifyNetworkError(new Error('wrapped', { cause: netError('ENOTFOUND') })).failure).toBe('not-sent');
    expect(classifyNetworkError(new AggregateError([netError('ECONNREFUSED'), netError('ECONNREFUSED')])).failure).toBe('not-sent');
    expect(classifyNetworkError(netError('ECONNRESET'))).toEqual({ failure: 'maybe-sent', transient: true });
    expect(classifyNetworkError(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' })).failure).toBe('maybe-sent');
    expect(classifyNetworkError(netError('ERR_TLS_CERT_ALTNAME_INVALID'))).toEqual({ failure: 'not-sent', transient: false });
    expect(classifyNetworkError(new Error('no code'))).toEqual({ failure: 'maybe-sent', transient: true });
  });

  it('fills defaults and clamps nonsense', () => {
    // Assess
    expect(resolveRetry(undefined)).toEqual({ maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 10_000, maxRetryAfterMs: 30_000 });
    expect(resolveRetry({ maxAttempts: 0, baseDelayMs: undefined }).maxAttempts).toBe(1);
  });
});
