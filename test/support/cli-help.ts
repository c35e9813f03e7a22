/**
 * `mapflow-bridge <command> --help` for many commands in one process (the
 * README commands test): the CLI's own `main`, loaded through tsx as
 * packages/cli/bin/mapflow-bridge.mjs loads it, once, instead of one Node process per
 * command (each costs about 2 s of CPU, mostly loading modules).
 *
 * Usage: node test/support/cli-help.ts '[["jobs","list"],["local","run"]]'
 * Prints one JSON object: "<command words>" -> { code, output } (stdout and
 * stderr together, as a user sees them).
 */
import { register } from 'tsx/esm/api';

register();
const { main } = (await import('../../packages/cli/src/main.ts')) as { main: (argv: string[]) => Promise<number> };
const commands = JSON.parse(process.argv[2] ?? '[]') as string[][];
const answers: Record<string, { code: number; output: string }> = {};
const stdoutWrite = process.stdout.write.bind(process.stdout);
const stderrWrite = process.stderr.write.bind(process.stderr);
for (const command of commands) {
  let output = '';
  const capture = ((chunk: string | Uint8Array) => {
    output += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return true;
  }) as typeof process.stdout.write;
  process.stdout.write = capture;
  process.stderr.write = capture;
  let code: number;
  try {
    // The benchmarks are a package of their own (npm run bench), not a command of the CLI.
    code = command[0] === 'bench' ? await (await import('../../packages/bench/index.ts')).runBenchCommand([...command.slice(1), '--help']) : await main([...command, '--help']);
  } catch (error) {
    output += String((error as Error).stack ?? error);
    code = 1;
  } finally {
    process.stdout.write = stdoutWrite;
    process.stderr.write = stderrWrite;
  }
  answers[command.join(' ')] = { code, output };
}
stdoutWrite(`${JSON.stringify(answers)}\n`);
