/**
 * Shared pieces of the end-to-end suites: a local bridge tuned for tests
 * (fast simulated processings, short waits, no drop folder), object readers
 * and small GeoJSON builders.
 */
import { GetObjectCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import { localAssemblySettings, startLocalBridge, type LocalBridge, type LocalBridgeOptions } from '../../packages/local/src/bridge.ts';
import { loadLocalAssembly } from '../../packages/local/src/assembly/cache.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';
import { TEST_ROUTES } from '../support/routes.ts';
import { testTmp } from '../support/temp.ts';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Real GeoTIFFs and GeoJSONs written by others, with their licences (samples/README.md). */
export const SAMPLE_DATA = path.join(ROOT, 'samples');
export const SAMPLES_AOI = path.join(SAMPLE_DATA, 'aoi');
export const SAMPLES_RASTERS = path.join(SAMPLE_DATA, 'rasters');
export const SAMPLES = path.join(ROOT, 'packages/local/samples');

/**
 * The live service as the simulator plays it (--real-shapes: docs/simulator.md), with short waits:
 * a credit-billed account (remainingArea reads 0), no storage limit, a slow result first byte,
 * image preprocessing, null/UNPROCESSED then AWAITING first.
 */
export const LIVE_SHAPES: NonNullable<LocalBridgeOptions['simulator']> = {
  realShapes: true,
  billingType: 'CREDITS',
  limits: { storageLimitBytes: null },
  resultDelaySeconds: 1,
  preprocessingSeconds: 1,
  queuedSeconds: 0.5,
  awaitingSeconds: 1,
};

export async function startTestBridge(options: LocalBridgeOptions = {}): Promise<LocalBridge> {
  return startLocalBridge({
    ...(await sharedLedger(options)),
    simulator: { processingSeconds: 2, seed: 7 },
    routes: TEST_ROUTES,
    dropFolder: false,
    reconcileIntervalMs: 0,
    retryIntervalMs: 50,
    waitOverridesMs: { 'Wait For Slot': 200 },
    log: () => undefined,
    ...options,
  });
}

export async function readText(s3: S3Client, bucket: string, key: string): Promise<string> {
  const object = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return (await object.Body?.transformToString('utf8')) ?? '';
}

export async function listKeys(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  return (page.Contents ?? []).map((object) => object.Key as string).sort();
}

/** A square AOI of `sizeDeg` degrees in Bern, optionally with a `mapflow` member. */
export function squareAoi(options: { west?: number; south?: number; sizeDeg?: number; mapflow?: unknown } = {}): string {
  const west = options.west ?? 7.44;
  const south = options.south ?? 46.94;
  const size = options.sizeDeg ?? 0.005;
  const ring = [
    [west, south],
    [west + size, south],
    [west + size, south + size],
    [west, south + size],
    [west, south],
  ];
  return JSON.stringify({
    type: 'FeatureCollection',
    features: [{ type: 'Feature', properties: { name: 'square' }, geometry: { type: 'Polygon', coordinates: [ring] } }],
    ...(options.mapflow ? { mapflow: options.mapflow } : {}),
  });
}

/** Runs a CLI command in process and captures what it prints (console and the stdout and stderr streams). */
export async function runCli(run: (args: string[]) => Promise<number>, args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(`${a.join(' ')}\n`));
  const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(`${a.join(' ')}\n`));
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out.push(String(chunk));
    return true;
  });
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    err.push(String(chunk));
    return true;
  });
  try {
    const code = await run(args);
    return { code, out: out.join(''), err: err.join('') };
  } finally {
    log.mockRestore();
    error.mockRestore();
    write.mockRestore();
    stderr.mockRestore();
  }
}

/** Writes text to a fresh temporary file with that name. */
export async function tempFile(name: string, content: string | Buffer): Promise<string> {
  const dir = await mkdtemp(path.join(testTmp(), 'mfb-e2e-'));
  const file = path.join(dir, name);
  await writeFile(file, content);
  return file;
}

export interface TemplateResource {
  Type: string;
  Properties?: Record<string, unknown>;
}

export interface Template {
  Resources: Record<string, TemplateResource>;
}

export interface PolicyStatement {
  Action: string | string[];
  Resource: unknown;
}

/**
 * A copy of the cloud assembly the test bridge would run, its template
 * changed by `edit` (in place); returns the copy's folder, for
 * `startTestBridge({ assembly: { dir } })`.
 */
export async function editedAssembly(prefix: string, edit: (template: Template) => void): Promise<string> {
  const source = await loadLocalAssembly(localAssemblySettings({}));
  const dir = await mkdtemp(path.join(testTmp(), prefix));
  await cp(source.dir, dir, { recursive: true });
  const file = path.join(dir, source.templateFile);
  const template = JSON.parse(await readFile(file, 'utf8')) as Template;
  edit(template);
  await writeFile(file, JSON.stringify(template));
  return dir;
}

/** The logical id and resource of the function whose BRIDGE_FUNCTION is `name`. */
export function bridgeFunctionOf(template: Template, name: string): [string, TemplateResource] | undefined {
  return Object.entries(template.Resources).find(
    ([, resource]) => resource.Type === 'AWS::Lambda::Function' && (resource.Properties?.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables?.BRIDGE_FUNCTION === name,
  );
}

/** The policy documents of the template's AWS::IAM::Policy resources attached to the role `roleLogicalId`. */
export function policyDocumentsOf(template: Template, roleLogicalId: string): { Statement: PolicyStatement[] }[] {
  return Object.values(template.Resources)
    .filter((resource) => resource.Type === 'AWS::IAM::Policy')
    .filter((resource) => ((resource.Properties?.Roles as { Ref?: string }[] | undefined) ?? []).some((role) => role.Ref === roleLogicalId))
    .map((resource) => resource.Properties?.PolicyDocument as { Statement: PolicyStatement[] });
}

/**
 * A bridge on throw-away state keeps its ledger in a table of its own in the
 * run's shared DynamoDB Local (test/support/shared-dynamodb.ts) instead of
 * starting a JVM; one with a state folder starts its own, on disk, as
 * `npm start` does (restarts read it back), unless its test spreads
 * sharedLedgerOptions() into the options.
 */
export async function sharedLedger(options: LocalBridgeOptions): Promise<Pick<LocalBridgeOptions, 'dynamodbEndpoint' | 'ledgerTable'>> {
  if (options.stateDir !== undefined || options.dynamodbEndpoint !== undefined) return {};
  const shared = await sharedLedgerOptions();
  return { ...shared, ledgerTable: options.ledgerTable ?? shared.ledgerTable };
}
