/** `npm run bench [-- options]`: the benchmarks' entry (index.ts holds the command). */
import { runBenchCommand } from './index.ts';

process.exitCode = await runBenchCommand(process.argv.slice(2));
