/**
 * Issue 38: `start` and `local run` take the functions' memory budget from
 * --memory-budget <MiB>, else from MAPFLOW_BRIDGE_MEMORY_BUDGET_MB, else the
 * default (half the machine's memory, at most 4,096 MiB: packages/local/src/assembly/functions.ts).
 */
import { describe, expect, it } from 'vitest';
import { bridgeChoice, memoryBudgetOption, MEMORY_BUDGET_ENV, MIN_MEMORY_BUDGET_MB } from '../src/args.ts';

describe('--memory-budget', () => {
  it('is taken from the option first, then from the environment, else left to the default', () => {
    // Act
    const fromOption = memoryBudgetOption('3072', { [MEMORY_BUDGET_ENV]: '8192' });
    const fromEnvironment = memoryBudgetOption(undefined, { [MEMORY_BUDGET_ENV]: '8192' });
    const neither = memoryBudgetOption(undefined, {});

    // Assess
    expect([fromOption, fromEnvironment, neither]).toEqual([3072, 8192, undefined]);
  });

  it('refuses a budget below two decoding functions of 1,024 MiB, or not a whole number, naming where it came from', () => {
    // Act
    const tooSmall = () => memoryBudgetOption('1024', {});
    const notWhole = () => memoryBudgetOption(undefined, { [MEMORY_BUDGET_ENV]: '2.5k' });

    // Assess
    expect(tooSmall).toThrow(`--memory-budget must be a whole number from ${MIN_MEMORY_BUDGET_MB} to 1048576, not '1024'`);
    expect(notWhole).toThrow(`${MEMORY_BUDGET_ENV} must be a whole number from ${MIN_MEMORY_BUDGET_MB} to 1048576, not '2.5k'`);
  });

  it('reaches the bridge choice of start and local run', async () => {
    // Act
    const choice = await bridgeChoice({ 'memory-budget': '6144' });

    // Assess
    expect(choice.memoryBudgetMb).toBe(6144);
  });
});
