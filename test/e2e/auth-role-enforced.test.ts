/**
 * IAM enforced on what deploys: the cloud assembly the local bridge runs,
 * with one statement removed from a function's role in the template. Each
 * function signs with a key pair of its role (packages/local/src/bridge.ts credentialsFor)
 * and the endpoints judge every call against that role's policies, so the
 * job runs every step the roles allow and fails on the refused one, with
 * AWS's AccessDenied naming the action and the resource.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../packages/local/src/bridge.ts';
import { bridgeFunctionOf, editedAssembly, policyDocumentsOf, squareAoi, startTestBridge, tempFile, type Template } from './helpers.ts';

/** Removes every s3:PutObject statement from the policies of the role of the function `name`; returns the role's logical id. */
function withoutPutObject(template: Template, name: string): { roleLogicalId: string; removed: number } {
  const fn = bridgeFunctionOf(template, name)?.[1];
  const roleLogicalId = ((fn?.Properties?.Role as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'] ?? [])[0];
  if (!roleLogicalId) throw new Error(`no role for ${name}`);
  let removed = 0;
  for (const document of policyDocumentsOf(template, roleLogicalId)) {
    const kept = document.Statement.filter((statement) => ![statement.Action].flat().includes('s3:PutObject'));
    removed += document.Statement.length - kept.length;
    document.Statement = kept;
  }
  return { roleLogicalId, removed };
}

describe("a function's role without one statement, in the assembly the bridge runs", () => {
  let bridge: LocalBridge;
  let roleLogicalId = '';
  const lines: string[] = [];

  beforeAll(async () => {
    // Prepare: the assembly the test bridge would run, with Store Results' role unable to write results
    const dir = await editedAssembly('mfb-role-', (template) => {
      const edit = withoutPutObject(template, 'store-results');
      expect(edit.removed).toBeGreaterThan(0);
      roleLogicalId = edit.roleLogicalId;
    });
    bridge = await startTestBridge({ assembly: { dir }, routes: undefined, log: (line) => lines.push(line) });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('runs the allowed steps and fails the job on the refused call, with AWS AccessDenied', { timeout: 300_000 }, async () => {
    // Prepare
    const file = await tempFile('area.geojson', squareAoi({ sizeDeg: 0.01 }));
    // Act
    const { jobId } = await bridge.putInbox(file, 'area.geojson');
    const row = await bridge.waitForJob(jobId);
    // Assess: the processing ran (every other role allowed its calls), the results could not be written
    expect(bridge.simulator?.stats().processingsCreated).toBe(1);
    expect(row?.status).toBe('FAILED');
    expect(JSON.stringify(row)).toContain(
      `User: arn:aws:sts::000000000000:assumed-role/${roleLogicalId}/store-results is not authorized to perform: s3:PutObject on resource: \\"arn:aws:s3:::${bridge.bucket}/results/area.geojson/`,
    );
    // The bridge says what it refused, and nothing else was refused
    const refused = lines.filter((line) => line.startsWith('local bridge: refused'));
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((line) => line.includes(`assumed-role/${roleLogicalId}/store-results`) && line.includes('s3:PutObject'))).toBe(true);
  });
});
