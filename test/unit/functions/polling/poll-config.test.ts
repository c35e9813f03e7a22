/**
 * The estimator's optional waits (nearEndSeconds, maxEstimatedSeconds) in
 * the two places a poll policy is configured: the Lambdas' POLL_POLICY and
 * the construct's pollPolicy; and what the synthesized CDK settings hand the
 * Lambdas is what the Lambdas accept.
 */
import { App, Errors } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../../../functions/core/errors.ts';
import { estimatedWaits, type PollPolicy } from '../../../../functions/polling/poll-policy.ts';
import { loadConfig } from '../../../../functions/runtime/config.ts';
import { MapflowBridgeConfigError } from '../../../../lib/errors.ts';
import { resolveBridgeSettings } from '../../../../lib/private/validation.ts';

const env = (policy: unknown) => ({ LEDGER_TABLE: 'bridge-ledger', POLL_POLICY: JSON.stringify(policy) });

describe('nearEndSeconds and maxEstimatedSeconds', () => {
  it('are accepted by POLL_POLICY and reach the policy', () => {
    // Act
    const config = loadConfig(env({ nearEndSeconds: 8, maxEstimatedSeconds: 600 }));
    // Assess
    expect(config.pollPolicy).toMatchObject({ initialSeconds: 15, maxSeconds: 60, nearEndSeconds: 8, maxEstimatedSeconds: 600 });
    expect(estimatedWaits(config.pollPolicy)).toEqual({ near: 8, longest: 600 });
  });

  it('are refused by POLL_POLICY when not positive numbers', () => {
    // Act / Assess
    expect(() => loadConfig(env({ nearEndSeconds: 0 }))).toThrow(ConfigurationError);
    expect(() => loadConfig(env({ maxEstimatedSeconds: 'long' }))).toThrow(/POLL_POLICY\.maxEstimatedSeconds must be a positive number/);
  });

  it('are range-checked by the construct, and what it resolves the Lambdas accept', () => {
    // Act
    const app = new App();
    const settings = resolveBridgeSettings(app, { pollPolicy: { nearEndSeconds: 10 } });
    const lambdas = loadConfig(env(settings.pollPolicy));
    // Assess
    expect(settings.pollPolicy.nearEndSeconds).toBe(10);
    expect(lambdas.pollPolicy.nearEndSeconds).toBe(10);
    expect(() => resolveBridgeSettings(app, { pollPolicy: { nearEndSeconds: 0 } })).toThrow(MapflowBridgeConfigError);
    expect(() => resolveBridgeSettings(app, { pollPolicy: { maxEstimatedSeconds: 100_000 } })).toThrow(/pollPolicy.maxEstimatedSeconds must be a number from 1 to 86400/);
    expect(() => resolveBridgeSettings(app, { pollPolicy: { nearEndSeconds: 0 } })).toThrow(expect.objectContaining({ constructPath: '' }));
    expect(Errors.isValidationError((() => { try { resolveBridgeSettings(app, { pollPolicy: { nearEndSeconds: 0 } }); } catch (e) { return e; } })())).toBe(true);
  });

  it('default from maxSeconds when unset: 12 s near the end (maxSeconds if shorter), 30 x maxSeconds at most', () => {
    // Prepare
    const aws: PollPolicy = { initialSeconds: 15, maxSeconds: 60, factor: 1.5, maxJobSeconds: 86_400 };
    const local: PollPolicy = { initialSeconds: 1, maxSeconds: 3, factor: 1.5, maxJobSeconds: 3_600 };
    // Act / Assess
    expect(estimatedWaits(aws)).toEqual({ near: 12, longest: 1_800 });
    expect(estimatedWaits(local)).toEqual({ near: 3, longest: 90 });
    expect(estimatedWaits({ ...local, maxEstimatedSeconds: 1 })).toEqual({ near: 3, longest: 3 });
  });
});
