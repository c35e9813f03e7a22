/**
 * Lean Lambda bundles: each handler bundles only what it calls. Bundled with
 * esbuild as the CDK does (bench/bundles.ts), then checked:
 *   - the providers a handler imports (functions/runtime/with-*.ts) match what
 *     its role may do (lib/permissions.ts), so a lean handler never lacks a
 *     client at run time and never carries one it may not use;
 *   - no bundle carries undici (the Mapflow client sends through node:http) or
 *     the SDK's credential chain (lib/bundling.ts); the Mapflow client only
 *     where Mapflow is called, the S3 client only with S3 rights, the DynamoDB
 *     client only with ledger rights;
 *   - the goals of issue 12: every bundle <= 1 MiB, handlers that do not call
 *     Mapflow <= 400 KiB. Two handlers (fail-job, reconcile: S3, DynamoDB,
 *     Step Functions, EventBridge and metrics in one function) are still over
 *     with the SDK bundled: they are held to their measured size (a regression
 *     guard, not the goal), and with `externalAwsSdk` every handler meets it.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../functions/handlers/catalog.ts';
import { FUNCTION_CAPABILITIES } from '../../lib/permissions.ts';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { BUNDLE_LIMIT_BYTES, NON_MAPFLOW_LIMIT_BYTES, measureBundles, type BundleFigure } from '../../bench/bundles.ts';
import { LAMBDA_CREDENTIALS_MODULE, lambdaEsbuildArgs, lambdaEsbuildOptions } from '../../lib/bundling.ts';
import { testTmp } from '../support/temp.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const KIB = 1024;
const S3_CAPABILITIES = ['inbox:read', 'inbox:list', 'inbox:tag', 'work:read', 'work:write', 'results:write', 'failed:write'];

const needs = (name: string) => {
  const caps = FUNCTION_CAPABILITIES[name as keyof typeof FUNCTION_CAPABILITIES] as readonly string[];
  return {
    mapflow: caps.includes('mapflow:token'),
    s3: caps.some((c) => S3_CAPABILITIES.includes(c)),
    sfn: caps.some((c) => c.startsWith('workflow:')),
    dynamodb: caps.some((c) => c.startsWith('ledger:')),
  };
};

/** Still over the 400 KiB goal with the SDK bundled (see the header): their measured size, as a ceiling. */
const OVER_GOAL_CEILING: Record<string, number> = { 'fail-job': 500 * KIB, reconcile: 490 * KIB };

describe('lean Lambda bundles', () => {
  let figures: BundleFigure[];
  const inputs = new Map<string, string[]>();

  beforeAll(async () => {
    figures = await measureBundles({ importTimes: false, externalAwsSdk: true });
    for (const f of figures) inputs.set(f.name, f.inputs);
  }, 600_000);

  it('imports exactly the client providers its role allows', async () => {
    for (const name of HANDLER_NAMES) {
      // Prepare
      const source = await readFile(path.join(ROOT, 'functions/handlers', `${name}.ts`), 'utf8');
      const imports = (provider: string) => source.includes(`'../runtime/${provider}.ts'`);
      // Assess
      const { dynamodb: _, ...providers } = needs(name);
      expect({ name, mapflow: imports('with-mapflow'), s3: imports('with-s3'), sfn: imports('with-sfn') }).toEqual({ name, ...providers });
    }
  });

  it('bundles no undici and no credential chain anywhere, and each client only where it is called', () => {
    expect(inputs.size).toBe(HANDLER_NAMES.length);
    for (const name of HANDLER_NAMES) {
      const bundled = inputs.get(name) ?? [];
      const has = (fragment: string) => bundled.some((input) => input.includes(fragment));
      expect({
        name,
        undici: has('node_modules/undici/'),
        credentialChain: has('@aws-sdk/credential-provider-node/') || has('@aws-sdk/nested-clients/'),
        leanCredentials: has('functions/runtime/lambda-credentials.ts'),
      }).toEqual({ name, undici: false, credentialChain: false, leanCredentials: true });
      expect({
        name,
        mapflowClient: has('functions/mapflow/client.ts'),
        s3: has('@aws-sdk/client-s3/'),
        dynamodb: has('@aws-sdk/client-dynamodb/'),
      }).toEqual({ name, mapflowClient: needs(name).mapflow, s3: needs(name).s3, dynamodb: needs(name).dynamodb });
    }
  });

  it('keeps every bundle within 1 MiB and those that do not call Mapflow within 400 KiB', () => {
    expect(figures).toHaveLength(HANDLER_NAMES.length);
    for (const f of figures) {
      const budget = needs(f.name).mapflow ? BUNDLE_LIMIT_BYTES : (OVER_GOAL_CEILING[f.name] ?? NON_MAPFLOW_LIMIT_BYTES);
      expect({ name: f.name, withinBudget: f.bytes <= budget, kib: Math.round(f.bytes / KIB) }).toMatchObject({ name: f.name, withinBudget: true });
    }
  });

  it('meets the 400 KiB goal for every handler without Mapflow when the SDK is left to the runtime (externalAwsSdk)', () => {
    for (const f of figures.filter((figure) => !needs(figure.name).mapflow)) {
      const kib = Math.round((f.externalSdk?.bytes ?? Infinity) / KIB);
      expect({ name: f.name, withinGoal: (f.externalSdk?.bytes ?? Infinity) <= NON_MAPFLOW_LIMIT_BYTES, kib }).toMatchObject({ name: f.name, withinGoal: true });
    }
  });

  it('gives NodejsFunction the same options as the bench (esbuildArgs), and no alias when the SDK is the runtime\'s', () => {
    // Act
    const bundled = lambdaEsbuildArgs();
    const external = lambdaEsbuildArgs({ externalAwsSdk: true });

    // Assess: CDK renders an array as `--alias:<item>`, esbuild's syntax.
    expect(bundled).toEqual({ '--legal-comments': 'none', '--alias': [`@aws-sdk/credential-provider-node=${LAMBDA_CREDENTIALS_MODULE}`] });
    expect(external).toEqual({ '--legal-comments': 'none' });
    expect(lambdaEsbuildOptions({ externalAwsSdk: true }).external).toEqual(['@aws-sdk/*']);
  });

  it('signs AWS requests with the execution role keys from the environment (the lean credential provider in a real bundle)', async () => {
    // Prepare: a bundle of one DynamoDB call, built with the Lambda options, against a server on 127.0.0.1.
    const dir = await mkdtemp(path.join(testTmp(), 'bundle-credentials-'));
    let seen: IncomingHttpHeaders | undefined;
    const server = createServer((req, res) => {
      seen = req.headers;
      req.resume();
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end('{"TableNames":[]}');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const outfile = path.join(dir, 'probe.mjs');
      await build({
        ...lambdaEsbuildOptions(),
        stdin: {
          contents:
            "import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';\n" +
            'const client = new DynamoDBClient({ region: "eu-central-1", endpoint: process.env.PROBE_ENDPOINT, maxAttempts: 1 });\n' +
            'try { await client.send(new ListTablesCommand({})); console.log("ok"); } catch (e) { console.log("error: " + e.message); }\n',
          resolveDir: ROOT,
          loader: 'ts',
        },
        outfile,
        logLevel: 'silent',
      });
      const run = (env: Record<string, string>) =>
        promisify(execFile)(process.execPath, [outfile], { env: { PATH: process.env.PATH ?? '', PROBE_ENDPOINT: endpoint, ...env }, timeout: 60_000 });

      // Act
      const withKeys = await run({ AWS_ACCESS_KEY_ID: 'AKIDBUNDLETEST', AWS_SECRET_ACCESS_KEY: 'secret', AWS_SESSION_TOKEN: 'session-token' });
      const headers = seen;
      seen = undefined;
      // Without the keys the full chain would look at ~/.aws and instance metadata; the lean provider says what is missing.
      const withoutKeys = await run({ HOME: dir });

      // Assess
      expect(withKeys.stdout.trim()).toBe('ok');
      expect(String(headers?.authorization)).toContain('Credential=AKIDBUNDLETEST/');
      expect(headers?.['x-amz-security-token']).toBe('session-token');
      expect(withoutKeys.stdout.trim()).toMatch(/^error: No AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set/);
      expect(seen).toBeUndefined();
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
