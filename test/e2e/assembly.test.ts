/**
 * What deploys is what runs: the local bridge runs the functions of the
 * synthesized cloud assembly from their assets (the index.mjs `cdk deploy`
 * uploads), with the template's environment and timeouts, never the sources.
 *
 * - `local run packages/local/samples/bern-three-quarters.geojson`, in a process that records
 *   every module each thread loads: the bridge's thread loads no handler
 *   source (functions/handlers/), and every function runs in a worker that
 *   loads the Lambda runtime shim and one index.mjs of the assembly, nothing
 *   of functions/;
 * - a template whose Plan Processing and Create Processing time out after 2 s
 *   against a Mapflow that answers after 5 s: the job FAILS with
 *   Sandbox.Timedout, as Step Functions reports a Lambda timeout on AWS;
 * - a misspelt variable in a function's Environment fails that function as
 *   it would on AWS;
 * - each principal's policies come resolved to plain local ARNs (local IAM's input).
 */
import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLocalAssembly } from '../../packages/local/src/assembly/cache.ts';
import type { CloudFormationTemplate } from '../../packages/local/src/assembly/template.ts';
import { localAssemblySettings, type LocalBridge } from '../../packages/local/src/bridge.ts';
import type { RunJobSummary } from '../../packages/cli/src/run.ts';
import { testTmp } from '../support/temp.ts';
import { readText, ROOT, SAMPLES, squareAoi, startTestBridge, tempFile } from './helpers.ts';
import { sharedLedgerArgs } from '../support/shared-dynamodb.ts';

const run = promisify(execFile);
const CLI = path.join(ROOT, 'packages', 'cli', 'bin', 'mapflow-bridge.mjs');
const RECORDER = pathToFileURL(path.join(ROOT, 'test', 'support', 'record-modules.mjs')).href;

describe('local run on the cloud assembly', () => {
  it('runs every function from its bundle in the assembly and loads no handler source in the bridge process', async () => {
    // Prepare: the assembly local run synthesizes, on disk already (a synthesis would load lib/ and its catalogue)
    const assembly = await loadLocalAssembly(localAssemblySettings({}));
    const work = await mkdtemp(path.join(testTmp(), 'mfb-assembly-run-'));
    const modules = path.join(work, 'modules.txt');

    // Act
    const { stdout } = await run(
      process.execPath,
      ['--import', `${RECORDER}?file=${encodeURIComponent(modules)}`, CLI, 'local', 'run', '--json', ...(await sharedLedgerArgs('assembly')), '--out', path.join(work, 'out'), path.join(SAMPLES, 'bern-three-quarters.geojson')],
      { cwd: work, maxBuffer: 16 * 1024 * 1024, timeout: 600_000 },
    );

    // Assess: the job went through
    const { jobs } = JSON.parse(stdout) as { jobs: RunJobSummary[] };
    expect(jobs.map((job) => job.status)).toEqual(['SUCCEEDED']);
    const byThread = new Map<string, string[]>();
    for (const line of (await readFile(modules, 'utf8')).trim().split('\n')) {
      const [thread, url] = line.split(' ') as [string, string];
      byThread.set(thread, [...(byThread.get(thread) ?? []), url]);
    }
    // The bridge's own thread: no handler source
    const main = byThread.get('0') ?? [];
    expect(main.some((url) => url.endsWith('/packages/local/src/bridge.ts'))).toBe(true);
    expect(main.filter((url) => url.includes('/functions/handlers/'))).toEqual([]);
    // Each function's worker: the runtime shim and one bundle of the assembly, nothing of functions/ or lib/.
    // (The four that decode the input, plan and store among them, run in child processes started without this
    // process's flags, so the recorder does not reach them: they run the same shim with the module path of the
    // template's Code, packages/local/src/assembly/functions.ts, and have no loader that could read TypeScript sources.)
    const workers = [...byThread.entries()].filter(([thread]) => thread !== '0').map(([, urls]) => urls);
    const assemblyUrl = pathToFileURL(assembly.dir).href;
    const bundles = workers.map((urls) => urls.filter((url) => url.endsWith('.mjs') && url.startsWith(`${assemblyUrl}/asset.`)));
    expect(workers.length).toBeGreaterThanOrEqual(6); // register, admit, create, poll, finish part, finish job
    for (const [index, urls] of workers.entries()) {
      expect(urls.filter((url) => url.startsWith('file:') && !url.startsWith(assemblyUrl))).toEqual([pathToFileURL(path.join(ROOT, 'packages', 'local', 'src', 'assembly', 'lambda-runtime.mjs')).href]);
      expect(bundles[index]).toHaveLength(1);
    }
  }, 600_000);
});

describe('a pipeline on a changed assembly', () => {
  let bridge: LocalBridge;
  let template: CloudFormationTemplate;

  beforeAll(async () => {
    // Prepare: a copy of the assembly the test bridge would synthesize, with two functions' Timeout at 2 s
    // and a misspelt variable in Finish Part's environment
    const source = await loadLocalAssembly(localAssemblySettings({}));
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-assembly-copy-'));
    await cp(source.dir, dir, { recursive: true });
    const file = path.join(dir, source.templateFile);
    template = JSON.parse(await readFile(file, 'utf8')) as CloudFormationTemplate;
    for (const resource of Object.values(template.Resources)) {
      const variables = (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
      if (variables?.BRIDGE_FUNCTION === 'plan-processing' || variables?.BRIDGE_FUNCTION === 'create-processing') (resource.Properties as Record<string, unknown>).Timeout = 2;
      if (variables?.BRIDGE_FUNCTION === 'acquire-slot') {
        variables.LEDGER_TABEL = variables.LEDGER_TABLE;
        delete variables.LEDGER_TABLE;
      }
    }
    await writeFile(file, JSON.stringify(template));
    // Mapflow answers every request after 5 s
    bridge = await startTestBridge({ assembly: { dir }, routes: undefined, simulator: { processingSeconds: 2, seed: 7, latencyMs: 5_000 } });
  }, 300_000);
  afterAll(async () => {
    await bridge?.close();
  });

  it('fails a job whose function runs past its Timeout with Sandbox.Timedout, as Step Functions reports it on AWS', async () => {
    // Act
    const file = await tempFile('slow-mapflow.geojson', squareAoi());
    const { jobId } = await bridge.putInbox(file, 'slow-mapflow.geojson');
    const row = await bridge.waitForJob(jobId);

    // Assess
    expect(row?.status).toBe('FAILED');
    expect(row?.error?.message).toContain('Task timed out after 2.00 seconds');
    const report = JSON.parse(await readText(bridge.s3, bridge.bucket, 'failed/slow-mapflow.geojson/report.json')) as { caught?: { error?: string } };
    expect(report.caught?.error).toBe('Sandbox.Timedout');
  }, 300_000);

  it("fails a function whose template misspells a variable, with the configuration's own error, as on AWS", async () => {
    // Prepare
    const acquireSlot = [...bridge.assembly.functions.values()].find((fn) => fn.spec.bridgeFunction === 'acquire-slot');

    // Act
    const failure = await acquireSlot?.invoke({ job: { jobId: 'x' }, part: { index: 0 } }).then(() => undefined, (error: unknown) => error);

    // Assess
    expect(failure).toMatchObject({ errorType: 'ConfigurationError' });
    expect((failure as { errorMessage: string }).errorMessage).toContain('LEDGER_TABLE is required');
  });

  it("gives each function's and the state machine's role policies with every intrinsic resolved to a local ARN", () => {
    // Act
    const dispatch = bridge.assembly.principals.find((p) => p.name === 'dispatch');
    const machine = bridge.assembly.principals.find((p) => p.name === 'state-machine');

    // Assess
    const statements = dispatch?.policies.flatMap((policy) => policy.Statement) ?? [];
    expect(statements).toContainEqual(expect.objectContaining({ Effect: 'Allow', Action: 'states:StartExecution', Resource: bridge.engine.stateMachineArn }));
    expect(JSON.stringify(bridge.assembly.principals)).not.toMatch(/"(Ref|Fn::[A-Za-z]+)"/);
    expect(machine?.policies.flatMap((policy) => policy.Statement).some((s) => JSON.stringify(s.Resource).includes(':function:mapflow-bridge-register-job'))).toBe(true);
  });
});
