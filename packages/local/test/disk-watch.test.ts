/**
 * The disk watch (disk-watch.ts): a full disk under the state folder is said once, with what to do, and its
 * end once, whatever the number of looks in between.
 */
import { describe, expect, it } from 'vitest';
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
});
