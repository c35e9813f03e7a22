/**
 * IAM enforced on what deploys: the cloud assembly the local bridge runs,
 * with one statement removed from a function's role in the template. Each
 * function signs with a key pair of its role (local/bridge.ts credentialsFor)
 * and the endpoints judge every call against that role's policies, so the
 * job runs every step the roles allow and fails on the refused one, with
 * AWS's AccessDenied naming the action and the resource.
 */
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../local/bridge.ts';
import { localAssemblySettings } from '../../local/bridge.ts';
import { loadLocalAssembly } from '../../local/assembly/cache.ts';
import { startTestBridge } from './helpers.ts';
import { testTmp } from '../support/temp.ts';

const GEOJSON = JSON.stringify({
  type: 'FeatureCollection',
  features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]] } }],
});

interface Resource {
  Type: string;
  Properties?: Record<string, unknown>;
}

/** Removes every s3:PutObject statement from the policies of the role of the function `name`; returns the role's logical id. */
function withoutPutObject(template: { Resources: Record<string, Resource> }, name: string): { roleLogicalId: string; removed: number } {
  const fn = Object.values(template.Resources).find(
    (resource) => resource.Type === 'AWS::Lambda::Function' && (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.BRIDGE_FUNCTION === name,
  );
  const roleLogicalId = ((fn?.Properties?.Role as { 'Fn::GetAtt'?: [string, string] } | undefined)?.['Fn::GetAtt'] ?? [])[0];
  if (!roleLogicalId) throw new Error(`no role for ${name}`);
  let removed = 0;
  for (const resource of Object.values(template.Resources)) {
    if (resource.Type !== 'AWS::IAM::Policy') continue;
    const roles = (resource.Properties?.Roles as { Ref?: string }[] | undefined) ?? [];
    if (!roles.some((role) => role.Ref === roleLogicalId)) continue;
    const document = resource.Properties?.PolicyDocument as { Statement: { Action: string | string[] }[] };
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
    const source = await loadLocalAssembly(localAssemblySettings({}));
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-role-'));
    await cp(source.dir, dir, { recursive: true });
    const file = path.join(dir, source.templateFile);
    const template = JSON.parse(await readFile(file, 'utf8')) as { Resources: Record<string, Resource> };
    const edit = withoutPutObject(template, 'store-results');
    expect(edit.removed).toBeGreaterThan(0);
    roleLogicalId = edit.roleLogicalId;
    await writeFile(file, JSON.stringify(template));
    bridge = await startTestBridge({ assembly: { dir }, routes: undefined, log: (line) => lines.push(line) });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('runs the allowed steps and fails the job on the refused call, with AWS AccessDenied', { timeout: 300_000 }, async () => {
    // Prepare
    const file = path.join(await mkdtemp(path.join(testTmp(), 'mfb-role-in-')), 'area.geojson');
    await writeFile(file, GEOJSON);
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
