/**
 * The simulator's state on a full disk: a save that meets ENOSPC keeps the change in memory, which goes on
 * answering, instead of failing the request; the next save writes it with the rest. `mapflow-bridge start`
 * keeps the embedded simulator's data in the bridge's state folder, whose disk may fill under jobs in flight
 * (issue 39). The state's temporary file is first a link to /dev/full, whose every write fails with ENOSPC.
 */
import { mkdtempSync, readFileSync, rmSync, symlinkSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { StateStore, type SimState } from '../src/store.ts';
import { testTmp } from '../../../test/support/temp.ts';

const dataDir = mkdtempSync(join(testTmp(), 'sim-full-disk-'));
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

const empty = (): SimState => ({ version: 1, userId: 'u', processedAreaSqM: 0, creditsUsed: 0, projects: [], processings: [], mosaics: [], images: [] });

describe.skipIf(process.platform !== 'linux')('the simulator on a full disk', () => {
  it('keeps a change a full disk refused, and writes it with the next save once space is back', () => {
    // Prepare: a store, then its disk "full"
    const store = StateStore.open(dataDir, empty);
    const temporary = join(dataDir, 'state.json.tmp');
    symlinkSync('/dev/full', temporary);
    // Act: a change saved on the full disk, then space back and another change
    store.state.creditsUsed = 5;
    store.save();
    const unsavedWhileFull = store.unsaved;
    const onDiskWhileFull = (JSON.parse(readFileSync(join(dataDir, 'state.json'), 'utf8')) as SimState).creditsUsed;
    unlinkSync(temporary);
    store.state.processedAreaSqM = 7;
    store.save();
    // Assess
    expect(unsavedWhileFull).toBe(true);
    expect(onDiskWhileFull).toBe(0);
    expect(store.unsaved).toBe(false);
    expect(JSON.parse(readFileSync(join(dataDir, 'state.json'), 'utf8'))).toMatchObject({ creditsUsed: 5, processedAreaSqM: 7 });
  });
});
