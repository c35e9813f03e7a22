/**
 * Issue 37 point 2, the bridge's half: a part whose own steps cannot record
 * its failure fails the Process Parts Map Run. Here Finish Part's role may not
 * touch DynamoDB (the assembly the bridge runs, one role edited), so the
 * part's last step fails with AccessDeniedException, which no Catch of the
 * part takes: its child execution fails, the Map state fails with
 * States.ExceedToleratedFailureThreshold (as on AWS, whatever the child's
 * error), and the Map's Catch runs Fail Job and Release Job Slots: the job
 * ends FAILED with its final ledger row, its final event, and no slot held.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import type { ExecutionRecord } from '../../packages/local/src/engine/engine.ts';
import { readEvents } from '../../packages/local/src/events/file.ts';
import { slotHolders } from '../../packages/bench/fault-suite.ts';
import { bridgeFunctionOf, editedAssembly, policyDocumentsOf, squareAoi, startTestBridge, tempFile, type Template } from './helpers.ts';

/** Removes every statement with a DynamoDB action from the role of the function `name`. */
function withoutDynamoDb(template: Template, name: string): number {
  const fn = bridgeFunctionOf(template, name)?.[1];
  const roleLogicalId = ((fn?.Properties?.Role as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'] ?? [])[0];
  if (!roleLogicalId) throw new Error(`no role for ${name}`);
  let removed = 0;
  for (const document of policyDocumentsOf(template, roleLogicalId)) {
    const kept = document.Statement.filter((statement) => ![statement.Action].flat().some((action) => action.startsWith('dynamodb:')));
    removed += document.Statement.length - kept.length;
    document.Statement = kept;
  }
  return removed;
}

describe('a part that cannot record its own failure fails the Map Run', () => {
  let bridge: LocalBridge;
  const executions: ExecutionRecord[] = [];

  beforeAll(async () => {
    // Prepare: the assembly the test bridge would run, with Finish Part's role unable to reach the ledger
    const dir = await editedAssembly('mfb-mapfail-', (template) => {
      expect(withoutDynamoDb(template, 'finish-part')).toBeGreaterThan(0);
    });
    bridge = await startTestBridge({ assembly: { dir }, routes: undefined, onExecutionStopped: (execution) => executions.push({ ...execution }) });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('ends the job FAILED through Fail Job and Release Job Slots, with its final row and event', { timeout: 300_000 }, async () => {
    // Prepare
    const file = await tempFile('area.geojson', squareAoi({ sizeDeg: 0.01 }));

    // Act
    const { jobId } = await bridge.putInbox(file, 'area.geojson');
    const row = await bridge.waitForJob(jobId);
    await bridge.engine.idle();

    // Assess: the Map's Catch saw the Map Run's error, not the part's
    expect(row?.status).toBe('FAILED');
    expect(row?.error?.code).toBe('STATES_EXCEED_TOLERATED_FAILURE_THRESHOLD');
    expect(row?.error?.message).toContain('AccessDeniedException');
    expect(row?.error?.message).toContain('jobs show <jobId>');
    // ... the execution ended in Job Failed (after Release Job Slots), not broken past the Catch
    expect(executions.map((e) => e.error?.Error)).toEqual(['JobFailed']);
    // ... the final event went out, and no slot is left held
    const events = (await readEvents(bridge.eventsFile)).filter((event) => event.detail.jobId === jobId);
    expect(events.map((event) => event.detailType)).toContain('Job Failed');
    expect(await slotHolders(bridge)).toEqual([]);
  });
});
