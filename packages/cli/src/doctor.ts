/**
 * `mapflow-bridge doctor`: is this bridge able to run a job? One line per
 * check, exit 0 only when every check passes.
 *
 *   doctor --stack <name> [--region <r>]   a deployed stack (reads its outputs)
 *   doctor --local [--state-dir .local] [--token <token>]   the bridge `npm start` runs
 *
 * Deployed: the secret exists and holds a token Mapflow accepts
 * (GET /user/status), every route's model and imagery provider are available
 * to the account, the bucket sends events to EventBridge, the trigger rule is
 * enabled, matches the bucket and targets the queue, the queue redrives to the
 * dead-letter queue, and the dead-letter queue is empty. Local: the running
 * bridge's endpoints, the token, the routes, the local bucket and ledger.
 *
 * The token is never printed: checks name the secret, never its value.
 */
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import { CloudFormationClient, DescribeStacksCommand } from '@aws-sdk/client-cloudformation';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeRuleCommand, EventBridgeClient, ListTargetsByRuleCommand } from '@aws-sdk/client-eventbridge';
import { GetBucketNotificationConfigurationCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { MapflowAuthError, MapflowClient, type AuthScheme, type UserStatus } from 'mapflow-bridge/functions/mapflow/index.ts';
import { resolveModel } from 'mapflow-bridge/functions/jobs/models.ts';
import { DEFAULT_GEOJSON_MODEL, DEFAULT_GEOJSON_SOURCE, DEFAULT_ROUTES, parseRoutes, type Route } from 'mapflow-bridge/functions/routing/index.ts';
import { parseSecret, type MapflowCredentials } from 'mapflow-bridge/functions/runtime/mapflow.ts';
import { localS3Client } from '@mapflow-bridge/local/s3/client';
import { readCredentialsFile } from '@mapflow-bridge/local/auth/credentials';
import { readMapflowAccess } from './state-dir.ts';
import { OPTIONS, runCommand, usageOf, UsageError, type CliOptions, type CommandLine, type OptionValues } from './args.ts';

export interface DoctorCheck {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
  /** Not run, because an earlier check failed (`detail` says which): printed SKIP, never a FAIL of its own. */
  readonly skipped?: boolean;
}

/** A check that cannot run because an earlier one failed: `SKIP  name  skipped: <why>`. */
function skipped(name: string, why: string): DoctorCheck {
  return { name, ok: false, skipped: true, detail: `skipped: ${why}` };
}

/** The AWS clients the deployed checks use (tests mock them with aws-sdk-client-mock). */
export interface DoctorAwsClients {
  cloudformation: CloudFormationClient;
  secrets: SecretsManagerClient;
  s3: S3Client;
  events: EventBridgeClient;
  sqs: SQSClient;
}

/** doctor's exit statuses, as its --help says them (test/docs/commands.test.ts). */
export const DOCTOR_EXIT_CODES = { passed: 0, failed: 1, usage: 2 } as const;

export const DOCTOR_COMMAND = {
  name: 'doctor',
  synopsis: `Usage: mapflow-bridge doctor --stack <name> [--region <region>]
       mapflow-bridge doctor --local [--state-dir <dir>] [--token <token>] [--email <email>] [--routes <file>]

Checks that a bridge can run a job, one line per check; exits 0 only when all pass.`,
  options: {
    stack: {
      ...OPTIONS.stack,
      help: [
        "a deployed stack: its secret and Mapflow token (GET /user/status), every",
        "route's model and imagery provider, S3 -> EventBridge, the trigger rule and",
        'queue, and that the dead-letter queue is empty (uses your AWS credentials)',
      ].join('\n'),
    },
    region: { ...OPTIONS.region, help: "the stack's region (default: your AWS configuration's)" },
    local: { type: 'boolean', help: "the bridge 'npm start' runs (reads <state-dir>/endpoints.json)" },
    'state-dir': OPTIONS['state-dir'],
    token: {
      ...OPTIONS.token,
      help: [
        'the Mapflow token the local bridge uses; not needed with the embedded',
        'simulator (its token is read from <state-dir>/mapflow-access.json, mode 0600);',
        'for a bridge started with --mapflow-url, default MAPFLOW_TOKEN',
      ].join('\n'),
    },
    email: { ...OPTIONS.email, help: 'its account e-mail (default: MAPFLOW_EMAIL)' },
    routes: { ...OPTIONS.routes, help: 'the routes the local bridge runs with (default: the built-in routes)' },
    help: OPTIONS.help,
  },
  epilogue: `Exit status: ${DOCTOR_EXIT_CODES.passed} when every check passed, ${DOCTOR_EXIT_CODES.failed} when any failed (a check an earlier
failure kept from running says SKIP, skipped: <why>), ${DOCTOR_EXIT_CODES.usage} on a usage error.`,
} as const satisfies CommandLine<CliOptions>;

export const DOCTOR_USAGE = usageOf(DOCTOR_COMMAND);

// ---------------------------------------------------------------- Mapflow and routes

/** The token line and one line per route (model and provider available to the account). */
export async function checkMapflow(
  target: { baseUrl: string; authScheme?: AuthScheme; credentials: MapflowCredentials },
  routes: readonly Route[],
): Promise<DoctorCheck[]> {
  const client = new MapflowClient({
    baseUrl: target.baseUrl,
    token: target.credentials.token,
    email: target.credentials.email,
    authScheme: target.authScheme,
    retry: { maxAttempts: 2 },
  } as ConstructorParameters<typeof MapflowClient>[0]);
  let status: UserStatus;
  try {
    status = await client.getUserStatus();
  } catch (error) {
    const detail =
      error instanceof MapflowAuthError
        ? `Mapflow at ${target.baseUrl} refused the token (${(error as Error).message}); put a valid token into the secret`
        : `GET ${target.baseUrl}/user/status failed: ${(error as Error).message}`;
    return [{ name: 'mapflow token', ok: false, detail }, ...routes.map((r) => skipped(`route ${r.name}`, 'no account status (the token check failed)'))];
  }
  const who = status.email ? ` (account ${status.email})` : '';
  const checks: DoctorCheck[] = [{ name: 'mapflow token', ok: true, detail: `accepted by ${target.baseUrl}${who}` }];
  for (const route of routes) checks.push(checkRoute(route, status));
  return checks;
}

function checkRoute(route: Route, status: UserStatus): DoctorCheck {
  const problems: string[] = [];
  const found: string[] = [];
  const model = route.model ?? DEFAULT_GEOJSON_MODEL;
  try {
    const resolved = resolveModel(status.models, model);
    found.push(`model '${resolved.name}'`);
  } catch (error) {
    problems.push((error as Error).message);
  }
  const provider = providerOf(route);
  if (provider !== undefined) {
    const names = status.dataProviders.map((p) => p.name);
    const match = status.dataProviders.find(
      (p) => p.name.toLowerCase() === provider.toLowerCase() || p.displayName?.toLowerCase() === provider.toLowerCase(),
    );
    if (match) found.push(`provider '${match.name}'`);
    else if (names.length === 0) found.push(`provider '${provider}' (the account lists no providers; Mapflow checks it at processing time)`);
    else problems.push(`imagery provider '${provider}' is not enabled for this account (it has: ${names.join(', ')})`);
  }
  return problems.length > 0
    ? { name: `route ${route.name}`, ok: false, detail: problems.join('; ') }
    : { name: `route ${route.name}`, ok: true, detail: found.join(', ') };
}

function providerOf(route: Route): string | undefined {
  const source = (route.source ?? DEFAULT_GEOJSON_SOURCE) as Record<string, { providerName?: string; dataProvider?: string } | undefined>;
  return source.dataProvider?.providerName ?? source.imagerySearch?.dataProvider;
}

// ---------------------------------------------------------------- deployed stack

export async function doctorStack(stackName: string, clients: DoctorAwsClients): Promise<DoctorCheck[]> {
  const checks: DoctorCheck[] = [];
  let outputs: Record<string, string>;
  try {
    const { Stacks } = await clients.cloudformation.send(new DescribeStacksCommand({ StackName: stackName }));
    outputs = Object.fromEntries((Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey ?? '', o.OutputValue ?? '']));
  } catch (error) {
    return [{ name: 'stack', ok: false, detail: `cannot read stack ${stackName}: ${(error as Error).message}` }];
  }
  const missing = ['SecretArn', 'BucketName', 'DeadLetterQueueUrl', 'TriggerQueueUrl', 'TriggerRuleName', 'MapflowBaseUrl'].filter((k) => !outputs[k]);
  if (missing.length > 0) {
    return [{ name: 'stack', ok: false, detail: `stack ${stackName} lacks the outputs ${missing.join(', ')} (deployed with an older mapflow-bridge? deploy again)` }];
  }
  checks.push({ name: 'stack', ok: true, detail: `${stackName} found` });

  // Secret and Mapflow
  let credentials: MapflowCredentials | undefined;
  try {
    const secret = await clients.secrets.send(new GetSecretValueCommand({ SecretId: outputs.SecretArn }));
    credentials = parseSecret(secret.SecretString ?? secret.SecretBinary, outputs.SecretArn);
    checks.push({ name: 'secret', ok: true, detail: `${outputs.SecretArn} holds a token` });
  } catch (error) {
    checks.push({ name: 'secret', ok: false, detail: (error as Error).message });
  }
  const routes = outputs.Routes && outputs.Routes !== 'default' ? parseRoutes(JSON.stringify({ routes: JSON.parse(outputs.Routes) })).routes : DEFAULT_ROUTES.routes;
  if (credentials) {
    checks.push(...(await checkMapflow({ baseUrl: outputs.MapflowBaseUrl, authScheme: outputs.MapflowAuthScheme as AuthScheme, credentials }, routes)));
  } else {
    checks.push(skipped('mapflow token', 'no readable secret'));
    for (const route of routes) checks.push(skipped(`route ${route.name}`, 'no readable secret'));
  }

  checks.push(await checkBucketEvents(clients.s3, outputs.BucketName));
  const [queue, dlq] = await Promise.all([
    queueAttributes(clients.sqs, outputs.TriggerQueueUrl, ['QueueArn', 'RedrivePolicy']),
    queueAttributes(clients.sqs, outputs.DeadLetterQueueUrl, ['QueueArn', 'ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed']),
  ]);
  checks.push(await checkRule(clients.events, outputs.TriggerRuleName, outputs.BucketName, queue));
  checks.push(checkRedrive(queue, dlq));
  checks.push(checkDeadLetters(dlq));
  return checks;
}

async function checkBucketEvents(s3: S3Client, bucket: string): Promise<DoctorCheck> {
  try {
    const configuration = await s3.send(new GetBucketNotificationConfigurationCommand({ Bucket: bucket }));
    return configuration.EventBridgeConfiguration
      ? { name: 'bucket events', ok: true, detail: `${bucket} sends its events to EventBridge` }
      : { name: 'bucket events', ok: false, detail: `${bucket} does not send events to EventBridge: turn on "Send notifications to Amazon EventBridge" in its properties` };
  } catch (error) {
    return { name: 'bucket events', ok: false, detail: `cannot read the notification configuration of ${bucket}: ${(error as Error).message}` };
  }
}

type QueueAttributes = { url: string; attributes?: Record<string, string>; error?: string };

async function queueAttributes(sqs: SQSClient, url: string, names: string[]): Promise<QueueAttributes> {
  try {
    const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: names as never }));
    return { url, attributes: Attributes ?? {} };
  } catch (error) {
    return { url, error: (error as Error).message };
  }
}

async function checkRule(events: EventBridgeClient, ruleName: string, bucket: string, queue: QueueAttributes): Promise<DoctorCheck> {
  const name = 'trigger rule';
  try {
    const rule = await events.send(new DescribeRuleCommand({ Name: ruleName }));
    if (rule.State !== 'ENABLED') return { name, ok: false, detail: `${ruleName} is ${rule.State ?? 'in an unknown state'}; enable it` };
    const pattern = JSON.parse(rule.EventPattern ?? '{}') as { detail?: { bucket?: { name?: unknown[] } } };
    if (!pattern.detail?.bucket?.name?.includes(bucket)) return { name, ok: false, detail: `${ruleName} does not match bucket ${bucket}` };
    const { Targets } = await events.send(new ListTargetsByRuleCommand({ Rule: ruleName }));
    const queueArn = queue.attributes?.QueueArn;
    if (!queueArn) return { name, ok: false, detail: `cannot read the trigger queue ${queue.url}: ${queue.error ?? 'no QueueArn'}` };
    if (!(Targets ?? []).some((t) => t.Arn === queueArn)) return { name, ok: false, detail: `${ruleName} does not target the trigger queue ${queueArn}` };
    return { name, ok: true, detail: `${ruleName} is enabled, matches ${bucket} and targets ${queueArn}` };
  } catch (error) {
    return { name, ok: false, detail: `cannot read rule ${ruleName}: ${(error as Error).message}` };
  }
}

function checkRedrive(queue: QueueAttributes, dlq: QueueAttributes): DoctorCheck {
  const name = 'trigger queue';
  if (!queue.attributes) return { name, ok: false, detail: `cannot read ${queue.url}: ${queue.error}` };
  const dlqArn = dlq.attributes?.QueueArn;
  let target: string | undefined;
  try {
    target = (JSON.parse(queue.attributes.RedrivePolicy ?? '{}') as { deadLetterTargetArn?: string }).deadLetterTargetArn;
  } catch {
    target = undefined;
  }
  return target !== undefined && target === dlqArn
    ? { name, ok: true, detail: `redrives to the dead-letter queue ${dlqArn}` }
    : { name, ok: false, detail: `${queue.url} does not redrive to the dead-letter queue (${dlqArn ?? dlq.error ?? 'unreadable'})` };
}

function checkDeadLetters(dlq: QueueAttributes): DoctorCheck {
  const name = 'dead-letter queue';
  if (!dlq.attributes) return { name, ok: false, detail: `cannot read ${dlq.url}: ${dlq.error}` };
  const count = ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible', 'ApproximateNumberOfMessagesDelayed'].reduce(
    (sum, k) => sum + Number(dlq.attributes?.[k] ?? 0),
    0,
  );
  return count === 0
    ? { name, ok: true, detail: 'empty' }
    : { name, ok: false, detail: `${count} message(s) waiting: drops that could not be dispatched; see docs/operations.md, then redrive or purge ${dlq.url}` };
}

// ---------------------------------------------------------------- local bridge

export interface LocalDoctorOptions {
  stateDir: string;
  /** --token: wins over everything. */
  token?: string;
  email?: string;
  /** MAPFLOW_TOKEN / MAPFLOW_EMAIL: used when the state folder holds no simulator token. */
  envToken?: string;
  envEmail?: string;
  routesFile?: string;
}

interface LocalEndpoints {
  s3: string;
  dynamodb: string;
  mapflow: string;
  bucket: string;
  ledgerTable: string;
  pid?: number;
}

export async function doctorLocal(options: LocalDoctorOptions): Promise<DoctorCheck[]> {
  const file = path.join(options.stateDir, 'endpoints.json');
  let endpoints: LocalEndpoints;
  try {
    endpoints = JSON.parse(await readFile(file, 'utf8')) as LocalEndpoints;
  } catch {
    return [{ name: 'local bridge', ok: false, detail: `no ${file}: start the local bridge first (npm start)` }];
  }
  const checks: DoctorCheck[] = [];
  const alive = endpoints.pid === undefined || isAlive(endpoints.pid);
  checks.push(
    alive
      ? { name: 'local bridge', ok: true, detail: `running (${file})` }
      : { name: 'local bridge', ok: false, detail: `${file} names process ${endpoints.pid}, which is not running: start the bridge again (npm start)` },
  );

  let routes: readonly Route[] = DEFAULT_ROUTES.routes;
  if (options.routesFile) {
    try {
      routes = parseRoutes(await readFile(options.routesFile, 'utf8')).routes;
      checks.push({ name: 'routes', ok: true, detail: `${routes.length} route(s) in ${options.routesFile}` });
    } catch (error) {
      checks.push({ name: 'routes', ok: false, detail: (error as Error).message });
    }
  }
  // --token first; else the embedded simulator's own token that start left for us (0600); else MAPFLOW_TOKEN.
  const access = await readMapflowAccess(options.stateDir);
  const own = access && access.url === endpoints.mapflow && access.pid === endpoints.pid ? access : undefined;
  const token = options.token ?? own?.token ?? options.envToken;
  const email = options.email ?? (options.token ? undefined : own?.email) ?? options.envEmail;
  // A stopped bridge's endpoints answer nothing: each check would fail only because the first did.
  const stopped = 'the local bridge is not running';
  if (!alive) {
    checks.push(skipped('mapflow token', stopped), ...routes.map((route) => skipped(`route ${route.name}`, stopped)), skipped('bucket', stopped), skipped('ledger', stopped));
    return checks;
  }
  if (token) {
    checks.push(...(await checkMapflow({ baseUrl: endpoints.mapflow, credentials: { token, email } }, routes)));
  } else {
    checks.push({
      name: 'mapflow token',
      ok: false,
      detail: `no token given: the bridge runs a Mapflow given with --mapflow-url (${endpoints.mapflow}); pass --token (or set MAPFLOW_TOKEN) with the token it uses`,
    });
  }

  // The credentials the bridge issued in the state folder: its endpoints refuse any other.
  const credentials = await readCredentialsFile(options.stateDir).catch(() => undefined);
  if (!credentials) {
    checks.push({ name: 'credentials', ok: false, detail: `no readable credentials.json in ${options.stateDir}: start the local bridge (npm start) to issue them` });
    checks.push(skipped('bucket', 'no credentials to sign with'), skipped('ledger', 'no credentials to sign with'));
    return checks;
  }
  const s3 = localS3Client(endpoints.s3, credentials);
  const dynamodb = new DynamoDBClient({ endpoint: endpoints.dynamodb, region: 'us-east-1', credentials });
  try {
    await s3.send(new HeadBucketCommand({ Bucket: endpoints.bucket }));
    checks.push({ name: 'bucket', ok: true, detail: `${endpoints.bucket} at ${endpoints.s3}` });
  } catch (error) {
    checks.push({ name: 'bucket', ok: false, detail: `${endpoints.bucket} at ${endpoints.s3}: ${(error as Error).name}` });
  }
  try {
    await dynamodb.send(new DescribeTableCommand({ TableName: endpoints.ledgerTable }));
    checks.push({ name: 'ledger', ok: true, detail: `${endpoints.ledgerTable} at ${endpoints.dynamodb}` });
  } catch (error) {
    checks.push({ name: 'ledger', ok: false, detail: `${endpoints.ledgerTable} at ${endpoints.dynamodb}: ${(error as Error).name}` });
  } finally {
    s3.destroy();
    dynamodb.destroy();
  }
  return checks;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

// ---------------------------------------------------------------- command

/** One line per check: `PASS  name  detail`, FAIL, or SKIP for a check an earlier failure kept from running. */
export function formatChecks(checks: readonly DoctorCheck[]): string {
  const width = Math.max(...checks.map((c) => c.name.length));
  return checks.map((c) => `${c.skipped ? 'SKIP' : c.ok ? 'PASS' : 'FAIL'}  ${c.name.padEnd(width)}  ${c.detail}`).join('\n');
}

export async function runDoctorCommand(args: string[], io: { out?: (s: string) => void; awsClients?: DoctorAwsClients } = {}): Promise<number> {
  const out = io.out ?? ((s: string) => console.log(s));
  const print = { out, error: io.out ?? ((s: string) => console.error(s)) };
  return runCommand(DOCTOR_COMMAND, args, async ({ values }) => runDoctor(doctorOptions(values), out, io.awsClients), print);
}

async function runDoctor(options: DoctorArgs, out: (s: string) => void, awsClients: DoctorAwsClients | undefined): Promise<number> {
  let checks: DoctorCheck[];
  if (options.stack) {
    const config = options.region ? { region: options.region } : {};
    const clients = awsClients ?? {
      cloudformation: new CloudFormationClient(config),
      secrets: new SecretsManagerClient(config),
      s3: new S3Client(config),
      events: new EventBridgeClient(config),
      sqs: new SQSClient(config),
    };
    checks = await doctorStack(options.stack, clients);
  } else {
    checks = await doctorLocal({
      stateDir: options.stateDir ?? '.local',
      ...(options.token ? { token: options.token } : {}),
      ...(options.email ? { email: options.email } : {}),
      ...(process.env.MAPFLOW_TOKEN ? { envToken: process.env.MAPFLOW_TOKEN } : {}),
      ...(process.env.MAPFLOW_EMAIL ? { envEmail: process.env.MAPFLOW_EMAIL } : {}),
      routesFile: options.routes,
    });
  }
  out(formatChecks(checks));
  return checks.every((c) => c.ok) ? DOCTOR_EXIT_CODES.passed : DOCTOR_EXIT_CODES.failed;
}

type DoctorArgs = { stack?: string; region?: string; local?: boolean; stateDir?: string; token?: string; email?: string; routes?: string };

/** The options, or a UsageError when they do not say which bridge. */
function doctorOptions(values: OptionValues<typeof DOCTOR_COMMAND.options>): DoctorArgs {
  const parsed: DoctorArgs = {
    ...(values.stack ? { stack: values.stack } : {}),
    ...(values.region ? { region: values.region } : {}),
    ...(values.local ? { local: true } : {}),
    ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
    ...(values.token ? { token: values.token } : {}),
    ...(values.email ? { email: values.email } : {}),
    ...(values.routes ? { routes: values.routes } : {}),
  };
  if (Boolean(parsed.stack) === Boolean(parsed.local)) throw new UsageError('give either --stack <name> or --local');
  if (parsed.local && parsed.region) throw new UsageError('--region only applies with --stack');
  if (parsed.stack && (parsed.token || parsed.stateDir || parsed.routes)) throw new UsageError('--token, --state-dir and --routes only apply with --local (a stack reads its secret and routes)');
  return parsed;
}
