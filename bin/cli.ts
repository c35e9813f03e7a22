/**
 * `mapflow-bridge <command>`: the command line. Each command lives with the
 * part of the project it drives; this file only routes and prints usage.
 */
const USAGE = `Usage: mapflow-bridge <command> [options]

Commands:
  start                 run the whole bridge locally and watch the drop folder (npm start)
  local run FILE...     drop files through the local pipeline once, print a summary
  jobs list|show        read the job ledger (local, or a deployed table)
  sim                   run the Mapflow simulator on 127.0.0.1
  bench                 run the benchmarks (npm run bench)

Run 'mapflow-bridge <command> --help' for a command's options.`;

type Command = (args: string[]) => Promise<number>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  sim: async () => (await import('../local/simulator/cli.ts')).runSimCommand,
  start: async () => (await import('../local/cli/start.ts')).runStartCommand,
  local: async () => (await import('../local/cli/run.ts')).runLocalCommand,
  jobs: async () => (await import('../local/cli/jobs.ts')).runJobsCommand,
  bench: async () => (await import('../bench/index.ts')).runBenchCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name ? 0 : 2;
  }
  const load = COMMANDS[name];
  if (!load) {
    console.error(`mapflow-bridge: unknown command '${name}'\n\n${USAGE}`);
    return 2;
  }
  const command = await load();
  return command(rest);
}
