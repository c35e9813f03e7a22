/**
 * Checks made before a local command starts anything, so a newcomer gets one
 * clear message instead of a stack trace half-way through the start.
 */
import { MapflowClient, MapflowAuthError } from '../../functions/mapflow/index.ts';
import type { MapflowTarget } from '../bridge.ts';
import { checkJava } from './java.ts';

export { checkJava, JAVA_MISSING_MESSAGE } from './java.ts';

/** The local engine (aws-local-stepfunctions) needs Node 22 or newer (Promise.withResolvers). */
export function checkNode(version = process.versions.node): { ok: true } | { ok: false; message: string } {
  const major = Number(version.split('.')[0]);
  if (major >= 22) return { ok: true };
  return {
    ok: false,
    message:
      `mapflow-bridge needs Node.js 22 or newer; this is Node ${version}.\n` +
      `Run it through npm (npm start, npx mapflow-bridge ...), which uses the Node version the project pins, or install Node 22+.`,
  };
}

/**
 * What every command that starts local services checks first (Node 22+, Java
 * 17+ unless the ledger goes to a given DynamoDB). Prints the reason and
 * returns false when the command cannot run.
 */
export function preflight({ java = true }: { java?: boolean } = {}): boolean {
  for (const check of [checkNode(), ...(java ? [checkJava()] : [])]) {
    if (!check.ok) {
      console.error(check.message);
      return false;
    }
  }
  return true;
}

/**
 * With `--mapflow-url`, asks that Mapflow for the account's status before
 * anything starts, so a wrong URL or token is one clear line at once rather
 * than every job failing after its retries. The token is never printed.
 */
export async function checkMapflow(target: MapflowTarget | undefined): Promise<boolean> {
  if (!target) return true;
  const client = new MapflowClient({
    baseUrl: target.url,
    token: target.token,
    ...(target.email && { email: target.email }),
    timeoutMs: 10_000,
    retry: { maxAttempts: 2, baseDelayMs: 500, maxDelayMs: 1_000 },
  });
  try {
    await client.getUserStatus();
    return true;
  } catch (error) {
    const reason =
      error instanceof MapflowAuthError
        ? `it refused the token (HTTP ${error.status ?? 401}): check --token${target.email ? ' and --email' : ''}`
        : `it does not answer (${(error as Error).message}): check --mapflow-url and that the service runs`;
    console.error(`mapflow-bridge: cannot use Mapflow at ${target.url}: ${reason}. Nothing was started.`);
    return false;
  }
}
