/**
 * Where a test makes its temporary folders: a folder of its test file's own
 * (test/support/setup.ts creates it and removes it when the file ends), so a
 * run leaves nothing in the machine's temporary directory. Outside vitest,
 * the temporary directory itself.
 */
import { tmpdir } from 'node:os';

export function testTmp(): string {
  return process.env.MFB_TEST_TMP ?? tmpdir();
}
