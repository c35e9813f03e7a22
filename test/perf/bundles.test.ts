/**
 * Lean Lambda bundles: each handler bundles only what it calls. Bundled with
 * esbuild as the CDK does (packages/bench/bundles.ts), then checked:
 *   - the providers a handler imports (functions/runtime/with-*.ts) match what
 *     its role may do (lib/private/permissions.ts), so a lean handler never lacks a
 *     client at run time and never carries one it may not use;
 *   - no bundle carries undici (the Mapflow client sends through node:http) or
 *     the SDK's credential chain (lib/private/bundling.ts); the Mapflow client only
 *     where Mapflow is called, the S3 client only with S3 rights, the DynamoDB
 *     client only with ledger rights;
 *   - the goals of issue 12: every bundle <= 1 MiB, handlers that do not call
 *     Mapflow <= 400 KiB, with the SDK bundled and with `externalAwsSdk`;
 *   - the SDK tree-shaking rewrites of lib/private/bundling.ts change only what they
 *     mean to, and a bundle built with them still talks S3 correctly.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../functions/core/catalog.ts';
import { FUNCTION_CAPABILITIES } from '../../lib/private/permissions.ts';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { BUNDLE_LIMIT_BYTES, NON_MAPFLOW_EXCEPTIONS, NON_MAPFLOW_LIMIT_BYTES, measureBundles, type BundleFigure } from '../../packages/bench/bundles.ts';
import { MAP_LRU_CACHE, NO_EVENT_STREAMS_MESSAGE, clientPackageIdentity, literalSchemaKeys, lambdaEsbuildOptions, nodeHttpThroughRequire, withMapLruCache, withoutEventStreams } from '../../lib/private/bundling.ts';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
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
        mnemonist: has('node_modules/mnemonist/'),
      }).toEqual({ name, undici: false, credentialChain: false, leanCredentials: true, mnemonist: false });
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
      const budget = needs(f.name).mapflow ? BUNDLE_LIMIT_BYTES : (NON_MAPFLOW_EXCEPTIONS[f.name] ?? NON_MAPFLOW_LIMIT_BYTES);
      expect({ name: f.name, withinBudget: f.bytes <= budget, kib: Math.round(f.bytes / KIB) }).toMatchObject({ name: f.name, withinBudget: true });
    }
  });

  it('meets the 400 KiB goal for every handler without Mapflow when the SDK is left to the runtime (externalAwsSdk)', () => {
    for (const f of figures.filter((figure) => !needs(figure.name).mapflow)) {
      const kib = Math.round((f.externalSdk?.bytes ?? Infinity) / KIB);
      expect({ name: f.name, withinGoal: (f.externalSdk?.bytes ?? Infinity) <= NON_MAPFLOW_LIMIT_BYTES, kib }).toMatchObject({ name: f.name, withinGoal: true });
    }
  });

  it('rewrites computed schema keys as the literal keys they name, and nothing else', () => {
    // Prepare: the shape of a generated schemas_0.js, plus look-alikes that must stay.
    const source = [
      'const _e = "error";',
      'const _hE = "httpError";',
      'const _c = "client";',
      'let _i = 0;',
      'export var NoSuchKey$ = [-3, n0, _NSK, { [_e]: _c, [_hE]: 404 }, [], []];',
      'const pick = ready ? list[_i] : other;',
      'const unknown = { [_x]: 1 };',
    ].join('\n');

    // Act
    const rewritten = literalSchemaKeys(source);

    // Assess
    expect(rewritten).toContain('{ "error": _c, "httpError": 404 }');
    expect(rewritten).toContain('ready ? list[_i] : other');
    expect(rewritten).toContain('{ [_x]: 1 }');
    expect(literalSchemaKeys('export const x = { [a]: 1 };')).toBe('export const x = { [a]: 1 };');
  });

  it('leaves the event-stream support out (an event-stream call would fail by name), and cuts a client package.json to its name and version', () => {
    const protocol = 'import { a } from "b";\nasync function load() { const { EventStreamSerde } = await import("@smithy/core/event-streams"); return EventStreamSerde; }';
    const rewritten = withoutEventStreams(protocol);
    expect(rewritten).not.toContain('@smithy/core/event-streams');
    expect(rewritten).toContain(`const { EventStreamSerde } = await Promise.reject(new Error(${JSON.stringify(NO_EVENT_STREAMS_MESSAGE)}));`);
    expect(withoutEventStreams('const x = 1;')).toBe('const x = 1;');
    expect(JSON.parse(clientPackageIdentity(JSON.stringify({ name: '@aws-sdk/client-s3', version: '3.1.0', dependencies: { a: '1' } })))).toEqual({
      name: '@aws-sdk/client-s3',
      version: '3.1.0',
    });
  });

  it('gives the SDK\'s endpoint cache an LRU cache on a Map that answers as mnemonist\'s does', async () => {
    // Prepare: the same operations on both caches (capacity 3)
    const MapLru = new Function(`${MAP_LRU_CACHE}; return LRUCache;`)() as new (capacity: number) => {
      get(k: string): unknown; set(k: string, v: unknown): unknown; has(k: string): boolean; peek(k: string): unknown; clear(): void;
    };
    const ours = new MapLru(3);
    // mnemonist is what the SDK's EndpointCache imports (a dependency of @aws-sdk/endpoint-cache).
    const MnemonistLruCache = createRequire(path.join(ROOT, 'node_modules/@aws-sdk/endpoint-cache/package.json'))('mnemonist/lru-cache') as typeof MapLru;
    const theirs = new MnemonistLruCache(3);
    const steps: [string, string, number?][] = [
      ['set', 'a', 1], ['set', 'b', 2], ['set', 'c', 3], ['get', 'a'], ['set', 'd', 4], ['has', 'b'], ['peek', 'c'],
      ['set', 'e', 5], ['has', 'c'], ['get', 'a'], ['set', 'a', 6], ['set', 'f', 7], ['get', 'd'], ['get', 'a'], ['clear', ''], ['has', 'a'],
    ];
    // Act
    const run = (cache: { get(k: string): unknown; set(k: string, v: number): unknown; has(k: string): boolean; peek(k: string): unknown; clear(): void }) =>
      steps.map(([op, key, value]) => {
        if (op === 'set') return (cache.set(key, value as number), null);
        if (op === 'clear') return (cache.clear(), null);
        return (cache as unknown as Record<string, (k: string) => unknown>)[op]?.call(cache, key) ?? null;
      });
    // Assess
    expect(run(ours)).toEqual(run(theirs));
    const source = await readFile(path.join(ROOT, 'node_modules/@aws-sdk/endpoint-cache/dist-es/EndpointCache.js'), 'utf8');
    expect(withMapLruCache(source)).not.toContain('mnemonist');
    expect(withMapLruCache(source)).toContain('class LRUCache');
    expect(withMapLruCache('const x = 1;')).toBe('const x = 1;');
  });

  it('may leave event streams out: among the SDK clients bundled, only S3 SelectObjectContent streams events, and no handler calls it', async () => {
    // Prepare: every event-stream union (a union schema with the streaming trait) of the clients the handlers import
    const clients = ['client-s3', 'client-dynamodb', 'client-sfn', 'client-eventbridge', 'client-secrets-manager'];
    const streams: string[] = [];
    for (const client of clients) {
      const schemas = await readFile(path.join(ROOT, 'node_modules/@aws-sdk', client, 'dist-es/schemas/schemas_0.js'), 'utf8');
      for (const match of schemas.matchAll(/export var (\w+)\$ = \[4, n0, \w+,\s*\{ \[_st\]: 1 \}/g)) streams.push(`${client}:${match[1]}`);
    }
    const { stdout } = await promisify(execFile)('git', ['grep', '-l', 'SelectObjectContent', '--', 'functions', 'lib'], { cwd: ROOT }).catch(() => ({ stdout: '' }));

    // Assess
    expect(streams).toEqual(['client-s3:SelectObjectContentEventStream']);
    expect(stdout.trim().split('\n').filter(Boolean)).toEqual(['lib/private/bundling.ts']);
  });

  it('bundles only the S3 schemas used, and the bundle still sends requests and reads S3 errors correctly', async () => {
    // Prepare: a bundle of two S3 calls with the Lambda options, against a server on 127.0.0.1 that answers like S3.
    const dir = await mkdtemp(path.join(testTmp(), 'bundle-s3-'));
    const requests: { method?: string; url?: string; headers: IncomingHttpHeaders; body: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        requests.push({ method: req.method, url: req.url, headers: req.headers, body });
        if (req.method === 'PUT') res.writeHead(200, { etag: '"abc"' }).end();
        else
          res
            .writeHead(404, { 'content-type': 'application/xml' })
            .end('<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>missing.json</Key></Error>');
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const contents =
      "import { S3Client, PutObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';\n" +
      'const s3 = new S3Client({ region: "eu-central-1", endpoint: process.env.PROBE_ENDPOINT, forcePathStyle: true, maxAttempts: 1 });\n' +
      'const put = await s3.send(new PutObjectCommand({ Bucket: "drop", Key: "failed/a.json", Body: "{}", ContentType: "application/json", Metadata: { job: "j-1" } }));\n' +
      'try { await s3.send(new GetObjectCommand({ Bucket: "drop", Key: "missing.json" })); console.log("no error"); }\n' +
      'catch (e) { console.log(JSON.stringify({ etag: put.ETag, name: e.name, status: e.$metadata?.httpStatusCode, fault: e.$fault, message: e.message })); }\n';
    try {
      const outfile = path.join(dir, 'probe.mjs');
      const withPlugin = await build({ ...lambdaEsbuildOptions(), stdin: { contents, resolveDir: ROOT, loader: 'ts' }, outfile, logLevel: 'silent' });
      const withoutPlugin = await build({ ...lambdaEsbuildOptions(), plugins: [], stdin: { contents, resolveDir: ROOT, loader: 'ts' }, write: false, outfile, logLevel: 'silent' });
      expect(withPlugin.errors).toEqual([]);

      // Act
      const { stdout } = await promisify(execFile)(process.execPath, [outfile], {
        env: { PATH: process.env.PATH ?? '', PROBE_ENDPOINT: endpoint, AWS_ACCESS_KEY_ID: 'AKIDBUNDLETEST', AWS_SECRET_ACCESS_KEY: 'secret' },
        timeout: 60_000,
      });
      const bundled = await readFile(outfile, 'utf8');
      const unshaken = withoutPlugin.outputFiles?.[0]?.text ?? '';

      // Assess: the request and the error went through the rewritten schemas (traits such as httpError and httpHeader intact).
      expect(JSON.parse(stdout.trim())).toEqual({ etag: '"abc"', name: 'NoSuchKey', status: 404, fault: 'client', message: 'The specified key does not exist.' });
      expect(requests[0]).toMatchObject({ method: 'PUT', url: '/drop/failed/a.json?x-id=PutObject', body: '{}' });
      expect(requests[0]?.headers).toMatchObject({ 'content-type': 'application/json', 'x-amz-meta-job': 'j-1' });
      expect(requests[1]).toMatchObject({ method: 'GET', url: '/drop/missing.json?x-id=GetObject' });
      // An operation the probe never calls is left out only with the rewrites.
      expect(unshaken).toContain('PutBucketLifecycleConfigurationRequest');
      expect(bundled).not.toContain('PutBucketLifecycleConfigurationRequest');
      expect(bundled.length).toBeLessThan(unshaken.length - 40 * KIB);
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('loads node:http with require, so a cold start loads no undici: a real handler bundle, and a probe that sends through node:http', async () => {
    // Prepare: a probe that sends one request through node:http, and the Create Processing handler (the Mapflow client, S3, DynamoDB),
    // each bundled as it ships and without the require plugin
    const dir = await mkdtemp(path.join(testTmp(), 'bundle-http-'));
    const server = createServer((_req, res) => res.end('pong'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const probe =
      "import { request } from 'node:http';\n" +
      'export const send = (url) => new Promise((resolve, reject) => request(url, (res) => { let body = ""; res.on("data", (c) => (body += c)); res.on("end", () => resolve(body)); }).on("error", reject).end());\n';
    const shipped = lambdaEsbuildOptions();
    const withoutRequire = { ...shipped, plugins: shipped.plugins.filter((plugin) => plugin.name !== nodeHttpThroughRequire().name) };
    const bundle = async (options: typeof shipped, name: string, input: { stdin?: { contents: string; resolveDir: string; loader: 'js' }; entryPoints?: string[] }) => {
      const outfile = path.join(dir, name, 'index.mjs');
      const result = await build({ ...options, ...input, outfile, logLevel: 'silent' });
      expect(result.errors).toEqual([]);
      return outfile;
    };
    const handler = { entryPoints: [path.join(ROOT, 'functions/handlers/create-processing.ts')] };
    const files = {
      probe: await bundle(shipped, 'probe', { stdin: { contents: probe, resolveDir: ROOT, loader: 'js' } }),
      probeImporting: await bundle(withoutRequire, 'probe-importing', { stdin: { contents: probe, resolveDir: ROOT, loader: 'js' } }),
      handler: await bundle(shipped, 'handler', handler),
      handlerImporting: await bundle(withoutRequire, 'handler-importing', handler),
    };
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    // In a fresh worker, as a thread environment starts: import the bundle (and send, for the probe), then say whether undici loaded.
    const inWorker = (file: string, send: boolean) =>
      new Promise<{ answer: string | null; undici: boolean }>((resolve, reject) => {
        const worker = new Worker(
          `const { parentPort, workerData } = require('node:worker_threads');
          import(workerData.url).then(async (mod) => {
            const answer = workerData.send ? await mod.send(workerData.target) : null;
            parentPort.postMessage({ answer, undici: process.moduleLoadList.some((name) => name.includes('undici')) });
          }, (error) => parentPort.postMessage({ error: String(error) }));`,
          { eval: true, workerData: { url: pathToFileURL(file).href, send, target: url }, env: { AWS_REGION: 'eu-central-1' } },
        );
        worker.once('message', (message: { answer: string | null; undici: boolean; error?: string }) => {
          void worker.terminate();
          if (message.error) reject(new Error(message.error));
          else resolve(message);
        });
        worker.once('error', reject);
      });

    try {
      // Act
      const probeShipped = await inWorker(files.probe, true);
      const probeImporting = await inWorker(files.probeImporting, true);
      const handlerShipped = await inWorker(files.handler, false);
      const handlerImporting = await inWorker(files.handlerImporting, false);

      // Assess: both probes send; only the bundles that import node:http load undici
      expect(probeShipped).toEqual({ answer: 'pong', undici: false });
      expect(probeImporting).toEqual({ answer: 'pong', undici: true });
      expect(handlerShipped.undici).toBe(false);
      expect(handlerImporting.undici).toBe(true);
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it('builds and uses a DynamoDB client with the Map-based endpoint cache in a real bundle', async () => {
    // Prepare: a bundle that sends one GetItem to a server on 127.0.0.1 answering like DynamoDB, and uses the endpoint cache
    const dir = await mkdtemp(path.join(testTmp(), 'bundle-ddb-'));
    const targets: (string | undefined)[] = [];
    const server = createServer((req, res) => {
      targets.push(req.headers['x-amz-target'] as string | undefined);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify({ Item: { jobId: { S: 'j-1' } } })));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const contents =
      "import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';\n" +
      "import { EndpointCache } from '@aws-sdk/endpoint-cache';\n" +
      'const ddb = new DynamoDBClient({ region: "eu-central-1", endpoint: process.env.PROBE_ENDPOINT, maxAttempts: 1 });\n' +
      'const { Item } = await ddb.send(new GetItemCommand({ TableName: "ledger", Key: { jobId: { S: "j-1" } } }));\n' +
      'const cache = new EndpointCache(2);\n' +
      'cache.set("a", [{ Address: "a.example", CachePeriodInMinutes: 1 }]); cache.set("b", [{ Address: "b.example", CachePeriodInMinutes: 1 }]);\n' +
      'cache.getEndpoint("a"); cache.set("c", [{ Address: "c.example", CachePeriodInMinutes: 1 }]);\n' +
      'console.log(JSON.stringify({ item: Item, a: cache.getEndpoint("a"), b: cache.getEndpoint("b") ?? null, c: cache.getEndpoint("c") }));\n';
    try {
      const outfile = path.join(dir, 'probe.mjs');
      const built = await build({ ...lambdaEsbuildOptions(), stdin: { contents, resolveDir: ROOT, loader: 'ts' }, outfile, metafile: true, logLevel: 'silent' });
      // Act
      const { stdout } = await promisify(execFile)(process.execPath, [outfile], {
        env: { PATH: process.env.PATH ?? '', PROBE_ENDPOINT: endpoint, AWS_ACCESS_KEY_ID: 'AKIDBUNDLETEST', AWS_SECRET_ACCESS_KEY: 'secret' },
        timeout: 60_000,
      });
      // Assess: the call went through; the least recently used endpoint (b) was evicted
      expect(JSON.parse(stdout.trim())).toEqual({ item: { jobId: { S: 'j-1' } }, a: 'a.example', b: null, c: 'c.example' });
      expect(targets).toEqual(['DynamoDB_20120810.GetItem']);
      expect(Object.keys(built.metafile?.inputs ?? {}).some((input) => input.includes('node_modules/mnemonist/'))).toBe(false);
    } finally {
      server.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

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
