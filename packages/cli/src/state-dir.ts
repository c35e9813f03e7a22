/**
 * Where `start` keeps its state, and the file through which other commands
 * (jobs, the console) find a running bridge. A module of its own so that the
 * commands can share them without importing start.ts (an import cycle there
 * leaves them uninitialised: "Cannot access 'DEFAULT_STATE_DIR' before initialization").
 */
export const DEFAULT_STATE_DIR = '.local';
/**
 * The console's port unless --console-port says otherwise: stable, so a
 * bookmarked console works after a restart (the S3 port is stable for the same
 * reason). When another program holds it, a free port is used and the banner says so.
 */
export const DEFAULT_CONSOLE_PORT = 4569;
/** Written while `start` runs, so `jobs` can read the running ledger. */
export const ENDPOINTS_FILE = 'endpoints.json';

/**
 * Written while `start` runs on the embedded simulator: its URL and token
 * (random per start, shown nowhere else), so `doctor --local` can check the
 * running bridge without flags. Readable by this user only (mode 0600), like
 * control.json; never written for a Mapflow given with --mapflow-url (a real
 * token is not put on disk: give it to doctor with --token or MAPFLOW_TOKEN).
 */
export const MAPFLOW_ACCESS_FILE = 'mapflow-access.json';

export interface LocalMapflowAccess {
  url: string;
  token: string;
  email?: string;
  pid: number;
}

export async function writeMapflowAccess(stateDir: string, access: LocalMapflowAccess): Promise<string> {
  const { rm, writeFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const file = join(stateDir, MAPFLOW_ACCESS_FILE);
  // Created afresh: the mode of writeFile applies only to a file it creates.
  await rm(file, { force: true });
  await writeFile(file, JSON.stringify(access), { mode: 0o600, flag: 'wx' });
  return file;
}

export async function readMapflowAccess(stateDir: string): Promise<LocalMapflowAccess | undefined> {
  const { readFile } = await import('node:fs/promises');
  const { join } = await import('node:path');
  try {
    const access = JSON.parse(await readFile(join(stateDir, MAPFLOW_ACCESS_FILE), 'utf8')) as Partial<LocalMapflowAccess>;
    return typeof access.url === 'string' && typeof access.token === 'string' && typeof access.pid === 'number' ? (access as LocalMapflowAccess) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * What `start` does once its bridge runs: on the embedded simulator, writes
 * MAPFLOW_ACCESS_FILE with the simulator's URL and token (the bridge put the
 * token in the environment); with a given Mapflow, writes nothing. Returns
 * the file written, for `start` to remove when it stops.
 */
export async function recordSimulatorAccess(
  stateDir: string,
  bridge: { simulator?: unknown; endpoints: { mapflow: string } },
  env: NodeJS.ProcessEnv = process.env,
): Promise<string | undefined> {
  if (!bridge.simulator || !env.MAPFLOW_TOKEN) return undefined;
  return writeMapflowAccess(stateDir, { url: bridge.endpoints.mapflow, token: env.MAPFLOW_TOKEN, email: env.MAPFLOW_EMAIL ?? '', pid: process.pid });
}
