/**
 * Shared set-up of the client tests: a MapflowClient wired to an undici
 * MockAgent (no network), with an instant, recording sleep so retries take no
 * time and their delays can be asserted.
 */
import { MockAgent } from 'undici';
import { afterEach } from 'vitest';
import { MapflowClient, type MapflowClientOptions } from '../../../../functions/mapflow/index.ts';
import { undiciRequester } from '../../../../functions/mapflow/http/undici.ts';

export const ORIGIN = 'https://mapflow.test';
export const BASE = '/rest';
export const TOKEN = 'tok-SECRET-8f3c1d2e9a7b';
export const EMAIL = 'user@example.com';
export const BASIC_CREDENTIAL = Buffer.from(`${EMAIL}:${TOKEN}`).toString('base64');

export interface MockSetup {
  agent: MockAgent;
  pool: ReturnType<MockAgent['get']>;
  client: MapflowClient;
  /** Delays the client slept between attempts, in order. */
  delays: number[];
  warnings: { message: string; extra?: Record<string, unknown> }[];
}

/** A createProcessing request with little in it, for the tests whose point is the answer, not the request. */
export const MINIMAL_CREATE: Parameters<MapflowClient['createProcessing']>[0] = {
  name: 'n',
  wdId: 'w',
  geometry: { type: 'Polygon', coordinates: [] },
  params: { sourceParams: { dataProvider: { providerName: 'mapbox' } } },
};

/**
 * For a test file's top level: `mockClient`, each agent closed after the test
 * that made it.
 */
export function mockClientsClosedAfterEach(): (options?: Partial<MapflowClientOptions>) => MockSetup {
  const agents: MockAgent[] = [];
  afterEach(async () => {
    await Promise.all(agents.splice(0).map((agent) => agent.close()));
  });
  return (options) => {
    const setup = mockClient(options);
    agents.push(setup.agent);
    return setup;
  };
}

export function mockClient(options: Partial<MapflowClientOptions> = {}): MockSetup {
  const agent = new MockAgent();
  agent.disableNetConnect();
  const delays: number[] = [];
  const warnings: MockSetup['warnings'] = [];
  const client = new MapflowClient({
    baseUrl: `${ORIGIN}${BASE}`,
    token: TOKEN,
    authScheme: 'bearer',
    http: undiciRequester(agent),
    timeoutMs: 2_000,
    retry: { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 1_000 },
    sleep: async (ms) => {
      delays.push(ms);
    },
    random: () => 0.5,
    logger: { warn: (message, extra) => warnings.push({ message, extra }) },
    ...options,
  });
  return { agent, pool: agent.get(ORIGIN), client, delays, warnings };
}

export const JSON_HEADERS = { headers: { 'content-type': 'application/json' } };

/** An error like the ones Node's net layer raises. */
export function netError(code: string, message = code): Error {
  return Object.assign(new Error(message), { code });
}

/** The rejection of a promise (fails the test when it resolves). */
export async function rejectionOf(promise: Promise<unknown>): Promise<Error & Record<string, unknown>> {
  try {
    await promise;
  } catch (error) {
    return error as Error & Record<string, unknown>;
  }
  throw new Error('expected the call to fail, but it succeeded');
}

export const POLYGON = {
  type: 'Polygon',
  coordinates: [
    [
      [7.44, 46.94],
      [7.45, 46.94],
      [7.45, 46.95],
      [7.44, 46.95],
      [7.44, 46.94],
    ],
  ],
};
