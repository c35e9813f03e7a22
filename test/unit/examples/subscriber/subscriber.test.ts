/**
 * The example subscriber (examples/subscriber): its stack synthesizes with a
 * rule on the bridge's bus for "Job Succeeded" targeting its function, which
 * may read results; its handler reads a job's results from S3.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';
import { handler } from '../../../../examples/subscriber/handler.ts';
import { SubscriberStack } from '../../../../examples/subscriber/stack.ts';
import type { JobEvent } from '../../../../functions/events/types.ts';

describe('example subscriber stack', () => {
  it('synthesizes: a rule on Job Succeeded from the bridge, on its bus, targeting a function that may read results', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    // Act
    const stack = new SubscriberStack(app, 'Subscriber');
    const template = Template.fromStack(stack);
    // Assess
    const busId = stack.getLogicalId(stack.bridge.eventBus.node.defaultChild as never);
    const fnId = stack.getLogicalId(stack.subscriber.node.defaultChild as never);
    const rule = Object.values(template.findResources('AWS::Events::Rule')).find((r) => r.Properties.EventPattern?.source?.[0] === 'mapflow.bridge');
    expect(rule?.Properties.EventPattern).toEqual({ source: ['mapflow.bridge'], 'detail-type': ['Job Succeeded'] });
    expect(rule?.Properties.EventBusName).toEqual({ Ref: busId });
    expect(rule?.Properties.Targets[0].Arn).toEqual({ 'Fn::GetAtt': [fnId, 'Arn'] });
    const roleId = stack.getLogicalId(stack.subscriber.role?.node.defaultChild as never);
    const statements = Object.values(template.findResources('AWS::IAM::Policy'))
      .filter((p) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === roleId))
      .flatMap((p) => p.Properties.PolicyDocument.Statement as { Action: string | string[] }[]);
    expect(statements.flatMap((s) => s.Action)).toContain('s3:GetObject');
    template.resourceCountIs('AWS::EventSchemas::Registry', 1);
  }, 240_000);
});

describe('example subscriber handler', () => {
  it('lists the result prefix page by page, reads job.json files and reports the results', async () => {
    // Prepare
    const s3 = mockClient(S3Client);
    s3.on(ListObjectsV2Command, { ContinuationToken: undefined }).resolves({
      IsTruncated: true,
      NextContinuationToken: 't2',
      Contents: [{ Key: 'results/area.geojson/a/result.geojson', Size: 1234 }],
    });
    s3.on(ListObjectsV2Command, { ContinuationToken: 't2' }).resolves({ Contents: [{ Key: 'results/area.geojson/a/job.json', Size: 80 }] });
    s3.on(GetObjectCommand, { Key: 'results/area.geojson/a/job.json' }).resolves({
      // The part of the SDK's stream body the handler uses.
      Body: { transformToString: async () => '{"status":"SUCCEEDED"}' } as never,
    });
    const event: JobEvent<'Job Succeeded'> = {
      version: '0', id: '1', 'detail-type': 'Job Succeeded', source: 'mapflow.bridge', account: '1', time: '2025-01-01T00:00:00Z', region: 'eu-central-1', resources: [],
      detail: {
        jobId: 'area-1', status: 'SUCCEEDED', kind: 'geojson', routeName: 'default', at: '2025-01-01T00:00:00Z',
        input: { bucket: 'drop', key: 'inbox/area.geojson', etag: 'e', size: 1 }, resultPrefix: 'results/area.geojson/',
      },
    };
    // Act
    const summary = await handler(event, new S3Client({ region: 'eu-central-1' }));
    // Assess
    expect(summary).toEqual({
      jobId: 'area-1',
      results: [{ key: 'results/area.geojson/a/result.geojson', bytes: 1234 }],
      jobFiles: [{ key: 'results/area.geojson/a/job.json', status: 'SUCCEEDED' }],
    });
    expect(s3.commandCalls(ListObjectsV2Command)).toHaveLength(2);
    s3.restore();
  });
});
