/**
 * Issue 37 point 3: no job within the bridge's limits makes a state cross
 * Step Functions' 256 KiB ("Maximum input or output size for a task, state,
 * or execution: 256 KiB of data as a UTF-8 encoded string",
 * docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html), which
 * would fail its execution with States.DataLimitExceeded, past every Catch:
 * no Fail Job, no report, slots held until the reconciler comes.
 *
 * The largest job: 100 parts (MAX_SPLIT_PARTS), the longest names the key
 * checks accept (4-byte UTF-8 letters everywhere a name is free: file stem,
 * feature names, the route's processingName), result keys at S3's 1,024
 * bytes, every part FAILED after a restart with Mapflow's messages and a
 * partial result. The real synthesized definition runs in the local engine
 * (which holds every state's input and output to 256 KiB) with task stubs
 * answering those maximal outputs, shaped by the bridge's own functions.
 */
import { describe, expect, it } from 'vitest';
import { LocalEngine, type StateOutputTrace } from '../../../packages/local/src/engine/engine.ts';
import { STATE_PAYLOAD_LIMIT_BYTES } from '../../../packages/local/src/engine/lambda.ts';
import { synthLocalDefinition } from '../../../packages/local/src/assembly/local-definition.ts';
import type { JobPart } from '../../../functions/core/model.ts';
import type { FinishResult, PlanPart, PlanResult, RegisterResult } from '../../../functions/jobs/workflow.ts';
import { MAX_SPLIT_PARTS } from '../../../functions/jobs/steps/plan-processing.ts';
import { partOutcomeOf } from '../../../functions/jobs/steps/finish-part.ts';
import { aggregate } from '../../../functions/jobs/steps/finish-job.ts';
import { processingNameFor } from '../../../functions/jobs/common.ts';
import { jobErrorFromMapflow } from '../../../functions/jobs/outcome.ts';
import { DEFAULT_PREFIXES, jobIdFor, keyLengthProblem, reportKey, resultPrefix, splitPartNames, workKey } from '../../../functions/routing/index.ts';

const SYNTH_TIMEOUT = 240_000;
/** A letter of 4 UTF-8 bytes (MATHEMATICAL DOUBLE-STRUCK CAPITAL A): kept by sanitisePathSegment. */
const WIDE = '\u{1D538}';
const BUCKET = 'b'.repeat(63);
const STEM = WIDE.repeat(64);
const labels = Array.from({ length: MAX_SPLIT_PARTS }, (_, i) => `${i}${WIDE.repeat(63)}`);
const MESSAGES = Array.from({ length: 5 }, (_, i) => ({
  code: `source-validator.Error${i}`,
  parameters: { level: 'error', message: 'The imagery provider answered with an error for some tiles of the area; '.repeat(4), provider: 'x'.repeat(100) },
}));

/** The longest key (folders of ASCII, the longest stem) whose result keys the key checks still accept with these part names. */
function longestKey(): string {
  const names = (key: string) => splitPartNames(key, labels.map((name, index) => ({ index, name })));
  const keyOf = (folder: number) => `inbox/${'f'.repeat(folder)}/${STEM}.geojson`;
  let folder = 1;
  while (keyLengthProblem(DEFAULT_PREFIXES, keyOf(folder + 1), names(keyOf(folder + 1))) === undefined) folder += 1;
  return keyOf(folder);
}

/** The job's maximal pieces, built with the bridge's own naming functions. */
function largestJob() {
  const key = longestKey();
  const input = { bucket: BUCKET, key, etag: 'e'.repeat(32) + '-10000', size: 1e12, versionId: 'v'.repeat(32) };
  const jobId = jobIdFor(input);
  const names = splitPartNames(key, labels.map((name, index) => ({ index, name })));
  const route = { name: 'r'.repeat(64), prefix: `${'p'.repeat(64)}/`, splitFeatures: true, processingName: WIDE.repeat(200), model: 'm'.repeat(64), project: { name: 'n'.repeat(100) } };
  const job: RegisterResult = {
    jobId,
    input,
    kind: 'geojson',
    routeName: route.name,
    route: route as unknown as RegisterResult['route'],
    status: 'RUNNING' as RegisterResult['status'],
    alreadyFinal: false,
    processImages: true,
    hasModel: true,
    executionArn: `arn:aws:states:us-east-1:000000000000:execution:mapflow-bridge:${jobId}`,
    createdAt: new Date(0).toISOString(),
  };
  const planParts: PlanPart[] = names.map((name, index) => ({
    index,
    name,
    processingName: processingNameFor(`${route.processingName} ${name}`, jobId),
    geometryKey: workKey(DEFAULT_PREFIXES, jobId, `part-${index}.geometry.json`),
    requestKey: workKey(DEFAULT_PREFIXES, jobId, `part-${index}.request.json`),
    areaSqKm: 123456.789012,
    estimatedCost: 123456.789012,
    projectId: '00000000-0000-0000-0000-000000000000',
  }));
  const plan: PlanResult = {
    projectId: '00000000-0000-0000-0000-000000000000',
    wdId: '00000000-0000-0000-0000-000000000000',
    modelName: 'm'.repeat(100),
    areaSqKm: 12345678.9012,
    estimatedCost: 12345678.9012,
    creditBudget: 100000000,
    parts: planParts,
    ignored: { points: 100000, lines: 100000 },
  } as PlanResult;
  const prefix = resultPrefix(DEFAULT_PREFIXES, key);
  const parts: JobPart[] = planParts.map((part) => ({
    index: part.index,
    name: part.name,
    processingId: '00000000-0000-0000-0000-000000000000',
    percentCompleted: 99,
    cost: 123456.789,
    attempts: 2,
    restartRequestedAt: new Date(0).toISOString(),
    status: 'FAILED',
    partialResult: { key: `${prefix}${part.name}/result.geojson`.replace('results/', 'failed/'), features: 123456789 },
    error: jobErrorFromMapflow('FAILED', MESSAGES, 'FAILED'),
  }));
  return { input, jobId, job, plan, parts, prefix };
}

/** Runs the synthesized definition on the largest job; `fullOutcomes` makes the Map gather the full JobParts at $.parts, as before issue 37 point 3. */
async function run(options: { fullOutcomes?: boolean } = {}) {
  const { definition } = synthLocalDefinition();
  const processParts = (definition.States as Record<string, Record<string, unknown>>)['Process Parts']!;
  if (options.fullOutcomes) processParts.ResultPath = '$.parts';
  const { input, jobId, job, plan, parts, prefix } = largestJob();
  const outputs: StateOutputTrace[] = [];
  // The engine reads the state outputs from the execution's event log, after the states ran: wait for the last.
  let finished!: () => void;
  const finishJobTraced = new Promise<void>((resolve) => (finished = resolve));
  const byIndex = (event: unknown) => parts[(event as { part: { index: number } }).part.index]!;
  const since = new Date(0).toISOString();
  const slot = { acquired: true, waitSeconds: 0, attempts: 1, firstAttemptAt: since, waitedSeconds: 12345.6 };
  const finish: FinishResult = {
    status: 'FAILED',
    resultPrefix: prefix,
    reportKey: reportKey(DEFAULT_PREFIXES, input.key),
    actualCost: 123456789.123,
    error: aggregate(parts, parts.length).error!,
  };
  // The callback states: the state completes with what SendTaskSuccess sends.
  const handOver = async (event: unknown) => {
    engine.taskTokens.succeed((event as { taskToken: string }).taskToken, JSON.stringify(slot));
    return {};
  };
  const engine: LocalEngine = new LocalEngine({
    definition,
    checkDefinition: false,
    onStateOutput: (trace) => {
      outputs.push(trace);
      if (trace.state === 'Finish Job') finished();
    },
    taskResources: {
      'Register Job': async () => job,
      'Plan Processing': async () => plan,
      'Admit Job': handOver,
      'Acquire Slot': async () => slot,
      'Wait For Slot': handOver,
      'Create Processing': async () => ({ processingId: '00000000-0000-0000-0000-000000000000', reused: true, startedAt: since }),
      'Poll Processing': async (event) => ({
        outcome: 'FAILED',
        waitSeconds: 3600,
        polls: 100000,
        status: 'FAILED',
        percentCompleted: 99,
        restarts: 1,
        cost: 123456.789,
        messages: MESSAGES,
        previousPercent: 99,
        awaiting: { seconds: 123456, polls: 100000, since },
        index: byIndex(event).index,
      }),
      'Store Results': async (event) => ({ resultKey: byIndex(event).partialResult!.key, partial: { features: 123456789 } }),
      'Finish Part': async (event) => (options.fullOutcomes ? byIndex(event) : partOutcomeOf(byIndex(event))),
      'Finish Job': async () => finish,
      'Fail Job': async () => finish,
      'Release Job Slots': async () => ({ jobId }),
      'Restart Processing': async () => ({ restarts: 1 }),
      'Inspect GeoTIFF': async () => ({}),
      'Ensure Mosaic': async () => ({}),
      'Upload Image': async () => ({ ready: true, waitSeconds: 0 }),
    },
  });
  await engine.start(jobId, { jobId, input });
  const done = await engine.waitFor(jobId);
  if (done?.status === 'SUCCEEDED') await finishJobTraced;
  await engine.close();
  const largest = outputs.reduce((max, trace) => (trace.bytes > max.bytes ? trace : max), { execution: '', state: '', bytes: 0 });
  return { done, largest, parts };
}

describe('the largest job the bridge takes, through the synthesized definition', () => {
  it('is what the limits allow: 100 parts, names and result keys at their longest', () => {
    // Act
    const { plan, parts, input } = largestJob();

    // Assess
    expect(plan.parts).toHaveLength(MAX_SPLIT_PARTS);
    expect(keyLengthProblem(DEFAULT_PREFIXES, input.key, plan.parts.map((p) => p.name))).toBeUndefined();
    expect(Buffer.byteLength(parts[0]!.partialResult!.key)).toBeGreaterThan(1000);
    expect(Buffer.byteLength(plan.parts[0]!.name)).toBeGreaterThan(500);
  });

  it('keeps every state under 256 KiB: the Map gathers each part\'s outcome in brief', { timeout: SYNTH_TIMEOUT }, async () => {
    // Act
    const { done, largest } = await run();

    // Assess
    expect(done?.error).toBeUndefined();
    expect(done?.status).toBe('SUCCEEDED');
    expect(largest.bytes).toBeLessThan(STATE_PAYLOAD_LIMIT_BYTES);
    // The margin left for what is not bounded here (Mapflow's messages in a part's own state, route settings).
    expect(largest.bytes).toBeLessThan(STATE_PAYLOAD_LIMIT_BYTES * 0.8);
  });

  it('would cross it with the full outcomes gathered at $.parts, as before: States.DataLimitExceeded past every Catch', { timeout: SYNTH_TIMEOUT }, async () => {
    // Act
    const { done } = await run({ fullOutcomes: true });

    // Assess
    expect(done?.status).toBe('FAILED');
    expect(done?.error?.Error).toBe('States.DataLimitExceeded');
  });
});
