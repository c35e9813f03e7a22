/**
 * The local bridge's start: DynamoDB Local (a JVM) and s3rver (a child
 * process) are spawned first and start while this process loads the rest of
 * the bridge; then the simulator and the cloud assembly (the functions' bundles
 * and the definition) load side by side, not one after the other; the ledger table is created once DynamoDB Local
 * answers; the timeline (LocalBridge.startup) accounts for every phase.
 * No timing asserts: only the order of phases.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalBridge, type LocalBridge, type StartupPhase } from '../../packages/local/src/bridge.ts';

let bridge: LocalBridge | undefined;
afterAll(async () => {
  await bridge?.close();
}, 120_000);

describe('local bridge start-up', () => {
  it('starts the services and loads the cloud assembly side by side and records each phase', async () => {
    // Prepare
    const before = performance.now();

    // Act
    bridge = await startLocalBridge({ dropFolder: false, reconcileIntervalMs: 0, log: () => undefined });

    // Assess
    const { startup } = bridge;
    const phase = (name: string | RegExp): StartupPhase => {
      const found = startup.phases.find((p) => (typeof name === 'string' ? p.name === name : name.test(p.name)));
      if (!found) throw new Error(`no start-up phase ${String(name)} in ${startup.phases.map((p) => p.name).join(', ')}`);
      return found;
    };
    // DynamoDB Local's JVM (the slowest service) and s3rver are spawned first, then this process
    // loads the rest of the bridge while they start.
    const modules = phase('bridge modules loaded');
    expect(phase('DynamoDB Local').startMs).toBeLessThanOrEqual(modules.startMs);
    expect(phase('s3rver').startMs).toBeLessThanOrEqual(modules.startMs);
    expect(modules.startMs).toBeLessThan(phase('DynamoDB Local').endMs);
    // Then the simulator and the cloud assembly, side by side: each started before any ended.
    const parallel = [phase('the Mapflow simulator'), phase(/^cloud assembly \(cache (hit|miss|off)\)$/)];
    expect(Math.max(...parallel.map((p) => p.startMs))).toBeLessThan(Math.min(...parallel.map((p) => p.endMs)));
    for (const p of parallel) expect(p.startMs).toBeGreaterThanOrEqual(modules.endMs);
    expect(phase('ledger table').startMs).toBeGreaterThanOrEqual(phase('DynamoDB Local').endMs);
    expect(startup.entryMs).toBeGreaterThanOrEqual(before);
    for (const p of startup.phases) {
      expect(p.startMs).toBeGreaterThanOrEqual(startup.entryMs);
      expect(p.endMs).toBeGreaterThanOrEqual(p.startMs);
      expect(p.endMs).toBeLessThanOrEqual(startup.readyMs);
    }
    expect(['hit', 'miss', 'off']).toContain(startup.definitionCache);
    expect(phase('assembly runtime').endMs).toBeLessThanOrEqual(startup.readyMs);
  }, 300_000);
});
