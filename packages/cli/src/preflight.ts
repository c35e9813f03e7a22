/**
 * Checks made before a local command starts anything, so a newcomer gets one
 * clear message instead of a stack trace half-way through the start.
 */
import { MapflowClient, MapflowAuthError, MapflowError } from 'mapflow-bridge/functions/mapflow/index.ts';
import type { MapflowTarget } from '@mapflow-bridge/local/bridge';
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

/** What the start-up check of a given Mapflow found. */
export interface MapflowCheck {
  /** false: the bridge must not start (a refused token, a wrong URL, nothing answering at all). */
  usable: boolean;
  /**
   * Set when Mapflow answered, but only with faults (5xx, 429) for the whole
   * check: the bridge starts degraded, holds new jobs and says so.
   */
  degraded?: string;
  /** Requests made. */
  attempts: number;
}

export interface MapflowCheckOptions {
  /** How long to keep asking a faulty Mapflow before starting degraded (or refusing one that never answers). Default 30 s. */
  budgetMs?: number;
  /** First backoff ceiling (full jitter, doubling). Default 500 ms. */
  baseDelayMs?: number;
  /** Backoff ceiling. Default 8 s. */
  maxDelayMs?: number;
  /** Where the reason goes (default stderr). */
  log?: (message: string) => void;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

/**
 * With `--mapflow-url`, asks that Mapflow for the account's status before
 * anything starts, so a wrong URL or token is one clear line at once rather
 * than every job failing after its retries. The token is never printed.
 *
 * A faulty answer (5xx, 429) is asked again with capped exponential backoff
 * and full jitter (a Retry-After is honoured) for up to `budgetMs`: a flaky
 * service must not stop the bridge. One that answered only faults for the
 * whole time gives a degraded start; a refused token or a 4xx refuses it at
 * once; one that never answered at all refuses it after the time.
 */
export async function checkMapflow(target: MapflowTarget | undefined, options: MapflowCheckOptions = {}): Promise<MapflowCheck> {
  if (!target) return { usable: true, attempts: 0 };
  const log = options.log ?? ((message: string) => console.error(message));
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const random = options.random ?? Math.random;
  const budgetMs = options.budgetMs ?? 30_000;
  const baseDelayMs = options.baseDelayMs ?? 500;
  const maxDelayMs = options.maxDelayMs ?? 8_000;
  const client = new MapflowClient({
    baseUrl: target.url,
    token: target.token,
    ...(target.email && { email: target.email }),
    timeoutMs: 10_000,
    // One request per attempt: this loop does the retrying, so it can say what each answer was.
    retry: { maxAttempts: 1 },
  });
  const refuse = (reason: string, attempts: number): MapflowCheck => {
    log(`mapflow-bridge: cannot use Mapflow at ${target.url}: ${reason}. Nothing was started.`);
    return { usable: false, attempts };
  };
  const deadline = now() + budgetMs;
  const answers: string[] = [];
  let lastError: Error | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      await client.getUserStatus();
      if (answers.length > 0) log(`mapflow-bridge: Mapflow at ${target.url} answered on attempt ${attempt} (before: ${summarise(answers)}).`);
      return { usable: true, attempts: attempt };
    } catch (error) {
      lastError = error as Error;
      const status = error instanceof MapflowError ? error.status : undefined;
      if (error instanceof MapflowAuthError) {
        return refuse(`it refused the token (HTTP ${status ?? 401}): check --token${target.email ? ' and --email' : ''}`, attempt);
      }
      // A definitive 4xx other than 429: the URL (or the account) is wrong, asking again changes nothing.
      if (status !== undefined && status < 500 && status !== 429) {
        return refuse(`it answered HTTP ${status} (${lastError.message}): check --mapflow-url`, attempt);
      }
      answers.push(status !== undefined ? `HTTP ${status}` : describeNetworkError(lastError));
      const retryAfterMs = error instanceof MapflowError ? error.retryAfterMs : undefined;
      const delay = retryAfterMs ?? Math.floor(random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)));
      if (now() + delay > deadline) break;
      await sleep(delay);
    }
  }
  const attempts = answers.length;
  const seconds = Math.round(budgetMs / 1000);
  if (!answers.some((answer) => answer.startsWith('HTTP '))) {
    return refuse(`it does not answer (${attempts} attempts in ${seconds} s: ${summarise(answers)}; last: ${lastError?.message}): check --mapflow-url and that the service runs`, attempts);
  }
  const degraded = `Mapflow answered only with faults at start-up (${attempts} attempts in ${seconds} s: ${summarise(answers)})`;
  log(`mapflow-bridge: ${degraded}; starting degraded: new jobs wait until it answers.`);
  return { usable: true, degraded, attempts };
}

/**
 * Asks Mapflow for the account's status until it answers (backoff with
 * jitter, Retry-After honoured), for a bridge that started degraded. Resolves
 * once it answered, or when `signal` aborts.
 */
export async function waitForMapflow(target: MapflowTarget, signal?: AbortSignal, options: Pick<MapflowCheckOptions, 'baseDelayMs' | 'maxDelayMs'> = {}): Promise<void> {
  const client = new MapflowClient({ baseUrl: target.url, token: target.token, ...(target.email && { email: target.email }), timeoutMs: 10_000, retry: { maxAttempts: 1 } });
  const base = options.baseDelayMs ?? 1_000;
  const cap = options.maxDelayMs ?? 15_000;
  for (let attempt = 1; !signal?.aborted; attempt++) {
    try {
      await client.getUserStatus();
      return;
    } catch (error) {
      const retryAfterMs = error instanceof MapflowError ? error.retryAfterMs : undefined;
      const delay = retryAfterMs ?? Math.floor(Math.random() * Math.min(cap, base * 2 ** Math.min(attempt - 1, 10)));
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        signal?.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        }, { once: true });
      });
    }
  }
}

/** "3 x HTTP 500, 1 x HTTP 429" in the order first seen. */
function summarise(answers: string[]): string {
  const counts = new Map<string, number>();
  for (const answer of answers) counts.set(answer, (counts.get(answer) ?? 0) + 1);
  return [...counts].map(([answer, count]) => `${count} x ${answer}`).join(', ');
}

function describeNetworkError(error: Error): string {
  const code = (error as { code?: string }).code ?? ((error.cause as { code?: string } | undefined)?.code);
  return code ? `no answer (${code})` : `no answer (${error.name})`;
}
