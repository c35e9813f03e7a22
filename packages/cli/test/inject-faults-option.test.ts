/**
 * Issue 37 (6, 10): `start` and `local run` inject faults with --inject-faults,
 * else MAPFLOW_BRIDGE_INJECT_FAULTS, else none; an unknown fault or a rate
 * outside 0..1 is a usage error naming where it came from.
 */
import { describe, expect, it } from 'vitest';
import { bridgeChoice, BRIDGE_OPTIONS, injectFaultsOption, INJECT_FAULTS_ENV, UsageError } from '../src/args.ts';

describe('--inject-faults', () => {
  it('is taken from the option first, then from the environment, else none', () => {
    // Act
    const fromOption = injectFaultsOption('gsi-lag=0.3,seed=5', { [INJECT_FAULTS_ENV]: 'dynamodb-conflict=1,seed=6' });
    const fromEnvironment = injectFaultsOption(undefined, { [INJECT_FAULTS_ENV]: 'dynamodb-conflict=1,seed=6' });
    const neither = injectFaultsOption(undefined, {});
    // Assess
    expect(fromOption).toEqual({ dynamodbConflict: 0, gsiLag: 0.3, duplicateDelivery: 0, lambdaThrottle: 0, gsiLagMs: 500, seed: 5 });
    expect(fromEnvironment).toEqual({ dynamodbConflict: 1, gsiLag: 0, duplicateDelivery: 0, lambdaThrottle: 0, gsiLagMs: 500, seed: 6 });
    expect(neither).toBeUndefined();
  });

  it('refuses an unknown fault or a bad rate as a usage error, naming where it came from', () => {
    // Act
    const unknown = () => injectFaultsOption('throttle=0.1', {});
    const badRate = () => injectFaultsOption(undefined, { [INJECT_FAULTS_ENV]: 'gsi-lag=2' });
    // Assess
    expect(unknown).toThrow(UsageError);
    expect(unknown).toThrow("--inject-faults: unknown fault 'throttle'");
    expect(badRate).toThrow(`${INJECT_FAULTS_ENV}: gsi-lag is a rate from 0 to 1, not '2'.`);
  });

  it('is an option of start and local run, and reaches their bridge choice', async () => {
    // Act
    const choice = await bridgeChoice({ 'inject-faults': 'duplicate-delivery=0.5,seed=1' });
    // Assess
    expect(Object.keys(BRIDGE_OPTIONS)).toContain('inject-faults');
    expect(choice.injectFaults).toEqual({ dynamodbConflict: 0, gsiLag: 0, duplicateDelivery: 0.5, lambdaThrottle: 0, gsiLagMs: 500, seed: 1 });
  });
});
