/**
 * Issue 37 point 1, locally: an item of a DISTRIBUTED Map runs as a child
 * execution, as on AWS. Its `$$.Execution.Id` is
 * `arn:aws:states:<region>:<account>:execution:<machine>/<map run label>:<id>`
 * (docs.aws.amazon.com/step-functions/latest/dg/iam-policies-eg-dist-map.html),
 * not the job's ARN, so a step that records it for the reconciler is caught
 * locally by the template's IAM; DescribeExecution answers for the child, and
 * stopping the job's execution aborts it.
 */
import { describe, expect, it } from 'vitest';
import { LocalEngine } from '../../src/engine/engine.ts';
import { asTaskResource } from '../../src/engine/lambda.ts';

const ARN = (fn: string) => `arn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-${fn}`;
const PARENT = 'arn:aws:states:us-east-1:000000000000:execution:mapflow-bridge:job-1';

function definition(mode: 'DISTRIBUTED' | 'INLINE', label?: string) {
  return {
    StartAt: 'Process Parts',
    States: {
      'Process Parts': {
        Type: 'Map',
        ItemsPath: '$.parts',
        ItemSelector: { 'part.$': '$$.Map.Item.Value', 'jobArn.$': '$$.Execution.Id' },
        ...(label ? { Label: label } : {}),
        ItemProcessor: {
          ProcessorConfig: { Mode: mode, ...(mode === 'DISTRIBUTED' ? { ExecutionType: 'STANDARD' } : {}) },
          StartAt: 'Wait For Slot',
          States: {
            'Wait For Slot': { Type: 'Task', Resource: ARN('wait-for-slot'), Parameters: { 'part.$': '$.part', 'jobArn.$': '$.jobArn', 'executionArn.$': '$$.Execution.Id' }, End: true },
          },
        },
        End: true,
      },
    },
  };
}

/** An engine whose one Task records what it got, and waits for `release` when told to. */
function engineFor(mode: 'DISTRIBUTED' | 'INLINE', options: { label?: string; hold?: Promise<void> } = {}) {
  const seen: { part: number; jobArn: string; executionArn: string }[] = [];
  let started!: () => void;
  const allStarted = new Promise<void>((resolve) => (started = resolve));
  const handler = async (event: unknown) => {
    seen.push(event as (typeof seen)[number]);
    if (seen.length === 2) started();
    await options.hold;
    return { ok: true };
  };
  const engine = new LocalEngine({
    definition: definition(mode, options.label),
    taskResources: { 'Wait For Slot': asTaskResource(handler, { functionName: 'wait-for-slot', stateName: 'Wait For Slot' }) },
  });
  return { engine, seen, allStarted };
}

describe('DISTRIBUTED Map items as child executions', () => {
  it("give each item a child execution ARN of AWS's shape, the ItemSelector still the job's", async () => {
    // Prepare
    const { engine, seen } = engineFor('DISTRIBUTED');

    // Act
    await engine.start('job-1', { parts: [0, 1] });
    const done = await engine.waitFor('job-1');

    // Assess
    expect(done?.status).toBe('SUCCEEDED');
    expect(seen.map((s) => s.jobArn)).toEqual([PARENT, PARENT]);
    for (const { executionArn } of seen) {
      expect(executionArn).toMatch(/^arn:aws:states:us-east-1:000000000000:execution:mapflow-bridge\/Process-Parts:[0-9a-f-]{36}$/);
      expect(engine.describe(executionArn)?.status).toBe('SUCCEEDED');
    }
    expect(new Set(seen.map((s) => s.executionArn)).size).toBe(2);
    // ListExecutions lists the job's execution only, as on AWS (children are listed by their Map Run).
    expect(engine.executions().map((e) => e.arn)).toEqual([PARENT]);
  });

  it("uses the Map's Label, and keeps INLINE items in the job's execution", async () => {
    // Prepare
    const labelled = engineFor('DISTRIBUTED', { label: 'parts' });
    const inline = engineFor('INLINE');

    // Act
    await labelled.engine.start('job-1', { parts: [0, 1] });
    await inline.engine.start('job-1', { parts: [0, 1] });
    await Promise.all([labelled.engine.waitFor('job-1'), inline.engine.waitFor('job-1')]);

    // Assess
    expect(labelled.seen[0]?.executionArn).toMatch(/:execution:mapflow-bridge\/parts:[0-9a-f-]{36}$/);
    expect(inline.seen.map((s) => s.executionArn)).toEqual([PARENT, PARENT]);
  });

  it('describes a child as RUNNING while it runs, and ABORTED once the job is stopped', async () => {
    // Prepare: items that wait until released
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const { engine, seen, allStarted } = engineFor('DISTRIBUTED', { hold });
    await engine.start('job-1', { parts: [0, 1] });
    await allStarted;
    const child = seen[0]!.executionArn;
    const whileRunning = await engine.isAlive(child);

    // Act
    await engine.stopExecution('job-1');
    release();

    // Assess
    expect(whileRunning).toBe(true);
    expect(engine.describe(child)?.status).toBe('ABORTED');
    expect(await engine.isAlive(child)).toBe(false);
    expect(engine.describe(child.replace(/:[0-9a-f-]{36}$/, ':00000000-0000-0000-0000-000000000000'))).toBeUndefined();
  });
});
