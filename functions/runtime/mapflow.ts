/**
 * The Mapflow client for a configuration, with its credentials.
 *
 * On AWS the credentials are the secret MAPFLOW_SECRET_ARN, a JSON
 * `{"token": "...", "email": "..."}` read through Powertools Parameters, which
 * caches it for `SECRET_MAX_AGE_SECONDS` so a warm Lambda does not call Secrets
 * Manager on every invocation yet picks up a rotated token within minutes.
 * Locally (no secret ARN) they come from MAPFLOW_TOKEN / MAPFLOW_EMAIL.
 *
 * Every token read is registered with the logger's redaction before anything
 * else happens, and no error raised here ever quotes the secret's content.
 */
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import { ConfigurationError } from '../core/errors.ts';
import { MapflowClient, timeoutsFromEnv, type MapflowClientOptions } from '../mapflow/index.ts';
import { isLocal, type BridgeConfig } from './config.ts';
import { registerSecret } from './logger.ts';
import { localCredentials } from './aws.ts';

export const SECRET_MAX_AGE_SECONDS = 300;
export const CLIENT_NAME = 'mapflow-bridge';

export interface MapflowCredentials {
  token: string;
  email?: string;
}

export interface MapflowClientFactoryOptions {
  /** Where MAPFLOW_TOKEN / MAPFLOW_EMAIL are read in local mode; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Bypass the secret cache (e.g. after a MapflowAuthError, the token may have been rotated). */
  refresh?: boolean;
  /** Extra client options (tests pass `http: undiciRequester(mockAgent)`). */
  client?: Partial<Omit<MapflowClientOptions, 'baseUrl' | 'token' | 'email' | 'authScheme'>>;
}

const providers = new WeakMap<BridgeConfig, SecretsProvider>();
const clients = new WeakMap<BridgeConfig, { token: string; email?: string; client: MapflowClient }>();

/** Reads the Mapflow credentials (secret on AWS, environment locally). */
export async function mapflowCredentials(
  config: BridgeConfig,
  options: Pick<MapflowClientFactoryOptions, 'env' | 'refresh'> = {},
): Promise<MapflowCredentials> {
  const credentials = config.mapflow.secretArn
    ? await credentialsFromSecret(config, config.mapflow.secretArn, options.refresh ?? false)
    : credentialsFromEnvironment(options.env ?? process.env);
  registerSecret(credentials.token, { email: credentials.email });
  return credentials;
}

/**
 * A Mapflow client with the current credentials. The client is reused while
 * the token stays the same, so its connection pool survives across invocations.
 */
export async function mapflowClient(config: BridgeConfig, options: MapflowClientFactoryOptions = {}): Promise<MapflowClient> {
  const { token, email } = await mapflowCredentials(config, options);
  const cached = clients.get(config);
  if (cached && cached.token === token && cached.email === email && !options.client) return cached.client;
  const client = new MapflowClient({
    clientName: CLIENT_NAME,
    // Per-call timeouts from MAPFLOW_*_TIMEOUT_SECONDS (docs/mapflow-client.md).
    timeouts: timeoutsFromEnv(options.env ?? process.env),
    ...options.client,
    baseUrl: config.mapflow.baseUrl,
    token,
    ...(email ? { email } : {}),
    authScheme: config.mapflow.authScheme,
  });
  if (!options.client) clients.set(config, { token, email, client });
  return client;
}

function credentialsFromEnvironment(env: NodeJS.ProcessEnv): MapflowCredentials {
  const token = env.MAPFLOW_TOKEN?.trim();
  if (!token) {
    throw new ConfigurationError(
      'No Mapflow credentials: set MAPFLOW_SECRET_ARN to a Secrets Manager secret {"token": "...", "email": "..."} ' +
        '(on AWS), or MAPFLOW_TOKEN (and MAPFLOW_EMAIL for Basic auth) in local mode.',
    );
  }
  const email = env.MAPFLOW_EMAIL?.trim();
  return { token, ...(email ? { email } : {}) };
}

async function credentialsFromSecret(config: BridgeConfig, secretArn: string, refresh: boolean): Promise<MapflowCredentials> {
  let provider = providers.get(config);
  if (!provider) {
    provider = new SecretsProvider({
      clientConfig: {
        ...(config.region ? { region: config.region } : {}),
        // Local mode never uses real credentials, even for a secret.
        ...(isLocal(config) ? { credentials: localCredentials() } : {}),
      },
    });
    providers.set(config, provider);
  }
  let raw: unknown;
  try {
    raw = await provider.get(secretArn, { maxAge: SECRET_MAX_AGE_SECONDS, forceFetch: refresh });
  } catch (error) {
    throw new ConfigurationError(
      `Cannot read the Mapflow secret ${secretArn}: ${rootCauseName(error)}. ` +
        'Check that it exists and that the function may call secretsmanager:GetSecretValue on it.',
      { cause: error },
    );
  }
  return parseSecret(raw, secretArn);
}

/** Validates the secret's JSON without ever quoting it. */
export function parseSecret(raw: unknown, secretArn: string): MapflowCredentials {
  const text = typeof raw === 'string' ? raw : raw instanceof Uint8Array ? Buffer.from(raw).toString('utf8') : undefined;
  const shape = 'a JSON object {"token": "<Mapflow API token>", "email": "<account email, optional>"}';
  if (text === undefined) throw new ConfigurationError(`The Mapflow secret ${secretArn} is empty; store ${shape}.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ConfigurationError(`The Mapflow secret ${secretArn} is not JSON; store ${shape}.`);
  }
  if (typeof parsed !== 'object' || parsed === null) {
    throw new ConfigurationError(`The Mapflow secret ${secretArn} is not a JSON object; store ${shape}.`);
  }
  const { token, email } = parsed as { token?: unknown; email?: unknown };
  if (typeof token !== 'string' || token.trim() === '') {
    throw new ConfigurationError(`The Mapflow secret ${secretArn} has no "token" string; store ${shape}.`);
  }
  if (email !== undefined && email !== null && typeof email !== 'string') {
    throw new ConfigurationError(`The Mapflow secret ${secretArn} has an "email" that is not a string; store ${shape}.`);
  }
  const trimmedEmail = typeof email === 'string' ? email.trim() : '';
  return { token: token.trim(), ...(trimmedEmail ? { email: trimmedEmail } : {}) };
}

/** Powertools wraps SDK errors (GetParameterError); the SDK's name says what went wrong. */
function rootCauseName(error: unknown): string {
  let current = error as { name?: string; cause?: unknown } | undefined;
  while (current?.cause && typeof current.cause === 'object') current = current.cause as typeof current;
  return current?.name ?? 'unknown error';
}
