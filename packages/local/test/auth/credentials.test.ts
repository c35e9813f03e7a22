/**
 * The credentials the bridge issues: the user's kept in the state folder
 * with mode 0600 (the same ones after a restart), roles' in memory.
 */
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CREDENTIALS_FILE, CredentialStore, CredentialsFileError, readCredentialsFile } from '../../src/auth/credentials.ts';
import { testTmp } from '../../../../test/support/temp.ts';

describe('CredentialStore', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(testTmp(), 'mfb-credentials-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('issues the user credentials once per state folder, in a file only its owner can read', async () => {
    // Prepare
    const stateDir = path.join(dir, 'state');
    // Act
    const first = await CredentialStore.open(stateDir);
    const second = await CredentialStore.open(stateDir);
    const mode = (await stat(path.join(stateDir, CREDENTIALS_FILE))).mode & 0o777;
    // Assess
    expect(mode).toBe(0o600);
    expect(second.user.accessKeyId).toBe(first.user.accessKeyId);
    expect(second.user.secretAccessKey).toBe(first.user.secretAccessKey);
    expect(await readCredentialsFile(stateDir)).toEqual({ accessKeyId: first.user.accessKeyId, secretAccessKey: first.user.secretAccessKey });
    expect(first.user.accessKeyId).toMatch(/^AKIA[A-Z2-7]{16}$/);
  });

  it('makes a credentials file readable by others private again', async () => {
    // Prepare
    const stateDir = path.join(dir, 'loose');
    await CredentialStore.open(stateDir);
    await chmod(path.join(stateDir, CREDENTIALS_FILE), 0o644);
    // Act
    await readCredentialsFile(stateDir);
    // Assess
    expect((await stat(path.join(stateDir, CREDENTIALS_FILE))).mode & 0o777).toBe(0o600);
  });

  it.each([
    ['truncated mid-write', (text: string) => text.slice(0, 20)],
    ['without its keys', () => '{"accessKeyId": 1}'],
  ])('a damaged file (%s) is set aside and replaced, and the bridge says so', async (_, damage) => {
    // Prepare
    const stateDir = path.join(dir, `damaged-${_.replace(/\W+/g, '-')}`);
    const first = await CredentialStore.open(stateDir);
    const file = path.join(stateDir, CREDENTIALS_FILE);
    const damaged = damage(await readFile(file, 'utf8'));
    await writeFile(file, damaged);
    const said: string[] = [];
    // Act
    const reopened = await CredentialStore.open(stateDir, (message) => said.push(message));
    // Assess: new keys in a whole file, the damaged one kept aside, one line naming both
    const fresh = await readCredentialsFile(stateDir);
    expect(fresh?.accessKeyId).toBe(reopened.user.accessKeyId);
    expect(reopened.user.accessKeyId).not.toBe(first.user.accessKeyId);
    const aside = (await readdir(stateDir)).filter((name) => name.startsWith(`${CREDENTIALS_FILE}.damaged-`));
    expect(aside).toHaveLength(1);
    expect(await readFile(path.join(stateDir, aside[0]!), 'utf8')).toBe(damaged);
    expect(said).toHaveLength(1);
    expect(said[0]).toContain(aside[0]);
    expect(said[0]).toContain('new local credentials');
  });

  it('a damaged file still fails a reader that does not repair (jobs list, the CLI): it says what to do', async () => {
    // Prepare
    const stateDir = path.join(dir, 'damaged-reader');
    await CredentialStore.open(stateDir);
    const file = path.join(stateDir, CREDENTIALS_FILE);
    await writeFile(file, '{"accessKeyId": 1}');
    // Act
    const reading = readCredentialsFile(stateDir);
    // Assess
    await expect(reading).rejects.toBeInstanceOf(CredentialsFileError);
    await expect(reading).rejects.toThrow(/remove it/);
    expect(await readFile(file, 'utf8')).toBe('{"accessKeyId": 1}');
  });

  it('issues role credentials in memory only, each its own principal', async () => {
    // Prepare
    const stateDir = path.join(dir, 'roles');
    const store = await CredentialStore.open(stateDir);
    // Act
    const a = store.addPrincipal('dispatch', 'arn:aws:iam::000000000000:role/path/DispatchRole', [{ Statement: [] }]);
    const b = store.addPrincipal('finish-job', 'arn:aws:iam::000000000000:role/FinishRole', [{ Statement: [] }]);
    const reopened = await CredentialStore.open(stateDir);
    // Assess
    expect(store.principal(a.accessKeyId)?.arn).toBe('arn:aws:sts::000000000000:assumed-role/DispatchRole/dispatch');
    expect(store.principal(b.accessKeyId)?.arn).toBe('arn:aws:sts::000000000000:assumed-role/FinishRole/finish-job');
    expect(reopened.principal(a.accessKeyId)).toBeUndefined();
    expect(await readFile(path.join(stateDir, CREDENTIALS_FILE), 'utf8')).not.toContain(a.accessKeyId);
  });
});
