/**
 * Credentials the local bridge issues, one access key per principal.
 *
 * - The user's own principal (full access, like an account's administrator):
 *   kept in `<state folder>/credentials.json` with mode 0600 so that the CLI
 *   (`jobs`, `costs`, `doctor`, `console`) and the user's own S3 client can
 *   sign with it across restarts. Without a state folder (`local run`,
 *   tests), it lives in memory only.
 * - Role principals (`addPrincipal`): one per Lambda function or state
 *   machine role, with that role's policy documents from the template; in
 *   memory only, issued afresh at every start.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LOCAL_AWS } from './account.ts';

/** What an SDK client needs (AwsCredentialIdentity). */
export interface IssuedCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

/** An IAM policy document, as in a template (intrinsics resolved to plain ARNs). */
export interface PolicyDocument {
  Version?: string;
  Statement: unknown[] | Record<string, unknown>;
}

export interface Principal extends IssuedCredentials {
  /** The name the principal was issued for ('user', or a function's name). */
  readonly name: string;
  /** The ARN AWS names in an AccessDenied message: an IAM user, or an assumed role's session. */
  readonly arn: string;
  /** Identity policies; undefined for the user's own principal, which may do anything. */
  readonly policies?: readonly PolicyDocument[];
}

/** Thrown when the state folder's credentials file cannot be read or written. */
export class CredentialsFileError extends Error {
  /** The file was read but its content is damaged (not JSON, or no keys): it can be set aside and replaced. */
  readonly damaged: boolean;
  constructor(message: string, options?: { cause?: unknown; damaged?: boolean }) {
    super(message, options);
    this.name = 'CredentialsFileError';
    this.damaged = options?.damaged ?? false;
  }
}

/** The file, in the state folder, that holds the user's credentials. */
export const CREDENTIALS_FILE = 'credentials.json';

/** The user's own principal: an IAM user of the local account. */
export const LOCAL_USER_ARN = `arn:${LOCAL_AWS.partition}:iam::${LOCAL_AWS.accountId}:user/mapflow-bridge-local`;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** An access key id shaped like AWS's (prefix + 16 characters of base32). */
function newAccessKeyId(prefix: 'AKIA' | 'ASIA'): string {
  return prefix + [...randomBytes(16)].map((byte) => ALPHABET[byte % 32]).join('');
}

function newSecret(): string {
  return randomBytes(30).toString('base64');
}

export function issueCredentials(prefix: 'AKIA' | 'ASIA' = 'AKIA'): IssuedCredentials {
  return { accessKeyId: newAccessKeyId(prefix), secretAccessKey: newSecret() };
}

/**
 * `arn:aws:iam::ACCOUNT:role/path/Name` -> `arn:aws:sts::ACCOUNT:assumed-role/Name/session`,
 * the ARN AWS names in a Lambda function's AccessDenied messages.
 */
export function assumedRoleArn(roleArn: string, sessionName: string): string {
  const match = /^arn:([^:]+):iam::(\d{12}):role\/(?:.*\/)?([^/]+)$/.exec(roleArn);
  if (!match) throw new TypeError(`not a role ARN: ${roleArn}`);
  return `arn:${match[1]}:sts::${match[2]}:assumed-role/${match[3]}/${sessionName}`;
}

export class CredentialStore {
  private readonly byKey = new Map<string, Principal>();

  private constructor(readonly user: Principal) {
    this.byKey.set(user.accessKeyId, user);
  }

  /** A store whose user credentials live in memory only (`local run`, tests). */
  static inMemory(): CredentialStore {
    return new CredentialStore({ name: 'user', arn: LOCAL_USER_ARN, ...issueCredentials() });
  }

  /**
   * The state folder's store: its user credentials are read, or issued and written (mode 0600) the first time.
   * A damaged file (truncated, edited: the bridge itself replaces it atomically) is set aside under
   * `credentials.json.damaged-<time>` and new credentials are issued; `onRepaired` is told what was done,
   * since tools that read the old keys must read the file again. A file that cannot be read is an error.
   */
  static async open(stateDir: string, onRepaired?: (message: string) => void): Promise<CredentialStore> {
    let user: IssuedCredentials | undefined;
    try {
      user = await readCredentialsFile(stateDir);
    } catch (error) {
      if (!(error instanceof CredentialsFileError && error.damaged)) throw error;
      const file = path.join(stateDir, CREDENTIALS_FILE);
      const aside = `${file}.damaged-${new Date().toISOString().replace(/[:.]/g, '-')}`;
      await rename(file, aside).catch((renameError: unknown) => {
        throw new CredentialsFileError(`${error.message} (and it could not be set aside: ${(renameError as Error).message})`, { cause: error });
      });
      user = await writeCredentialsFile(stateDir, issueCredentials());
      onRepaired?.(`${file} was damaged (not JSON, or without its keys): set aside as ${path.basename(aside)}, and new local credentials issued; tools that used the old keys must read ${CREDENTIALS_FILE} again`);
    }
    user ??= await writeCredentialsFile(stateDir, issueCredentials());
    return new CredentialStore({ name: 'user', arn: LOCAL_USER_ARN, ...user });
  }

  /**
   * Issues credentials for a role's session named `name` (a function's name):
   * requests signed with them are allowed what `policyDocuments` allow, and
   * nothing else. In memory only.
   */
  addPrincipal(name: string, roleArn: string, policyDocuments: readonly PolicyDocument[]): IssuedCredentials {
    const credentials = issueCredentials('ASIA');
    this.byKey.set(credentials.accessKeyId, { name, arn: assumedRoleArn(roleArn, name), policies: [...policyDocuments], ...credentials });
    return credentials;
  }

  /** The principal an access key id was issued to. */
  principal(accessKeyId: string): Principal | undefined {
    return this.byKey.get(accessKeyId);
  }
}

/** The user's credentials from a state folder, or undefined when none were issued there yet. */
export async function readCredentialsFile(stateDir: string): Promise<IssuedCredentials | undefined> {
  const file = path.join(stateDir, CREDENTIALS_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CredentialsFileError(`cannot read ${file}: ${(error as Error).message}`, { cause: error });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new CredentialsFileError(`${file} is not JSON; remove it and start the bridge again to issue new credentials`, { cause: error, damaged: true });
  }
  const { accessKeyId, secretAccessKey } = (parsed ?? {}) as Record<string, unknown>;
  if (typeof accessKeyId !== 'string' || typeof secretAccessKey !== 'string' || !accessKeyId || !secretAccessKey) {
    throw new CredentialsFileError(`${file} holds no accessKeyId and secretAccessKey; remove it and start the bridge again to issue new credentials`, { damaged: true });
  }
  // Written 0600; a copy made readable by others since is made private again.
  if (((await stat(file)).mode & 0o077) !== 0) await chmod(file, 0o600);
  return { accessKeyId, secretAccessKey };
}

async function writeCredentialsFile(stateDir: string, credentials: IssuedCredentials): Promise<IssuedCredentials> {
  await mkdir(stateDir, { recursive: true });
  const file = path.join(stateDir, CREDENTIALS_FILE);
  const aside = `${file}.${randomBytes(6).toString('hex')}`;
  const body = { ...credentials, region: LOCAL_AWS.region, note: 'Issued by the local mapflow-bridge for its local S3 and DynamoDB endpoints only.' };
  try {
    // Created 0600 (never readable by others, not even for a moment), then renamed into place.
    await writeFile(aside, `${JSON.stringify(body, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    await rename(aside, file);
  } catch (error) {
    await rm(aside, { force: true });
    throw new CredentialsFileError(`cannot write ${file}: ${(error as Error).message}`, { cause: error });
  }
  return credentials;
}
