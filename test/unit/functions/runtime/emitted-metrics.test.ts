/**
 * The metrics the functions print (Powertools EMF, functions/runtime/metrics.ts)
 * are the ones MapflowBridge's metric*() methods name: same namespace, name
 * and dimension set. Runs the emitting code with the Powertools environment a
 * synthesized function gets, so a change on either side fails here.
 * (Isolated file: it turns metrics on and the emitter caches its Metrics.)
 */
import { App, Stack } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import { Template } from 'aws-cdk-lib/assertions';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { recordBacklog, recordJobOutcome } from '../../../../functions/runtime/metrics.ts';
import { MapflowBridge } from '../../../../lib/mapflow-bridge.ts';
import { ledgerRow } from '../../../support/ledger-row.ts';

interface EmfDocument {
  _aws: { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string }[] }[] };
  [key: string]: unknown;
}

/** One emitted metric: namespace, name and its dimensions with their values. */
interface Emitted {
  namespace: string;
  metricName: string;
  dimensions: Record<string, string>;
}

/** The EMF documents Powertools prints to stdout while `act` runs, one entry per metric. */
function emittedBy(act: () => void): Emitted[] {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  try {
    act();
  } finally {
    spy.mockRestore();
  }
  const docs = lines.flatMap((l) => l.split('\n')).filter((l) => l.includes('"_aws"')).map((l) => JSON.parse(l) as EmfDocument);
  return docs.flatMap((doc) =>
    doc._aws.CloudWatchMetrics.flatMap((directive) =>
      directive.Dimensions.flatMap((set) =>
        directive.Metrics.map((m) => ({
          namespace: directive.Namespace,
          metricName: m.Name,
          dimensions: Object.fromEntries(set.map((d) => [d, String(doc[d])])),
        })),
      ),
    ),
  );
}

const asEmitted = (metric: cloudwatch.Metric): Emitted => ({ namespace: metric.namespace, metricName: metric.metricName, dimensions: { ...metric.dimensions } as Record<string, string> });

/** A bridge, and the Powertools environment its functions run with, set on this process before the first metric. */
function bridgeWithItsEnvironment(): MapflowBridge {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new Stack(app, 'Test');
  const bridge = new MapflowBridge(stack, 'Bridge');
  const [env] = Object.values(Template.fromStack(stack).findResources('AWS::Lambda::Function') as Record<string, { Properties: { Environment?: { Variables?: Record<string, string> } } }>)
    .map((f) => f.Properties.Environment?.Variables ?? {})
    .filter((v) => v.BRIDGE_FUNCTION === 'reconcile');
  process.env.POWERTOOLS_METRICS_NAMESPACE = env!.POWERTOOLS_METRICS_NAMESPACE;
  process.env.POWERTOOLS_SERVICE_NAME = env!.POWERTOOLS_SERVICE_NAME;
  // The test setup silences metrics (test/support/setup.ts); this file reads them.
  process.env.POWERTOOLS_METRICS_DISABLED = 'false';
  return bridge;
}

describe('emitted metrics and the metric methods', () => {
  const bridge = bridgeWithItsEnvironment();
  afterEach(() => vi.restoreAllMocks());

  it('a finished job emits exactly the metrics of metricJobs*, metricCreditsSpent, metricJobDuration and metricMapflowAuthErrors', () => {
    // Prepare
    const finished = { updatedAt: '2025-01-01T00:02:00.000Z', finishedAt: '2025-01-01T00:02:00.000Z' };

    // Act
    const emitted = emittedBy(() => {
      recordJobOutcome(ledgerRow({ ...finished, status: 'SUCCEEDED', kind: 'geotiff', actualCost: 3 }));
      recordJobOutcome(ledgerRow({ ...finished, status: 'FAILED', kind: 'geojson', error: { code: 'MAPFLOW_AUTH_ERROR', message: 'token refused' } }));
      recordJobOutcome(ledgerRow({ ...finished, status: 'REJECTED', kind: 'unsupported' }));
    });

    // Assess
    expect(emitted).toEqual(
      expect.arrayContaining([
        asEmitted(bridge.metricJobsSucceeded('geotiff')),
        asEmitted(bridge.metricCreditsSpent('geotiff')),
        asEmitted(bridge.metricJobDuration('geotiff')),
        asEmitted(bridge.metricJobsFailed('geojson')),
        asEmitted(bridge.metricMapflowAuthErrors('geojson')),
        asEmitted(bridge.metricJobsRejected('unsupported')),
      ]),
    );
    expect(emitted).toHaveLength(8); // the six above, and the durations of the FAILED and REJECTED jobs
  });

  it('the reconciler emits exactly the metrics of metricOldestJobInFlight and metricOldestQueuedJob', () => {
    // Act
    const emitted = emittedBy(() => recordBacklog({ oldestInFlightSecondsByRoute: { buildings: 120 }, oldestQueuedSeconds: 30 }, ['default']));

    // Assess
    expect(emitted).toEqual(
      expect.arrayContaining([
        asEmitted(bridge.metricOldestJobInFlight('default')),
        asEmitted(bridge.metricOldestJobInFlight('buildings')),
        asEmitted(bridge.metricOldestQueuedJob()),
      ]),
    );
    expect(emitted).toHaveLength(3);
  });
});
