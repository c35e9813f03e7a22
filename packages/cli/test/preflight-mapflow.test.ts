/**
 * The start-up check of a given Mapflow (`--mapflow-url`): a flaky service is
 * asked again with backoff and does not stop the bridge; one that answers only
 * faults gives a degraded start that says what it answered; a refused token
 * and a wrong URL still refuse at once.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkMapflow } from '../src/preflight.ts';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A Mapflow that answers GET /user/status with the scripted statuses in turn (the last one for ever), and counts. */
async function scriptedMapflow(statuses: number[]): Promise<{ url: string; requests: () => number }> {
  let count = 0;
  const server = createServer((request, response) => {
    const status = statuses[Math.min(count, statuses.length - 1)] as number;
    count++;
    if (status === 200) {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ email: 'local@example.invalid', remainingCredits: 500, remainingArea: 1000, areaLimit: 1000, memoryLimit: 1e9, memoryUsed: 0 }));
      return;
    }
    response.writeHead(status, { 'content-type': 'application/json', ...(status === 429 ? { 'retry-after': '0' } : {}) });
    response.end(JSON.stringify({ code: 'FAULT', message: `scripted ${status} for ${request.url}` }));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/rest`, requests: () => count };
}

/** No real waiting: the delays asked for are recorded, the clock moves by them. */
function virtualTime() {
  let clock = 0;
  const delays: number[] = [];
  return {
    delays,
    options: {
      now: () => clock,
      sleep: async (ms: number) => {
        delays.push(ms);
        clock += ms;
      },
      random: () => 0.5,
    },
  };
}

describe('start-up check of a given Mapflow', () => {
  it('starts normally when a 500, a 429 and a 503 come before the answer (the old check gave up after two)', async () => {
    // Prepare
    const mapflow = await scriptedMapflow([500, 429, 503, 200]);
    const time = virtualTime();
    const lines: string[] = [];

    // Act
    const check = await checkMapflow({ url: mapflow.url, token: 't0ken' }, { ...time.options, log: (line) => lines.push(line) });

    // Assess
    expect(check).toEqual({ usable: true, attempts: 4 });
    expect(mapflow.requests()).toBe(4);
    // Backoff with jitter (half of 500, 1000 ms), and the 429's Retry-After: 0 honoured.
    expect(time.delays).toEqual([250, 0, 1000]);
    expect(lines.join('\n')).toContain('1 x HTTP 500, 1 x HTTP 429, 1 x HTTP 503');
  });

  it('starts degraded, saying what it answered, when Mapflow answers only 500 for the whole time', async () => {
    // Prepare
    const mapflow = await scriptedMapflow([500]);
    const time = virtualTime();
    const lines: string[] = [];

    // Act
    const check = await checkMapflow({ url: mapflow.url, token: 't0ken' }, { ...time.options, budgetMs: 20_000, log: (line) => lines.push(line) });

    // Assess
    expect(check.usable).toBe(true);
    expect(check.degraded).toMatch(/answered only with faults .*\d+ x HTTP 500/);
    expect(check.attempts).toBe(mapflow.requests());
    expect(check.attempts).toBeGreaterThan(3);
    expect(time.delays.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(20_000);
    expect(lines.join('\n')).not.toContain('does not answer');
    expect(lines.join('\n')).not.toContain('t0ken');
  });

  it('refuses at once a refused token and a wrong path (4xx), and after the time a Mapflow that never answers', async () => {
    // Prepare
    const auth = await scriptedMapflow([401]);
    const missing = await scriptedMapflow([404]);
    const closed = await scriptedMapflow([200]);
    await new Promise((resolve) => servers.pop()!.close(resolve)); // its port now refuses connections
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);

    // Act
    const refused = await checkMapflow({ url: auth.url, token: 't' }, { ...virtualTime().options, log });
    const wrong = await checkMapflow({ url: missing.url, token: 't' }, { ...virtualTime().options, log });
    const silent = await checkMapflow({ url: closed.url, token: 't' }, { ...virtualTime().options, budgetMs: 5_000, log });

    // Assess
    expect(refused).toEqual({ usable: false, attempts: 1 });
    expect(wrong).toEqual({ usable: false, attempts: 1 });
    expect(silent.usable).toBe(false);
    expect(silent.attempts).toBeGreaterThan(1);
    expect(lines[0]).toContain('refused the token (HTTP 401)');
    expect(lines[1]).toContain('answered HTTP 404');
    expect(lines[2]).toMatch(/does not answer \(\d+ attempts in 5 s: \d+ x no answer \(ECONNREFUSED\)/);
  });
});
