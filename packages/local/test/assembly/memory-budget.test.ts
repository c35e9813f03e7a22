/**
 * Issues 38 and 39: the local functions' environments count their
 * MemorySize (MiB) against one budget for the whole tree, and a share of it
 * is the light steps' alone, so two Store Results waiting on a slow result
 * download never hold what dispatch, polls and Finish Part need. Waiters are
 * served in the order they came within their share (a resumed job's step
 * keeps its place), and a light step that passes a waiting decoding one does
 * not starve it.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_ENVIRONMENT_BUDGET_CAP_MB, EnvironmentBudget, defaultEnvironmentBudgetMb } from '../../src/assembly/functions.ts';

const GiB = 1024 ** 3;

/** What was granted, in order, by name. */
function recorder() {
  const granted: string[] = [];
  const acquire = (budget: EnvironmentBudget, name: string, weight: number, heavy: boolean) =>
    budget.acquire(weight, heavy).then(() => {
      granted.push(name);
    });
  return { granted, acquire };
}

/** Lets the budget's grants (promise reactions) run. */
const settled = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the environments\' memory budget', () => {
  it('defaults to half the machine\'s memory, at most 4,096 MiB and at least 2,048 (what the template\'s functions need)', () => {
    // Act
    const laptops = [2, 4, 8, 16, 64].map((gib) => defaultEnvironmentBudgetMb(gib * GiB));

    // Assess
    expect(laptops).toEqual([2048, 2048, 4096, 4096, 4096]);
    expect(DEFAULT_ENVIRONMENT_BUDGET_CAP_MB).toBe(4096);
  });

  it('lets the light steps in at once while two decoding processes of 1,024 MiB hold the decoding share (two Store Results waiting on Mapflow)', async () => {
    // Prepare: the default budget of a laptop with 8 GB or more, two Store Results invoked
    const budget = new EnvironmentBudget(4096);
    const { granted, acquire } = recorder();
    await acquire(budget, 'store-results 1', 1024, true);
    await acquire(budget, 'store-results 2', 1024, true);

    // Act: a third decoding step, then dispatch, a poll and Finish Part (512 MiB each)
    void acquire(budget, 'upload-image', 1024, true);
    await Promise.all([acquire(budget, 'dispatch', 256, false), acquire(budget, 'poll-processing', 512, false), acquire(budget, 'finish-part', 512, false)]);

    // Assess: the light steps ran; the third decoding step waits for the share (2,048 MiB) to free up
    expect(granted).toEqual(['store-results 1', 'store-results 2', 'dispatch', 'poll-processing', 'finish-part']);
    expect(budget.usedByProcesses).toBe(2048);
    expect(budget.used).toBe(2048 + 1280);
  });

  it('serves the waiters of one share in the order they came, a light one passing a decoding one that waits for its share', async () => {
    // Prepare: 2,048 MiB, 1,024 of them the decoding share, all of it held
    const budget = new EnvironmentBudget(2048, 1024);
    const { granted, acquire } = recorder();
    await acquire(budget, 'held', 1024, true);

    // Act: a decoding step (a resumed job's), a second one (a new job's), then a light one; the first one's room comes back
    const waiting = [acquire(budget, 'resumed store-results', 1024, true), acquire(budget, 'new inspect-geotiff', 1024, true)];
    await acquire(budget, 'register-job', 512, false);
    budget.release(1024, true);
    await waiting[0];
    await settled();

    // Assess: the light one at once, then the decoding ones in their order (the second still waits)
    expect(granted).toEqual(['held', 'register-job', 'resumed store-results']);
    budget.release(1024, true);
    await waiting[1];
    expect(granted.at(-1)).toBe('new inspect-geotiff');
  });

  it('keeps light steps to their reserve while a decoding one waits, so a stream of light steps cannot starve it', async () => {
    // Prepare: 2,048 MiB, a reserve of 1,024 for the light steps; light steps hold all of it (the decoding share was free then)
    const budget = new EnvironmentBudget(2048, 1024);
    const { granted, acquire } = recorder();
    for (const name of ['a', 'b', 'c', 'd']) await acquire(budget, name, 512, false);

    // Act: a decoding step of 1,024 waits; another light step comes; one light step ends, then another
    const decoding = acquire(budget, 'decode', 1024, true);
    const late = acquire(budget, 'late light', 512, false);
    budget.release(512);
    await settled();
    const afterFirst = [...granted];
    budget.release(512);
    await decoding;
    await settled();

    // Assess: the late light step did not take the 512 MiB freed first (the decoding one waits for them); the decoding one ran, the late one still waits
    expect(afterFirst).toEqual(['a', 'b', 'c', 'd']);
    expect(granted.slice(4)).toEqual(['decode']);
    expect(budget.used).toBe(2048);
    budget.release(512);
    await late;
    expect(granted.slice(4)).toEqual(['decode', 'late light']);
  });

  it('lets idle decoding processes go, and only them, when the decoding share is short', async () => {
    // Prepare: two owners with idle environments, a decoding share of 1,024 held by one invoked (896) and one idle process (128)
    const budget = new EnvironmentBudget(4096, 3072);
    let threadsLetGo = 0;
    let processesLetGo = 0;
    budget.register({ heavy: false, idleWeight: 64, evictIdle: () => (threadsLetGo++ < 4 ? 64 : 0) });
    budget.register({
      heavy: true,
      idleWeight: 128,
      evictIdle: () => {
        if (processesLetGo > 0) return 0;
        processesLetGo++;
        // Its exit releases its units, as a LocalFunction's environment does.
        queueMicrotask(() => budget.release(128, true, true));
        return 128;
      },
    });
    await budget.acquire(896, true);
    await budget.acquire(128, true);
    expect(budget.usedByProcesses).toBe(1024);

    // Act: a decoding step of 128 MiB
    await budget.acquire(128, true);

    // Assess: the idle process went, no idle thread did
    expect(processesLetGo).toBe(1);
    expect(threadsLetGo).toBe(0);
    expect(budget.usedByProcesses).toBe(1024);
  });
});
