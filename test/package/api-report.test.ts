/**
 * The public API of the package's main entry (lib/index.ts) is the one
 * api/mapflow-bridge.api.md records: `npm run api:check` (the declarations of
 * tsconfig.api.json, then API Extractor with api-extractor.json) fails when a
 * public signature changed, or names a type lib/index.ts does not export
 * (ae-forgotten-export is an error there). An intended change is accepted with
 * `npm run api:update`, and the report's diff is reviewed with the code.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** What to do about a failed check, from API Extractor's output. */
function advice(output: string): string {
  const forgotten = [...output.matchAll(/ae-forgotten-export\) The symbol "([^"]+)"/g)].map((m) => m[1]);
  if (forgotten.length > 0) return `a public signature names ${forgotten.join(', ')}, which lib/index.ts does not export: export each from there, then run \`npm run api:update\``;
  return 'the public API changed: if that is intended, run `npm run api:update` and commit api/mapflow-bridge.api.md with the change';
}

describe('API report', () => {
  it('api/mapflow-bridge.api.md matches the public API of lib/index.ts', async () => {
    // Act
    const result = await run(NPM, ['run', '--silent', 'api:check'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }).then(
      ({ stdout, stderr }) => ({ ok: true, output: stdout + stderr }),
      (err: { stdout?: string; stderr?: string; message: string }) => ({ ok: false, output: `${err.stdout ?? ''}${err.stderr ?? err.message}` }),
    );

    // Assess
    // eslint-disable-next-line no-control-regex -- API Extractor colours its output
    const output = result.output.replace(/\x1b\[[0-9;]*m/g, '');
    expect(result.ok, `npm run api:check failed: ${advice(output)}.\n\n${output}`).toBe(true);
  });
});
