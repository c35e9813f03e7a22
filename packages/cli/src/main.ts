/**
 * `mapflow-bridge <command>`: the command line. Each command lives with the
 * part of the project it drives; this file only routes and prints usage.
 */
const USAGE = `Usage: mapflow-bridge <command> [options]

Commands:
  start                 run the whole bridge locally and watch the drop folder (npm start)
  local run FILE...     drop files through the local pipeline once, print a summary
  jobs list|show|watch|export|retry|cancel
                        read the job ledger and act on jobs (local, or a deployed table/stack)
  costs                 credits spent, by day, route or model
  console               the jobs console in a browser (on 127.0.0.1)
  sim                   run the Mapflow simulator on 127.0.0.1
  doctor                check a deployed stack (--stack <name>) or the local bridge (--local)
  --version             the version, and the Node.js that runs the command (local mode's functions with it)

Run 'mapflow-bridge <command> --help' for a command's options.`;

type Command = (args: string[]) => Promise<number>;

const COMMANDS: Record<string, () => Promise<Command>> = {
  sim: async () => (await import('@mapflow-bridge/simulator/cli')).runSimCommand,
  start: async () => (await import('./start.ts')).runStartCommand,
  local: async () => (await import('./run.ts')).runLocalCommand,
  jobs: async () => (await import('./jobs.ts')).runJobsCommand,
  costs: async () => (await import('./costs.ts')).runCostsCommand,
  console: async () => (await import('./console/command.ts')).runConsoleCommand,
  doctor: async () => (await import('./doctor.ts')).runDoctorCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(USAGE);
    return name ? 0 : 2;
  }
  if (name === '--version' || name === 'version') {
    const { createRequire } = await import('node:module');
    const { version } = createRequire(import.meta.url)('../package.json') as { version: string };
    console.log(`mapflow-bridge ${version} (Node.js ${process.version})`);
    return 0;
  }
  const load = COMMANDS[name];
  if (!load) {
    console.error(`mapflow-bridge: unknown command '${name}'\n\n${USAGE}`);
    return 2;
  }
  const command = await load();
  return command(rest);
}
