/**
 * Issue 24: kill -9 at any instant loses nothing and blocks nothing.
 * `mapflow-bridge start` is killed with its whole process group at instants a
 * seeded schedule picks from what the run observes (start-up, the lock file,
 * an upload before its dispatch, job events, a processing restart), and
 * started again on the same state folder, against a simulator with faults.
 * The seed and the schedule are printed: CHAOS_SEED=<n> runs the same again.
 */
import { describe, expect, it } from 'vitest';
import { runChaos } from '../../packages/bench/chaos.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';

const seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 1_000_000));

describe('chaos: kill -9 at any instant', () => {
  it(`every input ends as exactly one final job, no processing twice, results in S3 and in the output folder (seed ${seed})`, { timeout: 480_000 }, async () => {
    // Prepare
    const lines: string[] = [];
    const log = (line: string) => {
      lines.push(line);
      console.log(line); // the seed and the schedule, so a failure can be run again
    };

    // Act: 12 inputs in 3 batches, 6 kills, the fewest that hold every kind the schedule must hit (start-up,
    // between upload and dispatch, a restart, an end, the Ctrl-C shutdown, a start that resumes jobs; packages/bench/chaos.ts);
    // `npm run bench` runs 24 inputs and 7 kills.
    // The ledger in a table of its own in the run's DynamoDB Local (start --ledger-table), which outlives every kill.
    const figures = await runChaos({ jobs: 12, batches: 3, kills: 6, seed, log, timeoutMs: 450_000, ...(await sharedLedgerOptions('chaos')) });

    // Assess
    expect(lines[0]).toContain(`seed ${seed}, kill schedule: `);
    expect(figures.kills).toBe(6);
    // A kill during the Ctrl-C shutdown and one while the next start resumes the jobs it left (issue 39) landed where planned.
    expect(figures.killedAt).toEqual(expect.arrayContaining(['shutdown#1', 'resuming#1']));
    expect(figures.inputsWithoutExactlyOneJob).toEqual([]);
    expect(figures.unfinishedJobs).toEqual([]);
    expect(figures.finalStates).toEqual({ SUCCEEDED: 12 });
    expect(figures.duplicateProcessings).toBe(0);
    expect(figures.processings).toBe(12);
    // Every 4th input fails once and is restarted once, kills or not.
    expect(figures.restartedJobs).toBe(3);
    expect(figures.finalEventProblems).toEqual([]);
    expect(figures.missingInS3).toEqual([]);
    expect(figures.missingInOutputFolder).toEqual([]);
  });
});
