/**
 * How often a local bridge polls: quickly against its embedded simulator,
 * at the production pace against a Mapflow given by URL (the live API must
 * not be asked every second), and as `--poll-policy` says when it is given.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLL_POLICY } from '../../../functions/polling/poll-policy.ts';
import { pollPolicyOption, UsageError } from '../../cli/src/args.ts';
import { runLocalCommand } from '../../cli/src/run.ts';
import { runStartCommand } from '../../cli/src/start.ts';
import { LOCAL_POLL_POLICY, localPollPolicy } from '../src/poll-policy.ts';

const LIVE = { url: 'https://api.mapflow.ai/rest', token: 't' };

describe('localPollPolicy', () => {
  it('polls the embedded simulator quickly and a Mapflow given by URL at the production pace', () => {
    // Act / Assess
    expect(localPollPolicy({})).toEqual(LOCAL_POLL_POLICY);
    expect(localPollPolicy({ mapflow: LIVE })).toEqual(DEFAULT_POLL_POLICY);
    expect(DEFAULT_POLL_POLICY.initialSeconds).toBeGreaterThanOrEqual(15);
  });

  it('lays the overrides over either, key by key', () => {
    // Act
    const live = localPollPolicy({ mapflow: LIVE, pollPolicy: { maxSeconds: 120 } });
    const simulated = localPollPolicy({ pollPolicy: { nearEndSeconds: 2 } });
    // Assess
    expect(live).toEqual({ ...DEFAULT_POLL_POLICY, maxSeconds: 120 });
    expect(simulated).toEqual({ ...LOCAL_POLL_POLICY, nearEndSeconds: 2 });
  });
});

describe('--poll-policy', () => {
  it('takes a JSON object of POLL_POLICY keys', () => {
    // Act / Assess
    expect(pollPolicyOption(undefined, undefined)).toBeUndefined();
    expect(pollPolicyOption('{"initialSeconds":1,"maxSeconds":3,"nearEndSeconds":1}', LIVE)).toEqual({ initialSeconds: 1, maxSeconds: 3, nearEndSeconds: 1 });
  });

  it('refuses what the handlers would refuse, judged on the policy it would make', () => {
    // Act / Assess: not JSON, not an object, an unknown key, a bad value
    expect(() => pollPolicyOption('fast', undefined)).toThrow(/--poll-policy must be a JSON object/);
    expect(() => pollPolicyOption('[1]', undefined)).toThrow(/--poll-policy must be a JSON object/);
    expect(() => pollPolicyOption('{"every":5}', undefined)).toThrow(/--poll-policy: the policy has an unknown key "every"/);
    expect(() => pollPolicyOption('{"maxSeconds":-1}', undefined)).toThrow(/maxSeconds must be a positive number/);
    // 30 s is fine over the production policy (maxSeconds 60), not over the simulator's (maxSeconds 3).
    expect(pollPolicyOption('{"initialSeconds":30}', LIVE)).toEqual({ initialSeconds: 30 });
    expect(() => pollPolicyOption('{"initialSeconds":30}', undefined)).toThrow(/initialSeconds 30 is above maxSeconds 3/);
    expect(() => pollPolicyOption('fast', undefined)).toThrow(UsageError);
  });

  it('is a usage error (exit 2) in local run and start, before anything starts', async () => {
    // Prepare
    const errors: string[] = [];
    const original = console.error;
    console.error = (message: string) => errors.push(message);
    try {
      // Act / Assess
      expect(await runLocalCommand(['run', '--poll-policy', '{"factor":0.5}', 'samples/aoi/bern-quarters.geojson'])).toBe(2);
      expect(await runStartCommand(['--poll-policy', 'often'])).toBe(2);
    } finally {
      console.error = original;
    }
    expect(errors.join('\n')).toMatch(/factor/);
    expect(errors.join('\n')).toMatch(/--poll-policy must be a JSON object/);
  });
});
