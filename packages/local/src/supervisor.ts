/**
 * The bridge supervises the services it starts as child processes (issue 39,
 * point 3): DynamoDB Local's JVM and s3rver. When one dies (killed, crashed),
 * its exit event (not a poll) makes the bridge say so in one line naming it,
 * and start it again on the same state: the same port and data folder, so
 * every client (the functions, the gate, the drop folder, a user's AWS CLI)
 * keeps its endpoint, and jobs go on once it answers. Restarts are bounded:
 * more than `maxRestarts` within `windowMs`, or a restart that fails, stops
 * the bridge cleanly through `onGiveUp`, with the command to run.
 */
export interface ServiceExitInfo {
  pid: number | undefined;
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SupervisorOptions<T> {
  /** How the lines name it, e.g. "DynamoDB Local (the ledger)". */
  name: string;
  /** Where it runs, e.g. "port 8000, data in state/dynamodb". */
  where: (service: T) => string;
  /** Starts it (again); `onExit` is its unexpected exit. A restart must come up on the same port and data. */
  start: (onExit: (exit: ServiceExitInfo) => void) => Promise<T>;
  log: (message: string) => void;
  /** Called once when the bridge should stop: restarts exhausted, or one failed. The message says what to do. */
  onGiveUp: (message: string) => void;
  /** At most this many restarts within windowMs (default 3 in 10 minutes). */
  maxRestarts?: number;
  windowMs?: number;
  /** What to run to start again, for the message when it gives up. */
  restartCommand?: string;
}

export interface Supervised<T> {
  /** The running instance (the latest one after a restart). */
  current(): T;
  /** Resolves at once while it runs; while it restarts, once it is back (or never, once given up). */
  ready(): Promise<void>;
  /** True while the service is down (died, not back yet). */
  down(): boolean;
  /** Restarts made so far. */
  readonly restarts: number;
  close(): Promise<void>;
}

export async function supervise<T extends { close(): Promise<void> }>(options: SupervisorOptions<T>): Promise<Supervised<T>> {
  const maxRestarts = options.maxRestarts ?? 3;
  const windowMs = options.windowMs ?? 10 * 60_000;
  const restartsAt: number[] = [];
  let closed = false;
  let givenUp = false;
  let restarts = 0;
  let back: { promise: Promise<void>; resolve: () => void } | undefined;
  let current: T;

  const onExit = (exit: ServiceExitInfo): void => {
    if (closed || givenUp) return;
    const how = exit.signal ? `killed by ${exit.signal}` : `exited with code ${exit.code}`;
    const now = Date.now();
    while (restartsAt.length > 0 && now - restartsAt[0]! > windowMs) restartsAt.shift();
    let resolve!: () => void;
    const promise = new Promise<void>((r) => (resolve = r));
    back = { promise, resolve };
    if (restartsAt.length >= maxRestarts) {
      const deaths = restartsAt.length + 1;
      giveUp(`${options.name} (pid ${exit.pid ?? '?'}) ${how}: ${deaths} ${deaths === 1 ? 'death' : 'deaths'} within ${Math.round(windowMs / 60_000)} minutes, so it is not restarted again`);
      return;
    }
    restartsAt.push(now);
    const where = options.where(current);
    options.log(`local bridge: ${options.name} (pid ${exit.pid ?? '?'}) ${how}; jobs wait while it restarts on the same state (${where}), attempt ${restartsAt.length} of ${maxRestarts}`);
    const startedAt = Date.now();
    options.start(onExit).then(
      async (next) => {
        if (closed) {
          await next.close().catch(() => undefined);
          return;
        }
        current = next;
        restarts++;
        back = undefined;
        options.log(`local bridge: ${options.name} is back (${options.where(next)}) after ${((Date.now() - startedAt) / 1000).toFixed(1)} s; jobs go on`);
        resolve();
      },
      (error: unknown) => giveUp(`${options.name} ${how} and did not start again: ${(error as Error)?.message ?? String(error)}`),
    );
  };

  const giveUp = (why: string): void => {
    if (givenUp || closed) return;
    givenUp = true;
    const command = options.restartCommand ? ` Run \`${options.restartCommand}\` to start again: jobs in flight resume where they stopped.` : '';
    options.onGiveUp(`local bridge: ${why}; stopping the bridge.${command}`);
  };

  current = await options.start(onExit);
  return {
    current: () => current,
    ready: () => back?.promise ?? Promise.resolve(),
    down: () => back !== undefined,
    get restarts() {
      return restarts;
    },
    async close() {
      closed = true;
      back?.resolve();
      await current.close();
    },
  };
}
