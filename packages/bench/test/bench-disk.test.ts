/**
 * The data-path bench keeps every upload in its receiver: a long run used to
 * die after half an hour with the receiver's 413 (its storage limit). It now
 * sizes the receiver's limit to the run and refuses up front when the disk
 * cannot hold it.
 */
import { describe, expect, it, vi } from 'vitest';
import { benchDataPaths, dataPathDiskBytes } from '../index.ts';

describe('bench data paths: disk', () => {
  it('counts the synthetic file, its S3 copy and two uploads per run', () => {
    expect(dataPathDiskBytes(256, 80)).toBe(256 * 1024 * 1024 * 164);
  });

  it('refuses a run the disk cannot hold before starting anything, and says what to change', async () => {
    // Prepare
    const errors: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((message: string) => void errors.push(message));
    try {
      // Act: 1,000 runs of 1 TiB
      const code = await benchDataPaths(1024 * 1024, false, 1_000);
      // Assess
      expect(code).toBe(2);
      expect(errors.join('\n')).toMatch(/1000 upload runs of 1048576 MiB need about .* GiB under .*: use fewer --upload-runs, a smaller --size-mb, or TMPDIR on a larger disk/);
    } finally {
      spy.mockRestore();
    }
  });
});
