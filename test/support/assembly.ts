/**
 * Reads a synthesized cloud assembly as `cdk deploy` would upload it: each
 * bridge function of a template with the folder of its code asset.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

interface TemplateResource {
  Type: string;
  Properties?: { Handler?: string; Code?: { S3Key?: unknown }; Environment?: { Variables?: Record<string, unknown> } };
  Metadata?: Record<string, unknown>;
}

export interface AssemblyFunction {
  logicalId: string;
  /** BRIDGE_FUNCTION of the function's environment: the catalogue name it is meant to run. */
  bridgeFunction: string;
  /** Absolute folder of the function's code asset in the assembly. */
  assetDir: string;
}

/** Every function of the template that has BRIDGE_FUNCTION in its environment, with its asset folder. */
export async function bridgeFunctionsOf(assemblyDir: string, templateFile: string): Promise<AssemblyFunction[]> {
  const template = JSON.parse(await readFile(path.join(assemblyDir, templateFile), 'utf8')) as { Resources: Record<string, TemplateResource> };
  // An app run without the CDK CLI (`node app.ts`) has no aws:asset:path metadata: the assets
  // manifest names the folder `cdk deploy` uploads under each function's S3Key.
  const manifest = JSON.parse(await readFile(path.join(assemblyDir, templateFile.replace(/\.template\.json$/, '.assets.json')), 'utf8').catch(() => '{}')) as {
    files?: Record<string, { source?: { path?: string }; destinations?: Record<string, { objectKey?: string }> }>;
  };
  const byObjectKey = new Map<string, string>();
  for (const asset of Object.values(manifest.files ?? {})) {
    for (const destination of Object.values(asset.destinations ?? {})) {
      if (asset.source?.path && destination.objectKey) byObjectKey.set(destination.objectKey, asset.source.path);
    }
  }
  const functions: AssemblyFunction[] = [];
  for (const [logicalId, resource] of Object.entries(template.Resources)) {
    const name = resource.Properties?.Environment?.Variables?.BRIDGE_FUNCTION;
    if (resource.Type !== 'AWS::Lambda::Function' || typeof name !== 'string') continue;
    const objectKey = resource.Properties?.Code?.S3Key;
    const assetPath = resource.Metadata?.['aws:asset:path'] ?? (typeof objectKey === 'string' ? byObjectKey.get(objectKey) : undefined);
    if (typeof assetPath !== 'string') throw new Error(`${logicalId} (${name}) has no code asset (no aws:asset:path metadata, no file asset for its S3Key)`);
    functions.push({ logicalId, bridgeFunction: name, assetDir: path.resolve(assemblyDir, assetPath) });
  }
  return functions;
}

/** The catalogue name a bundle exports (BRIDGE_HANDLER of functions/handlers/<name>.ts), by importing its index.mjs. */
export async function handlerNameOfBundle(assetDir: string): Promise<unknown> {
  const module = (await import(pathToFileURL(path.join(assetDir, 'index.mjs')).href)) as { BRIDGE_HANDLER?: unknown; handler?: unknown };
  if (typeof module.handler !== 'function') throw new Error(`${assetDir}/index.mjs exports no handler function`);
  return module.BRIDGE_HANDLER;
}
