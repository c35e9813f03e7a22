/**
 * IAM enforced on the state machine's own role, in the cloud assembly the
 * local bridge runs: with the statement that lets the state machine invoke
 * Store Results taken out of its role, the job runs every step up to Store
 * Results, whose invoke Step Functions refuses (Lambda.AWSLambdaException,
 * retried as the definition says, then caught: the part fails, Finish Job
 * records it): the job ends FAILED, with its Job Failed event, and AWS's
 * AccessDenied naming lambda:InvokeFunction and the function's ARN; Store
 * Results never ran.
 *
 * And the Distributed Map's own call: with the DistributedMapPolicy's
 * StartExecution statement taken out of the role, a job runs up to Process
 * Parts, whose child executions Step Functions may not start: the Map state
 * fails with States.Runtime and AWS's AccessDenied naming
 * states:StartExecution and the state machine's ARN, which no Retry or Catch
 * matches (Fail Job does not run), so the execution fails; no step of a part
 * ran, and the reconciler then finishes the job as FAILED (EXECUTION_LOST).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import type { LocalEvent } from '../../packages/local/src/events/file.ts';
import { bridgeFunctionOf, editedAssembly, policyDocumentsOf, squareAoi, startTestBridge, tempFile, type Template } from './helpers.ts';

/**
 * Takes the function `name` out of every lambda:InvokeFunction statement of
 * the state machine's role (its ARN and `${arn}:*`, as CDK grants them).
 * Returns the role's logical id and how many resources were removed.
 */
function withoutInvokeOf(template: Template, name: string): { roleLogicalId: string; removed: number } {
  const fnId = bridgeFunctionOf(template, name)?.[0];
  const machine = Object.values(template.Resources).find((resource) => resource.Type === 'AWS::StepFunctions::StateMachine');
  const roleLogicalId = ((machine?.Properties?.RoleArn as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'] ?? [])[0];
  if (!fnId || !roleLogicalId) throw new Error(`no function ${name} or no state machine role`);
  let removed = 0;
  for (const document of policyDocumentsOf(template, roleLogicalId)) {
    for (const statement of document.Statement) {
      if (![statement.Action].flat().includes('lambda:InvokeFunction')) continue;
      const resources = [statement.Resource].flat();
      const kept = resources.filter((entry) => !JSON.stringify(entry).includes(`"${fnId}"`));
      removed += resources.length - kept.length;
      statement.Resource = kept;
    }
    // A statement left with no resource goes (IAM refuses an empty Resource, and the local evaluator refuses it loudly).
    document.Statement = document.Statement.filter((statement) => [statement.Resource].flat().length > 0);
  }
  return { roleLogicalId, removed };
}

/**
 * Takes the states:StartExecution statements out of the state machine role's
 * policies (CDK's DistributedMapPolicy grants it on the state machine itself).
 * Returns the role's logical id and how many statements were removed.
 */
function withoutMapRunStart(template: Template): { roleLogicalId: string; removed: number } {
  const machine = Object.values(template.Resources).find((resource) => resource.Type === 'AWS::StepFunctions::StateMachine');
  const roleLogicalId = ((machine?.Properties?.RoleArn as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'] ?? [])[0];
  if (!roleLogicalId) throw new Error('no state machine role');
  let removed = 0;
  for (const document of policyDocumentsOf(template, roleLogicalId)) {
    const kept = document.Statement.filter((statement) => ![statement.Action].flat().includes('states:StartExecution'));
    removed += document.Statement.length - kept.length;
    document.Statement = kept;
  }
  return { roleLogicalId, removed };
}

describe("the state machine's role without the grant to invoke Store Results, in the assembly the bridge runs", () => {
  let bridge: LocalBridge;
  let roleLogicalId = '';
  const lines: string[] = [];
  let jobFailed!: (event: LocalEvent) => void;
  const failedEvent = new Promise<LocalEvent>((resolve) => (jobFailed = resolve));

  beforeAll(async () => {
    // Prepare: the assembly the test bridge would run, with the state machine unable to invoke Store Results
    const dir = await editedAssembly('mfb-sm-role-', (template) => {
      const edit = withoutInvokeOf(template, 'store-results');
      expect(edit.removed).toBe(2);
      roleLogicalId = edit.roleLogicalId;
    });
    bridge = await startTestBridge({
      assembly: { dir },
      routes: undefined,
      log: (line) => lines.push(line),
      onEvent: (event) => {
        if (event.detailType === 'Job Failed') jobFailed(event);
      },
    });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('runs the steps before it and fails the job on the refused invoke, with AWS AccessDenied', { timeout: 300_000 }, async () => {
    // Prepare
    const file = await tempFile('area.geojson', squareAoi({ sizeDeg: 0.01 }));
    // Act
    const { jobId } = await bridge.putInbox(file, 'area.geojson');
    const row = await bridge.waitForJob(jobId);
    // Assess: the processing ran (the role invoked every step before), Store Results was never invoked
    expect(row?.status).toBe('FAILED');
    expect(bridge.simulator?.stats().processingsCreated).toBe(1);
    expect(bridge.engine.taskInvocations.get('Store Results')).toBeUndefined();
    expect(bridge.engine.taskInvocations.get('Finish Job')).toBe(1);
    // Its Job Failed event (awaited once the ledger says FAILED: a job that succeeded has none)
    const event = await failedEvent;
    expect(event.detail.jobId).toBe(jobId);
    const denied = new RegExp(
      `User: arn:aws:sts::000000000000:assumed-role/${roleLogicalId}/[A-Za-z]{32} is not authorized to perform: lambda:InvokeFunction ` +
        'on resource: arn:aws:lambda:us-east-1:000000000000:function:mapflow-bridge-store-results because no identity-based policy allows the lambda:InvokeFunction action ' +
        '\\(Service: Lambda, Status Code: 403, Request ID: [0-9a-f-]{36}\\)',
    );
    // The ledger keeps Step Functions' error (Lambda.AWSLambdaException) as its code, and the cause
    expect(row?.error).toEqual({ code: 'LAMBDA_AWSLAMBDA_EXCEPTION', message: expect.stringMatching(denied) });
    expect(JSON.stringify(event.detail)).toMatch(denied);
    // The bridge says what it refused (each attempt the definition's Retry makes), and nothing else was refused
    const refused = lines.filter((line) => line.startsWith('local bridge: refused'));
    expect(refused.length).toBeGreaterThan(1);
    expect(refused.every((line) => line.startsWith("local bridge: refused Task 'Store Results': Lambda.AWSLambdaException: "))).toBe(true);
  });
});

describe("the state machine's role without the Distributed Map's StartExecution, in the assembly the bridge runs", () => {
  let bridge: LocalBridge;
  let roleLogicalId = '';
  const lines: string[] = [];

  beforeAll(async () => {
    // Prepare: the assembly the test bridge would run, with the state machine unable to start Process Parts' child executions
    const dir = await editedAssembly('mfb-sm-maprun-', (template) => {
      const edit = withoutMapRunStart(template);
      expect(edit.removed).toBe(1);
      roleLogicalId = edit.roleLogicalId;
    });
    bridge = await startTestBridge({ assembly: { dir }, routes: undefined, log: (line) => lines.push(line) });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('fails the execution at Process Parts with AWS AccessDenied on states:StartExecution, before any part runs', { timeout: 300_000 }, async () => {
    // Prepare
    const file = await tempFile('area.geojson', squareAoi({ sizeDeg: 0.01 }));
    // Act
    const { jobId } = await bridge.putInbox(file, 'area.geojson');
    const row = await bridge.waitForJob(jobId);
    // Assess: the execution failed at the Map state, with States.Runtime (which the Map's Catch does not match)
    const execution = bridge.engine.describe(jobId);
    expect(execution?.status).toBe('FAILED');
    const denied = new RegExp(
      `^User: arn:aws:sts::000000000000:assumed-role/${roleLogicalId}/[A-Za-z]{32} is not authorized to perform: states:StartExecution ` +
        `on resource: ${bridge.engine.stateMachineArn} because no identity-based policy allows the states:StartExecution action$`,
    );
    expect(execution?.error).toEqual({ Error: 'States.Runtime', Cause: expect.stringMatching(denied) });
    // Every step up to the Map ran, none after it: no part's function, no Fail Job, no Processing created
    expect([...bridge.engine.taskInvocations.keys()].sort()).toEqual(['Admit Job', 'Plan Processing', 'Register Job']);
    expect(bridge.simulator?.stats().processingsCreated).toBe(0);
    // The bridge says what it refused, and nothing else was refused
    const refused = lines.filter((line) => line.startsWith('local bridge: refused'));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((line) => line.startsWith("local bridge: refused Map Run of 'Process Parts': States.Runtime: User: "))).toBe(true);
    // Nothing in the execution recorded an outcome: the reconciler finishes the job as FAILED
    expect(row?.status).not.toBe('FAILED');
    await bridge.reconcileNow();
    const final = await bridge.ledger.get(jobId);
    expect(final?.status).toBe('FAILED');
    expect(final?.error?.code).toBe('EXECUTION_LOST');
  });
});
