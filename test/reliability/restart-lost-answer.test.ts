/**
 * A restart whose answer is lost after Mapflow acted on it. The simulator
 * only loses answers of creates, so a small proxy in front of it forwards the
 * first `POST /processings/{id}/restart`, lets Mapflow act on it, and then
 * drops the connection instead of answering. The client retries the restart
 * (it is documented as idempotent); the job must still end as the restart
 * makes it: SUCCEEDED, one processing, two attempts.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditMapflow, squareAoiText } from '../../packages/bench/fault-suite.ts';
import { startLocalBridge, type LocalBridge } from '../../packages/local/src/bridge.ts';
import { startSimulator, type RunningSimulator } from '../../packages/simulator/src/index.ts';
import { tempFile } from '../e2e/helpers.ts';
import { processingsOf, RELIABILITY_BRIDGE_OPTIONS } from './support.ts';
import { testTmp } from '../support/temp.ts';
import { sharedLedgerOptions } from '../support/shared-dynamodb.ts';

const TOKEN = 'restart-lost-token-91ac';
const EMAIL = 'restart@mapflow-bridge.invalid';

/** Forwards everything to `target`; the answer of the first restart is dropped after the upstream has answered. */
function losingProxy(target: URL): { server: Server; dropped: () => number } {
  let dropped = 0;
  const server = createServer((req, res) => {
    const upstream = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        if (req.method === 'POST' && /\/restart$/.test(req.url ?? '') && dropped === 0) {
          dropped++;
          answer.resume();
          answer.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  });
  return { server, dropped: () => dropped };
}

describe('a restart whose answer is lost', { timeout: 180_000 }, () => {
  let simulator: RunningSimulator;
  let simulatorDir: string;
  let proxy: ReturnType<typeof losingProxy>;
  let bridge: LocalBridge;

  beforeAll(async () => {
    simulatorDir = await mkdtemp(path.join(testTmp(), 'mfb-restart-sim-'));
    simulator = await startSimulator({ token: TOKEN, email: EMAIL, processingSeconds: 2, seed: 3, dataDir: simulatorDir });
    proxy = losingProxy(new URL(simulator.url));
    await new Promise<void>((resolve) => proxy.server.listen(0, '127.0.0.1', resolve));
    const port = (proxy.server.address() as AddressInfo).port;
    bridge = await startLocalBridge({
      mapflow: { url: `http://127.0.0.1:${port}/rest`, token: TOKEN, email: EMAIL },
      ...RELIABILITY_BRIDGE_OPTIONS,
      ...(await sharedLedgerOptions('restart-lost')),
    });
  });
  afterAll(async () => {
    await bridge?.close();
    proxy?.server.closeAllConnections();
    await new Promise((resolve) => proxy?.server.close(resolve));
    await simulator?.close();
    await rm(simulatorDir, { recursive: true, force: true });
  });

  it('still ends SUCCEEDED after the restart, with one processing and two attempts', async () => {
    // Prepare
    const body = JSON.stringify({ ...JSON.parse(squareAoiText('restart-lost', 12.5, 41.9)), mapflow: { meta: { simulate: 'fail-once:dataloader.TileNotReadable' } } });
    // Act
    const { jobId } = await bridge.putInbox(await tempFile('restart-lost.geojson', body), 'restart-lost.geojson');
    const row = await bridge.waitForJob(jobId, { timeoutMs: 40_000 });
    const audit = await auditMapflow(simulator.url, TOKEN, EMAIL, simulatorDir);
    // Assess
    expect(proxy.dropped()).toBe(1);
    expect(processingsOf(audit, jobId)).toHaveLength(1);
    expect({ status: row?.status, code: row?.error?.code ?? row?.parts?.[0]?.error?.code }).toEqual({ status: 'SUCCEEDED', code: undefined });
    expect(row?.parts?.[0]?.attempts).toBe(2);
  });
});
