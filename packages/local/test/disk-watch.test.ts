/**
 * The disk watch (disk-watch.ts): a full disk under the state folder is said once, with what to do, and its
 * end once, whatever the number of looks in between; while it is full, writes wait for space (whenFree),
 * counted time standing still, and fail once the hold gives up.
 */
import { describe, expect, it } from 'vitest';
import { standstillClock } from '../src/assembly/standstill.ts';
import { LOW_DISK_BYTES, RECOVERED_DISK_BYTES, watchDisk } from '../src/disk-watch.ts';

const MB = 1024 * 1024;

describe('the disk watch', () => {
  it('says once that the disk is full and what to do, and once that space is back', async () => {
    // Prepare: free space the test sets, looked at only when the test asks
    let free = 500 * MB;
    const lines: string[] = [];
    const watch = watchDisk('/state', (line) => lines.push(line), { intervalMs: 3_600_000, freeBytes: async () => free });
    try {
      // Act
      const states: boolean[] = [];
      for (const bytes of [500 * MB, 10 * MB, 5 * MB, LOW_DISK_BYTES + MB, 100 * MB, RECOVERED_DISK_BYTES, 10 * MB]) {
        free = bytes;
        states.push(await watch.check());
      }
      // Assess: full below 64 MB, free again only from 128 MB (no line for each look in between)
      expect(states).toEqual([false, true, true, true, true, false, true]);
      expect(lines).toHaveLength(3);
      expect(lines[0]).toMatch(/the disk holding \/state is full \(10 MB free\).*free some space on that disk/);
      expect(lines[1]).toBe('local bridge: the disk holding /state has 128 MB free again');
      expect(lines[2]).toMatch(/is full \(10 MB free\)/);
    } finally {
      watch.stop();
    }
  });

  it('stays quiet when the free space cannot be read', async () => {
    // Prepare
    const lines: string[] = [];
    const watch = watchDisk('/gone', (line) => lines.push(line), { intervalMs: 3_600_000, freeBytes: async () => Promise.reject(new Error('ENOENT')) });
    try {
      // Act
      const full = await watch.check();
      // Assess
      expect(full).toBe(false);
      expect(lines).toEqual([]);
    } finally {
      watch.stop();
    }
  });

  it('holds a write while the disk is full and lets it go once space is back, counted time standing still meanwhile', async () => {
    // Prepare: a full disk
    let free = 10 * MB;
    const lines: string[] = [];
    const watch = watchDisk('/state', (line) => lines.push(line), { intervalMs: 3_600_000, freeBytes: async () => free });
    try {
      await watch.check();
      const heldBefore = standstillClock.held;
      // Act
      const first = watch.whenFree('the local S3');
      const second = watch.whenFree('the dynamodb service');
      const heldMeanwhile = standstillClock.held;
      free = RECOVERED_DISK_BYTES;
      await watch.check();
      const results = await Promise.all([first, second]);
      const heldAfter = standstillClock.held;
      const afterwards = await watch.whenFree('the local S3');
      // Assess: one line for the hold, the end of it counted among what stood still
      expect(results).toEqual([true, true]);
      expect(afterwards).toBe(true);
      expect(heldAfter).toBeGreaterThan(heldBefore);
      expect(standstillClock.held).toBe(heldAfter);
      expect(heldMeanwhile).toBeGreaterThanOrEqual(heldBefore);
      expect(lines.filter((line) => line.includes('waits for space'))).toEqual([
        'local bridge: a write to the local S3 waits for space on the disk holding /state, as jobs in flight do: on AWS storage never runs out of disk (held for at most 10 min, then such writes fail)',
      ]);
      expect(lines.at(-1)).toBe('local bridge: the disk holding /state has 128 MB free again: 2 held write(s) go on');
    } finally {
      watch.stop();
    }
  });

  it('lets held writes fail once the disk stayed full past the hold, and new ones at once until space is back', async () => {
    // Prepare: a full disk, and a hold that gives up at once
    let free = 10 * MB;
    const lines: string[] = [];
    const watch = watchDisk('/state', (line) => lines.push(line), { intervalMs: 3_600_000, freeBytes: async () => free, holdLimitMs: 0 });
    try {
      await watch.check();
      // Act
      const held = await watch.whenFree('the local S3');
      const next = await watch.whenFree('the local S3');
      free = RECOVERED_DISK_BYTES;
      await watch.check();
      const afterSpace = await watch.whenFree('the local S3');
      // Assess
      expect([held, next, afterSpace]).toEqual([false, false, true]);
      expect(lines.filter((line) => line.includes('stayed full'))).toEqual(['local bridge: the disk holding /state stayed full for 0 min: 1 held write(s) fail now, and new ones at once until space is back']);
    } finally {
      watch.stop();
    }
  });

  it('lets held writes fail when the watch stops (the bridge closes)', async () => {
    // Prepare
    const watch = watchDisk('/state', () => undefined, { intervalMs: 3_600_000, freeBytes: async () => 10 * MB });
    await watch.check();
    const held = watch.whenFree('the events file');
    // Act
    watch.stop();
    // Assess
    expect(await held).toBe(false);
    expect(await watch.whenFree('the events file')).toBe(false);
  });
});
