/**
 * `.waitForTaskToken` for the local engine. aws-local-stepfunctions 3.0 has no
 * callback pattern (no `$$.Task.Token`, no SendTaskSuccess), so the engine
 * gives each invocation of a waiting Task state a fresh token, and this
 * registry settles it when SendTaskSuccess / SendTaskFailure arrive.
 *
 * The functions call SendTaskSuccess through the real AWS SDK, exactly as on
 * AWS: the local Step Functions endpoint (packages/local/src/assembly/services.ts) settles
 * the token here. Unknown or settled tokens answer TaskDoesNotExist, as AWS
 * does for a stopped execution.
 */
import { randomBytes } from 'node:crypto';

interface Pending {
  execution: string;
  resolve(output: unknown): void;
  reject(error: Error): void;
}

/** A task that failed through SendTaskFailure: Error and Cause as given. */
export class TaskFailure extends Error {
  constructor(error: string, cause: string) {
    super(cause);
    this.name = error || 'TaskFailed';
  }
}

export class TaskTokenError extends Error {
  constructor(readonly code: 'TaskDoesNotExist' | 'InvalidOutput', message: string) {
    super(message);
    this.name = code;
  }
}

export class LocalTaskTokens {
  private readonly pending = new Map<string, Pending>();

  /** A new token for one invocation of a waiting state of `execution` (its name). */
  create(execution: string): { token: string; settled: Promise<unknown> } {
    const token = `local-token-${randomBytes(24).toString('base64url')}`;
    const settled = new Promise<unknown>((resolve, reject) => {
      this.pending.set(token, { execution, resolve, reject });
    });
    // Nobody may be listening yet when a token is failed early.
    settled.catch(() => undefined);
    return { token, settled };
  }

  /** SendTaskSuccess: `output` is a JSON text. */
  succeed(token: string, output: string): void {
    let parsed: unknown;
    try {
      parsed = JSON.parse(output);
    } catch {
      throw new TaskTokenError('InvalidOutput', 'The output is not JSON.');
    }
    this.take(token).resolve(parsed);
  }

  /** SendTaskFailure. */
  fail(token: string, error: string, cause: string): void {
    this.take(token).reject(new TaskFailure(error, cause));
  }

  /** SendTaskHeartbeat: the token must still wait. */
  heartbeat(token: string): void {
    if (!this.pending.has(token)) throw new TaskTokenError('TaskDoesNotExist', 'Task does not exist anymore');
  }

  /** Forgets a token whose invocation failed (the state fails on the Lambda's error instead). */
  forget(token: string): void {
    this.pending.delete(token);
  }

  /** The execution stopped: its tokens are gone (later sends answer TaskDoesNotExist). */
  abortExecution(execution: string): void {
    for (const [token, entry] of this.pending) {
      if (entry.execution !== execution) continue;
      this.pending.delete(token);
      entry.reject(new Error('The execution was stopped.'));
    }
  }

  /** Tokens still waiting (tests, diagnostics). */
  waiting(): number {
    return this.pending.size;
  }

  private take(token: string): Pending {
    const entry = this.pending.get(token);
    if (!entry) throw new TaskTokenError('TaskDoesNotExist', 'Task does not exist anymore');
    this.pending.delete(token);
    return entry;
  }
}
