/**
 * The simulator stands alone: its package's one command (`npm start -w
 * @mapflow-bridge/simulator`, as its README says) serves the whole API with
 * the live service's shapes, and stops on a signal.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

describe('npm start -w @mapflow-bridge/simulator', () => {
  it('serves the API with real shapes on the README\'s token, until stopped', async () => {
    // Prepare: any free port instead of the default 8090 (a later --port wins)
    const child = spawn(NPM, ['start', '--silent', '-w', '@mapflow-bridge/simulator', '--', '--port', '0'], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    const exited = once(child, 'exit');
    try {
      // Act
      const [url] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
      const status = await fetch(`${url}/user/status`, { headers: { authorization: 'Bearer local-token' } });
      const refused = await fetch(`${url}/user/status`, { headers: { authorization: 'Bearer wrong' } });

      // Assess: the live service's shapes (billingType is only in them), the token of the README
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/rest$/);
      expect(status.status).toBe(200);
      expect(await status.json()).toHaveProperty('billingType');
      expect(refused.status).toBe(401);
    } finally {
      process.kill(-child.pid!, 'SIGTERM');
    }
    await exited;
  });
});
