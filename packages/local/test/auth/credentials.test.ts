/**
 * The credentials the bridge issues: the user's kept in the state folder
 * with mode 0600 (the same ones after a restart), roles' in memory.
 */
import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
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

  it('says what to do with a damaged file', async () => {
    // Prepare
    const stateDir = path.join(dir, 'damaged');
    await CredentialStore.open(stateDir);
    const file = path.join(stateDir, CREDENTIALS_FILE);
    await import('node:fs/promises').then(({ writeFile }) => writeFile(file, '{"accessKeyId": 1}'));
    // Act
    const opening = CredentialStore.open(stateDir);
    // Assess
    await expect(opening).rejects.toBeInstanceOf(CredentialsFileError);
    await expect(opening).rejects.toThrow(/remove it/);
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
