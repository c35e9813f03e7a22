/**
 * IAM enforced on the bridge's own calls: the in-process handlers sign as a
 * role whose policy lacks one statement (s3:PutObject under results/). Every
 * step the policy allows runs (register, plan, create and poll the
 * processing); the step that stores the results is refused as AWS refuses it
 * (AccessDenied naming the action and the resource) and the job fails on it.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LocalBridge } from '../../local/bridge.ts';
import { startTestBridge } from '../e2e/helpers.ts';
import { testTmp } from '../support/temp.ts';

const GEOJSON = JSON.stringify({
  type: 'FeatureCollection',
  features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[7.44, 46.94], [7.45, 46.94], [7.45, 46.95], [7.44, 46.95], [7.44, 46.94]]] } }],
});

describe('a handler role without one statement', () => {
  let bridge: LocalBridge;
  const lines: string[] = [];

  beforeAll(async () => {
    const bucket = 'mapflow-bridge-local';
    const s3 = (actions: string[], prefix: string) => ({ Effect: 'Allow', Action: actions, Resource: `arn:aws:s3:::${bucket}/${prefix}*` });
    bridge = await startTestBridge({
      log: (line) => lines.push(line),
      handlerRole: {
        roleArn: 'arn:aws:iam::000000000000:role/bridge-HandlersRole',
        policyDocuments: [
          {
            Version: '2012-10-17',
            Statement: [
              { Effect: 'Allow', Action: 'dynamodb:*', Resource: ['arn:aws:dynamodb:us-east-1:000000000000:table/*'] },
              { Effect: 'Allow', Action: ['states:SendTaskSuccess', 'states:SendTaskFailure', 'states:SendTaskHeartbeat'], Resource: '*' },
              { Effect: 'Allow', Action: 's3:ListBucket', Resource: `arn:aws:s3:::${bucket}` },
              s3(['s3:GetObject', 's3:GetObjectTagging', 's3:PutObjectTagging'], 'inbox/'),
              s3(['s3:GetObject', 's3:PutObject'], 'work/'),
              s3(['s3:GetObject', 's3:PutObject'], 'failed/'),
              // Missing: s3:PutObject on results/*
              s3(['s3:GetObject'], 'results/'),
            ],
          },
        ],
      },
    });
  }, 180_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('runs the allowed steps and fails the job on the refused one', { timeout: 180_000 }, async () => {
    // Prepare
    const file = path.join(await mkdtemp(path.join(testTmp(), 'mfb-role-')), 'area.geojson');
    await writeFile(file, GEOJSON);
    // Act
    const { jobId } = await bridge.putInbox(file, 'area.geojson');
    const row = await bridge.waitForJob(jobId);
    // Assess
    expect(bridge.simulator?.stats().processingsCreated).toBe(1);
    expect(row?.status).toBe('FAILED');
    expect(JSON.stringify(row)).toContain(
      'User: arn:aws:sts::000000000000:assumed-role/bridge-HandlersRole/handlers is not authorized to perform: s3:PutObject on resource: \\"arn:aws:s3:::mapflow-bridge-local/results/area.geojson/',
    );
  });
});
