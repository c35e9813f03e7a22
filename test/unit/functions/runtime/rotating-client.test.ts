import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MapflowAuthError, MapflowClient } from '../../../../functions/mapflow/index.ts';
import { tokenRotatingClient } from '../../../../functions/runtime/rotating-client.ts';
import { startSimulator, type RunningSimulator } from '../../../../packages/simulator/src/index.ts';

describe('tokenRotatingClient', () => {
  let sim: RunningSimulator;
  // Mapflow already knows the new token; the running job still holds the old one.
  const clientWith = (token: string) => new MapflowClient({ baseUrl: sim.url, token, authScheme: 'bearer', retry: { maxAttempts: 1 } });

  beforeAll(async () => {
    sim = await startSimulator({ token: 'rotated-token', email: 'ops@example.com' });
  });
  afterAll(async () => {
    await sim.close();
  });

  it('re-reads the secret on a 401 and repeats the call with the new token', async () => {
    // Prepare
    const stale = clientWith('old-token');
    const fresh = clientWith('rotated-token');
    const source = vi.fn(async (options?: { refresh?: boolean }) => (options?.refresh ? fresh : stale));
    const client = tokenRotatingClient(stale, source);

    // Act
    const status = await client.getUserStatus();

    // Assess
    expect(status.email).toBe('ops@example.com');
    expect(source).toHaveBeenCalledTimes(1);
    expect(source).toHaveBeenCalledWith({ refresh: true });
  });

  it('makes a create once: the 401 was a refusal, the repeat the only one to take effect', async () => {
    // Prepare
    const fresh = clientWith('rotated-token');
    const before = (await fresh.listProjects()).length;
    const client = tokenRotatingClient(clientWith('old-token'), async () => fresh);

    // Act
    await client.createProject({ name: 'after rotation' });

    // Assess
    expect((await fresh.listProjects()).filter((p) => p.name === 'after rotation')).toHaveLength(1);
    expect((await fresh.listProjects()).length).toBe(before + 1);
  });

  it('lets the 401 through when the secret still holds the refused token', async () => {
    // Prepare
    const stale = clientWith('old-token');
    const client = tokenRotatingClient(stale, async () => stale);

    // Act / Assess
    await expect(client.getUserStatus()).rejects.toBeInstanceOf(MapflowAuthError);
  });
});
