/**
 * The Mapflow simulator as a Lambda function behind a function URL (the
 * `MapflowSimulator` construct of packages/simulator/cdk/mapflow-simulator.ts, used by the
 * real-account integration test in test/integ/). Adapter only: the simulator
 * itself is unchanged. At cold start it listens on 127.0.0.1 inside the
 * function and every function URL request is forwarded to it.
 *
 * - The token comes from the secret the construct creates (SIM_SECRET_ARN,
 *   JSON {"token", "email"}), the very secret the bridge under test reads.
 * - The simulator keeps its state in memory and /tmp: the construct reserves a
 *   concurrency of 1 so every request reaches the same instance.
 * - Links the simulator writes (result and image URLs) name its loopback
 *   address; JSON and text answers get the public function URL instead.
 */
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { startSimulator, type RunningSimulator } from './index.ts';

/** The function URL event (payload format 2.0), as far as it is used here. */
export interface FunctionUrlEvent {
  rawPath: string;
  rawQueryString?: string;
  headers?: Record<string, string | undefined>;
  body?: string;
  isBase64Encoded?: boolean;
  requestContext: { domainName: string; http: { method: string } };
}

export interface FunctionUrlResult {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
  isBase64Encoded: boolean;
}

let running: Promise<RunningSimulator> | undefined;

async function simulator(): Promise<RunningSimulator> {
  running ??= (async () => {
    const arn = process.env.SIM_SECRET_ARN;
    if (!arn) throw new Error('SIM_SECRET_ARN is not set');
    const secrets = new SecretsManagerClient({});
    const { SecretString } = await secrets.send(new GetSecretValueCommand({ SecretId: arn }));
    const { token, email } = JSON.parse(SecretString ?? '{}') as { token?: string; email?: string };
    if (!token) throw new Error('the simulator secret has no token');
    return startSimulator({
      host: '127.0.0.1',
      port: 0,
      token,
      email: email || 'integ@mapflow-bridge.invalid',
      dataDir: '/tmp/mapflow-simulator',
      processingSeconds: Number(process.env.SIM_PROCESSING_SECONDS ?? 20),
      // One bundle, no TypeScript loader beside it: the Lambda's sandbox is the decoding process.
      decoder: 'inline',
    });
  })();
  return running;
}

/** Headers Lambda or the URL layer set, which must not be forwarded as they are. */
const HOP_HEADERS = new Set(['host', 'content-length', 'connection', 'transfer-encoding', 'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-port']);

export async function handler(event: FunctionUrlEvent): Promise<FunctionUrlResult> {
  const sim = await simulator();
  const local = new URL(sim.url);
  const target = `${local.origin}${event.rawPath}${event.rawQueryString ? `?${event.rawQueryString}` : ''}`;
  const headers = Object.fromEntries(
    Object.entries(event.headers ?? {}).filter((e): e is [string, string] => e[1] !== undefined && !HOP_HEADERS.has(e[0].toLowerCase())),
  );
  const method = event.requestContext.http.method;
  const body = event.body === undefined ? undefined : event.isBase64Encoded ? Buffer.from(event.body, 'base64') : Buffer.from(event.body, 'utf8');
  const answer = await fetch(target, { method, headers, body: method === 'GET' || method === 'HEAD' ? undefined : body });

  const type = answer.headers.get('content-type') ?? '';
  const responseHeaders: Record<string, string> = {};
  answer.headers.forEach((value, key) => {
    if (!HOP_HEADERS.has(key) && key !== 'content-encoding') responseHeaders[key] = value;
  });
  const bytes = Buffer.from(await answer.arrayBuffer());
  if (/json|text/.test(type)) {
    const publicOrigin = `https://${event.requestContext.domainName}`;
    return { statusCode: answer.status, headers: responseHeaders, body: bytes.toString('utf8').split(local.origin).join(publicOrigin), isBase64Encoded: false };
  }
  return { statusCode: answer.status, headers: responseHeaders, body: bytes.toString('base64'), isBase64Encoded: true };
}
