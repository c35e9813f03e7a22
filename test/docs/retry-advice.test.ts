/**
 * B1 (messages): a finished job is its bucket, key and ETag and runs exactly
 * once, so dropping the same bytes again under the same key does nothing.
 * Every FAILED message must say how a retry really works, never "drop the file
 * again" alone.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { aggregate } from '../../functions/jobs/steps/finish-job.ts';
import { HOW_TO_RETRY, jobErrorFromMapflow, jobErrorFromTaskError } from '../../functions/jobs/outcome.ts';

const TRUE_RETRY = /use `mapflow-bridge jobs retry <jobId>` \(with --stack <name> on AWS\), drop it again under a new name, or change the file/;
/** Advice that, taken literally, re-drops the same bytes under the same key. */
const FALSE_RETRY = /drop (?:the file|it) again(?! under a new name)|(?:try|drop[^.;]*) again later/i;

const taskError = (type: string, message: string) => ({ Error: type, Cause: JSON.stringify({ errorType: type, errorMessage: message }) });

describe('retry advice in FAILED messages', () => {
  it.each(['MapflowUnavailable', 'MapflowRateLimited', 'MapflowOutcomeUnknown', 'MapflowAuthError', 'QueueTimeout', 'ConfigurationError', 'States.Timeout', 'Sandbox.Timedout'])(
    '%s says to drop it under a new name or change it',
    (type) => {
      // Act
      const { error, rejected } = jobErrorFromTaskError(taskError(type, 'something went wrong'));

      // Assess
      expect(rejected).toBe(false);
      expect(error.message).toMatch(TRUE_RETRY);
      expect(error.message).not.toMatch(FALSE_RETRY);
    },
  );

  it('MAPFLOW_AUTH_ERROR names both places the token lives', () => {
    // Act
    const { error } = jobErrorFromTaskError(taskError('MapflowAuthError', 'HTTP 401'));

    // Assess
    expect(error.code).toBe('MAPFLOW_AUTH_ERROR');
    expect(error.message).toMatch(/check the Mapflow token \(the secret on AWS; --token locally\)/);
  });

  it('PROCESSING_FAILED and PROCESSING_TIMEOUT say what to try and how to run it again', () => {
    // Act
    const failed = jobErrorFromMapflow('FAILED', [{ code: 'dataloader.TileNotReadable' }], 'FAILED');
    const timeout = jobErrorFromMapflow('IN_PROGRESS', [], 'TIMEOUT');

    // Assess
    expect(failed).toMatchObject({ code: 'PROCESSING_FAILED' });
    expect(failed.message).toMatch(/dataloader\.TileNotReadable.*another imagery source or zoom/);
    expect(failed.message).toMatch(TRUE_RETRY);
    expect(timeout).toMatchObject({ code: 'PROCESSING_TIMEOUT' });
    expect(timeout.message).toMatch(TRUE_RETRY);
  });

  it('a job whose parts did not all report says how to run it again', () => {
    // Act
    const { status, error } = aggregate([], 2);

    // Assess
    expect(status).toBe('FAILED');
    expect(error?.message).toMatch(TRUE_RETRY);
    expect(error?.message).not.toMatch(FALSE_RETRY);
  });

  it('no step, step helper, AOI or storage message gives the false advice', () => {
    // Prepare
    const dirs = ['functions/jobs', 'functions/jobs/steps', 'functions/aoi', 'functions/storage'];
    const offending: string[] = [];

    // Act
    for (const dir of dirs) {
      const url = new URL(`../../${dir}/`, import.meta.url);
      for (const file of readdirSync(fileURLToPath(url)).filter((f) => f.endsWith('.ts'))) {
        readFileSync(fileURLToPath(new URL(file, url)), 'utf8')
          .split('\n')
          .forEach((line, i) => {
            if (FALSE_RETRY.test(line)) offending.push(`${dir}/${file}:${i + 1}: ${line.trim()}`);
          });
      }
    }

    // Assess
    expect(offending).toEqual([]);
    expect(HOW_TO_RETRY).toMatch(TRUE_RETRY);
  });
});
