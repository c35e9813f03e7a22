/**
 * Fault injection: seeded 5xx / 429 / connection resets that repeat with the
 * same seed, lost responses of creates that did take effect, added latency.
 */
import { describe, expect, it } from 'vitest';
import { BEARER, call, start, v2Body } from './helpers.ts';

/** One GET; the status, or 'reset' when the connection dies without an answer. */
async function outcome(url: string): Promise<string> {
  try {
    const response = await fetch(`${url}/user/status`, { headers: { authorization: BEARER } });
    await response.arrayBuffer();
    return response.status === 429 ? `429 retry-after=${response.headers.get('retry-after')}` : String(response.status);
  } catch {
    return 'reset';
  }
}

async function outcomes(seed: number, count: number): Promise<string[]> {
  const sim = await start({ seed, faultRate: 0.5 });
  try {
    const seen: string[] = [];
    for (let i = 0; i < count; i++) seen.push(await outcome(sim.url));
    expect(sim.stats().faults).toBe(seen.filter((s) => s !== '200').length);
    return seen;
  } finally {
    await sim.close();
  }
}

describe('faultRate', () => {
  it('mixes 500, 502, 503, 429 with Retry-After: 1 and resets, the same for the same seed', async () => {
    // Act
    const first = await outcomes(42, 60);
    const again = await outcomes(42, 60);
    const other = await outcomes(43, 60);
    // Assess
    expect(first).toEqual(again);
    expect(first).not.toEqual(other);
    expect(new Set(first)).toEqual(new Set(['200', '500', '502', '503', '429 retry-after=1', 'reset']));
    const faults = first.filter((s) => s !== '200').length;
    expect(faults).toBeGreaterThan(15);
    expect(faults).toBeLessThan(45);
  });

  it('injects nothing at rate 0', async () => {
    // Prepare
    const sim = await start({ seed: 1 });
    try {
      // Act
      const seen = await Promise.all(Array.from({ length: 20 }, () => outcome(sim.url)));
      // Assess
      expect(new Set(seen)).toEqual(new Set(['200']));
      expect(sim.stats()).toMatchObject({ requests: 20, faults: 0 });
    } finally {
      await sim.close();
    }
  });
});

describe('dropAfterCommit', () => {
  it('loses the response of a create that took effect', async () => {
    // Prepare
    const sim = await start({ seed: 5, dropAfterCommit: 1 });
    try {
      // Act
      const lost = await call(sim, 'POST', '/processings/v2', v2Body({ name: 'lost answer' })).then(
        () => 'answered',
        () => 'lost',
      );
      const list = await call(sim, 'GET', '/processings/v2');
      const project = await call(sim, 'POST', '/projects', { name: 'p' }).then(() => 'answered', () => 'lost');
      const projects = await call(sim, 'GET', '/projects');
      // Assess
      expect(lost).toBe('lost');
      expect(list.json.map((p: { name: string }) => p.name)).toEqual(['lost answer']);
      expect(project).toBe('lost');
      expect(projects.json.map((p: { name: string }) => p.name)).toContain('p');
      expect(sim.stats()).toMatchObject({ droppedResponses: 2, processingsCreated: 1 });
    } finally {
      await sim.close();
    }
  });

  it('never drops reads, and a failed create is answered', async () => {
    // Prepare
    const sim = await start({ seed: 5, dropAfterCommit: 1 });
    try {
      // Act
      const read = await call(sim, 'GET', '/processings/v2');
      const refused = await call(sim, 'POST', '/processings/v2', v2Body({ wdName: 'no such model' }));
      // Assess
      expect(read.status).toBe(200);
      expect(refused.status).toBe(400);
      expect(sim.stats().droppedResponses).toBe(0);
    } finally {
      await sim.close();
    }
  });
});

describe('latencyMs', () => {
  it('delays every answer', async () => {
    // Prepare
    const sim = await start({ latencyMs: 150 });
    try {
      // Act
      const started = performance.now();
      await call(sim, 'GET', '/user/status');
      const elapsed = performance.now() - started;
      // Assess
      expect(elapsed).toBeGreaterThanOrEqual(140);
    } finally {
      await sim.close();
    }
  });
});
