/**
 * The bridge's state files on a full disk (issue 39): the events file (services.ts, wholeAppender) and the
 * executions' names (execution-names.ts) lose nothing to ENOSPC. The file is first a link to /dev/full, whose
 * every write fails with ENOSPC, as on a full disk; "space is back" is the link replaced by a file.
 */
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { wholeAppender } from '../../src/assembly/services.ts';
import { ExecutionNames } from '../../src/engine/execution-names.ts';
import { testTmp } from '../../../../test/support/temp.ts';

describe.skipIf(process.platform !== 'linux')('the state files on a full disk', () => {
  it('appends an event whole once space is back, after earlier ones, in order', async () => {
    // Prepare: the events file on a "full disk"; a disk watch that says full until the test frees it
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-events-full-'));
    const file = path.join(dir, 'events.jsonl');
    await symlink('/dev/full', file);
    let freeNow!: (free: boolean) => void;
    let heldOnce!: () => void;
    const held = new Promise<void>((resolve) => (heldOnce = resolve));
    const disk = {
      full: false,
      check: async () => true,
      whenFree: () =>
        new Promise<boolean>((resolve) => {
          freeNow = resolve;
          heldOnce();
        }),
    };
    const append = wholeAppender(file, disk);
    try {
      // Act: two appends; the first meets the full disk and waits; space comes back
      const first = append('{"n":1}\n');
      const second = append('{"n":2}\n');
      await held;
      await rm(file);
      freeNow(true);
      await Promise.all([first, second]);
      // Assess: both lines, whole, in order
      expect(await readFile(file, 'utf8')).toBe('{"n":1}\n{"n":2}\n');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('fails the append when the hold gives up', async () => {
    // Prepare
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-events-full-'));
    const file = path.join(dir, 'events.jsonl');
    await symlink('/dev/full', file);
    const append = wholeAppender(file, { full: false, check: async () => true, whenFree: async () => false });
    try {
      // Act
      const error = (await append('{"n":1}\n').catch((e: unknown) => e)) as NodeJS.ErrnoException;
      // Assess
      expect(error.code).toBe('ENOSPC');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps every execution name a full disk refused, and writes them all once space is back', async () => {
    // Prepare: the names' file on a "full disk"
    const dir = await mkdtemp(path.join(testTmp(), 'mfb-names-full-'));
    const file = path.join(dir, 'execution-names.ndjson');
    let freeNow!: (free: boolean) => void;
    let askedOnce!: () => void;
    const asked = new Promise<void>((resolve) => (askedOnce = resolve));
    let asks = 0;
    const names = new ExecutionNames({
      file,
      whenFree: () =>
        new Promise<boolean>((resolve) => {
          asks++;
          freeNow = resolve;
          askedOnce();
        }),
    });
    // Linked after the names opened their file: /dev/full reads as endless zeros.
    await symlink('/dev/full', file);
    try {
      // Act: two executions start on the full disk; space comes back
      names.started('job-a', '2026-11-28T10:00:00.000Z', { a: 1 });
      names.started('job-b', '2026-11-28T10:00:01.000Z', { b: 2 });
      await asked;
      freeNow(true);
      // The rewrite follows the word that space is back, in the same turn of promises.
      await new Promise((resolve) => setImmediate(resolve));
      const reopened = new ExecutionNames({ file });
      // Assess: asked once, and both names in the file
      expect(asks).toBe(1);
      expect(reopened.interrupted().sort()).toEqual(['job-a', 'job-b']);
      expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
