/**
 * The local S3: s3rver on 127.0.0.1, run in a child process (see
 * s3rver-process.cjs for why), with its object-created notifications handed
 * to the caller as S3-notification-shaped records — the same shape the AWS
 * trigger decodes.
 *
 * Keys with '.', '..' or empty path segments, or control characters, are
 * refused with 400 before they reach s3rver's file store (which joins keys
 * into file paths): nothing can be written outside the bucket folder.
 *
 * Every request passes the gate first (packages/local/src/auth/gate.ts, asked over IPC by
 * s3rver's process): signed with credentials of `credentials` (the store),
 * for Host 127.0.0.1:<port>, from no browser, and allowed by the signer's
 * policies; else S3's own 403.
 *
 * While the state folder's disk is full (`disk`, disk-watch.ts), the verdict
 * of a write (PUT, POST, DELETE) is held until space is back, and a write
 * that met ENOSPC in s3rver is made again then (s3rver-process.cjs): S3 on
 * AWS does not fail a job for a full local disk.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { CredentialStore, type IssuedCredentials } from '../auth/credentials.ts';
import type { IncomingSignedRequest, Refusal, S3Authorizer, Verdict } from '../auth/gate.ts';
import { retryAfterNoSpace, type DiskHold } from '../disk-watch.ts';

/** One record of an S3 notification (the fields the bridge reads). */
export interface S3NotificationRecord {
  eventName: string;
  eventTime?: string;
  s3: {
    bucket: { name: string };
    object: { key: string; size?: number; eTag?: string; versionId?: string; sequencer?: string };
  };
}

export interface LocalS3Options {
  /** Where s3rver keeps buckets and objects (persisted across restarts when it is). */
  directory: string;
  /** Buckets created on start when missing. */
  buckets: string[];
  /** Default 0: a free port. */
  port?: number;
  /** Called for every notification record s3rver emits (created and removed). */
  onRecord?: (record: S3NotificationRecord) => void;
  /** How long to wait for the server to come up. */
  startTimeoutMs?: number;
  /**
   * Who may sign requests (the gate's credentials). Default: a fresh
   * in-memory store; its user's credentials are `LocalS3.credentials`.
   */
  credentials?: CredentialStore;
  /** Told of every request the gate refused. */
  onRefused?: (refusal: Refusal, request: IncomingSignedRequest) => void;
  /**
   * Tests: hold every notification this long before it is handed over, as a
   * loaded machine does (the answer to the upload reaches the client first).
   * Default 0.
   */
  notificationDelayMs?: number;
  /**
   * Buckets versioned from the start (as PutBucketVersioning Enabled would
   * make them): see s3rver-versions.cjs. The setting stays in the folder.
   */
  versionedBuckets?: string[];
  /** The disk under `directory`: writes wait while it is full (see above). Default: none, they fail as s3rver answers. */
  disk?: DiskHold;
  /**
   * A folder for V8's code cache of s3rver's modules (Node's
   * module.enableCompileCache): each start after the first loads them
   * without compiling them again. Default: none, compiled on every start.
   */
  compileCacheDir?: string;
  /** Told when s3rver's process exits once it is ready, other than through close() (killed, crashed): the child's exit event. */
  onUnexpectedExit?: (exit: { pid: number | undefined; code: number | null; signal: NodeJS.Signals | null }) => void;
}

export interface LocalS3 {
  /** http://127.0.0.1:PORT — use with path-style addressing (see localS3Client). */
  readonly endpoint: string;
  readonly port: number;
  /** s3rver's process id. */
  readonly pid: number | undefined;
  /** The user's full-access credentials (for localS3Client). */
  readonly credentials: IssuedCredentials;
  /** The gate's credential store: addPrincipal gives a role's credentials. */
  readonly store: CredentialStore;
  /**
   * Resolves once every notification of a request the local S3 answered
   * before this call has been handed to `onRecord`. The notification travels
   * from s3rver's process over IPC and can arrive after the client has its
   * answer; this round trip through the same ordered channel is the barrier.
   */
  flushNotifications(): Promise<void>;
  /** PutBucketVersioning, for the bridge (the template's versioned bucket): kept in the bucket's folder. */
  setVersioning(bucket: string, status: 'Enabled' | 'Suspended'): Promise<void>;
  close(): Promise<void>;
}

const CHILD_SCRIPT = fileURLToPath(new URL('./s3rver-process.cjs', import.meta.url));

/** Thrown when s3rver cannot start (port taken, directory not writable...). */
export class LocalS3StartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'LocalS3StartError';
  }
}

/** The requests that may write to s3rver's folder. */
const WRITE_METHODS: ReadonlySet<string> = new Set(['PUT', 'POST', 'DELETE']);

export async function startLocalS3(options: LocalS3Options): Promise<LocalS3> {
  await mkdir(options.directory, { recursive: true });
  const disk = options.disk;
  const store = options.credentials ?? CredentialStore.inMemory();
  let listeningPort: number | undefined;
  // Loaded while s3rver starts (the SDK's signer is half a second of module loading on a busy machine).
  const authorizer = import('../auth/gate.ts').then(({ s3Authorizer }) =>
    s3Authorizer({ store, listening: () => listeningPort, ...(options.onRefused ? { onRefused: options.onRefused } : {}) }),
  );
  authorizer.catch(() => undefined); // a failure answers every request below
  const child = fork(
    CHILD_SCRIPT,
    [
      JSON.stringify({
        address: '127.0.0.1',
        port: options.port ?? 0,
        directory: options.directory,
        buckets: options.buckets,
        notificationDelayMs: options.notificationDelayMs ?? 0,
        versionedBuckets: options.versionedBuckets ?? [],
        ...(options.compileCacheDir ? { compileCacheDir: options.compileCacheDir } : {}),
      }),
    ],
    {
      // Only the legacy provider flag: the parent's tsx loader flags are not needed
      // by a CommonJS script and NODE_OPTIONS stays as the user set it.
      execArgv: ['--openssl-legacy-provider'],
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-4000);
  });

  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill();
      reject(new LocalS3StartError(`s3rver did not start within ${options.startTimeoutMs ?? 20_000} ms. ${stderr}`));
    }, options.startTimeoutMs ?? 20_000);
    child.on('message', (message: ChildMessage) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        listeningPort = message.port;
        resolve(message.port);
      } else if (message.type === 'error') {
        clearTimeout(timer);
        reject(new LocalS3StartError(`s3rver failed to start: ${message.message}`));
      } else if (message.type === 'event') {
        for (const record of message.event.Records ?? []) options.onRecord?.(record);
      }
    });
    child.on('message', (message: ChildMessage) => {
      if (message.type !== 'authorize') return;
      const answer = (verdict: Verdict | Awaited<ReturnType<S3Authorizer['missingKey']>>) => {
        if (child.connected) child.send({ type: 'verdict', id: message.id, verdict });
      };
      const judging = message.missingKey
        ? authorizer.then((gate) => gate.missingKey(message.request))
        : authorizer.then(async (gate) => {
            const verdict = await gate.authorize(message.request);
            // An admitted write waits for space; a refusal is answered at once.
            if (verdict.allowed && disk?.full && WRITE_METHODS.has(message.request.method.toUpperCase())) await disk.whenFree('the local S3');
            return verdict;
          });
      judging.then(answer, (error: unknown) =>
        // Fail closed: a gate that breaks refuses (and says why).
        answer({ allowed: false, status: 500, code: 'InternalError', message: `the gate failed: ${(error as Error).message}`, headers: { 'content-type': 'text/plain' }, body: `the gate failed: ${(error as Error).message}` }),
      );
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new LocalS3StartError(`s3rver exited with code ${code} before it was ready. ${stderr}`));
    });
  });

  // A write in s3rver met ENOSPC: its answer once space is back (or the hold gave up, or there is no disk watch).
  child.on('message', (message: ChildMessage) => {
    if (message.type !== 'disk-full') return;
    const waited = disk ? retryAfterNoSpace(disk, 'the local S3') : Promise.resolve(false);
    void waited.then(
      (free) => child.connected && child.send({ type: 'disk-free', id: message.id, free }),
      () => child.connected && child.send({ type: 'disk-free', id: message.id, free: false }),
    );
  });
  // Flushes in flight, by id; all of them resolve when the child goes away (nothing more can come).
  const flushes = new Map<number, () => void>();
  let nextFlush = 0;
  child.on('message', (message: ChildMessage) => {
    if (message.type === 'flushed') {
      flushes.get(message.id)?.();
      flushes.delete(message.id);
    }
  });
  child.once('exit', () => {
    for (const resolve of flushes.values()) resolve();
    flushes.clear();
  });
  // Versioning settings in flight, by id; all of them fail when the child goes away.
  const settings = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let nextSetting = 0;
  child.on('message', (message: ChildMessage) => {
    if (message.type !== 'versioned') return;
    const setting = settings.get(message.id);
    settings.delete(message.id);
    if (message.error) setting?.reject(new Error(`the local S3 could not set versioning: ${message.error}`));
    else setting?.resolve();
  });
  child.once('exit', () => {
    for (const { reject } of settings.values()) reject(new Error('the local S3 stopped before it set versioning'));
    settings.clear();
  });

  let closing = false;
  if (options.onUnexpectedExit) {
    const told = options.onUnexpectedExit;
    child.once('exit', (code, signal) => {
      if (!closing) told({ pid: child.pid, code, signal });
    });
  }

  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    pid: child.pid,
    credentials: { accessKeyId: store.user.accessKeyId, secretAccessKey: store.user.secretAccessKey },
    store,
    flushNotifications: () =>
      new Promise<void>((resolve) => {
        if (!child.connected) return resolve();
        const id = nextFlush++;
        flushes.set(id, resolve);
        child.send({ type: 'flush', id }, (error) => {
          if (error) {
            flushes.delete(id);
            resolve();
          }
        });
      }),
    setVersioning: (bucket, status) =>
      new Promise<void>((resolve, reject) => {
        if (!child.connected) return reject(new Error('the local S3 is not running'));
        const id = nextSetting++;
        settings.set(id, { resolve, reject });
        child.send({ type: 'versioning', id, bucket, status });
      }),
    close: () => {
      closing = true;
      return stopChild(child);
    },
  };
}

type ChildMessage =
  | { type: 'ready'; port: number }
  | { type: 'error'; message: string }
  | { type: 'event'; event: { Records?: S3NotificationRecord[] } }
  | { type: 'flushed'; id: number }
  | { type: 'versioned'; id: number; error?: string }
  | { type: 'authorize'; id: number; request: IncomingSignedRequest; missingKey?: boolean }
  | { type: 'disk-full'; id: number };

/** Asks the child to close, then waits for it to exit (kills it after a grace period). */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.connected) child.send({ type: 'close' });
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
