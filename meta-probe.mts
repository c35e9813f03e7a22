import { build } from 'esbuild';
import { lambdaEsbuildOptions } from './lib/bundling.ts';
const name = process.argv[2] ?? 'fail-job';
const opts = lambdaEsbuildOptions({ externalAwsSdk: false } as never) as Record<string, unknown>;
const r = await build({ ...opts, entryPoints: [`./functions/handlers/${name}.ts`], bundle: true, write: false, metafile: true, outfile: '/tmp/w/out.mjs' } as never);
const out = Object.values(r.metafile!.outputs)[0]!;
const byPkg = new Map<string, number>();
for (const [file, v] of Object.entries(out.inputs)) {
  const m = file.match(/node_modules\/((?:@[^/]+\/)?[^/]+)/);
  const key = m ? m[1]! : file.split('/').slice(0, 2).join('/');
  byPkg.set(key, (byPkg.get(key) ?? 0) + v.bytesInOutput);
}
console.log('total', Math.round(out.bytes / 1024), 'KiB');
for (const [k, v] of [...byPkg].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(String(Math.round(v / 1024)).padStart(5), k);
const files = Object.entries(out.inputs).sort((a, b) => b[1].bytesInOutput - a[1].bytesInOutput);
for (const [f, v] of files.filter(([f]) => f.includes(process.argv[3] ?? '@smithy/core')).slice(0, 30)) console.log(String(Math.round(v.bytesInOutput / 1024 * 10) / 10).padStart(6), f.replace(/.*node_modules\//, ''));
