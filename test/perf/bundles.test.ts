/**
 * Lean Lambda bundles: each handler bundles only what it calls. Bundled with
 * esbuild as the CDK does (bench/bundles.ts), then checked:
 *   - the providers a handler imports (functions/runtime/with-*.ts) match what
 *     its role may do (lib/permissions.ts), so a lean handler never lacks a
 *     client at run time and never carries one it may not use;
 *   - no handler that does not call Mapflow carries undici or the Mapflow client,
 *     none without S3 rights carries the S3 client;
 *   - sizes: every handler without Mapflow and S3 <= 440 KiB (was 1.15 MiB),
 *     with S3 <= 640 KiB, Mapflow without S3 <= 1 MiB.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { HANDLER_NAMES } from '../../functions/handlers/catalog.ts';
import { FUNCTION_CAPABILITIES } from '../../lib/permissions.ts';
import { measureBundles, type BundleFigure } from '../../bench/bundles.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const KIB = 1024;
const S3_CAPABILITIES = ['inbox:read', 'inbox:list', 'inbox:tag', 'work:read', 'work:write', 'results:write', 'failed:write'];

const needs = (name: string) => {
  const caps = FUNCTION_CAPABILITIES[name as keyof typeof FUNCTION_CAPABILITIES] as readonly string[];
  return {
    mapflow: caps.includes('mapflow:token'),
    s3: caps.some((c) => S3_CAPABILITIES.includes(c)),
    sfn: caps.some((c) => c.startsWith('workflow:')),
  };
};

describe('lean Lambda bundles', () => {
  let figures: BundleFigure[];
  const inputs = new Map<string, string[]>();

  beforeAll(async () => {
    figures = await measureBundles({ importTimes: false });
    for (const f of figures) inputs.set(f.name, f.inputs);
  }, 600_000);

  it('imports exactly the client providers its role allows', async () => {
    for (const name of HANDLER_NAMES) {
      // Prepare
      const source = await readFile(path.join(ROOT, 'functions/handlers', `${name}.ts`), 'utf8');
      const imports = (provider: string) => source.includes(`'../runtime/${provider}.ts'`);
      // Assess
      expect({ name, mapflow: imports('with-mapflow'), s3: imports('with-s3'), sfn: imports('with-sfn') }).toEqual({ name, ...needs(name) });
    }
  });

  it('bundles no HTTP client, Mapflow client or S3 client where they are not called', () => {
    expect(inputs.size).toBe(HANDLER_NAMES.length);
    for (const name of HANDLER_NAMES) {
      const bundled = inputs.get(name) ?? [];
      const has = (fragment: string) => bundled.some((input) => input.includes(fragment));
      expect({ name, undici: has('node_modules/undici/'), mapflowClient: has('functions/mapflow/client.ts') }).toEqual({
        name,
        undici: needs(name).mapflow,
        mapflowClient: needs(name).mapflow,
      });
      expect({ name, s3: has('@aws-sdk/client-s3/') }).toEqual({ name, s3: needs(name).s3 });
    }
  });

  it('keeps the bundles within their budgets', () => {
    expect(figures).toHaveLength(HANDLER_NAMES.length);
    for (const f of figures) {
      const need = needs(f.name);
      const budget = need.mapflow ? (need.s3 ? undefined : 1024 * KIB) : need.s3 ? 640 * KIB : 440 * KIB;
      if (budget === undefined) continue; // Mapflow + S3: see docs/capacity.md, "Bundles" (undici alone is 525 KiB)
      expect({ name: f.name, withinBudget: f.bytes <= budget, kib: Math.round(f.bytes / KIB) }).toMatchObject({ name: f.name, withinBudget: true });
    }
  });
});
