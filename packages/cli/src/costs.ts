/**
 * `mapflow-bridge costs`: credits spent, from the ledger, by day, route or
 * model. Spent = what Mapflow charged, whatever the job's end: a job's
 * `actualCost`, else the sum of its parts' costs (a job cancelled or failed
 * part-way keeps what its finished parts cost; functions/core/credits.ts).
 * Jobs still running show the estimate of what is not charged yet apart;
 * rejected jobs cost 0. A column per end status (and one for jobs in flight),
 * so the counts add up to JOBS.
 */
import { DEFAULT_GEOJSON_MODEL, parseRoutes, type Routes } from 'mapflow-bridge/functions/routing/index.ts';
import type { LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import { isFinalStatus } from 'mapflow-bridge/functions/core/model.ts';
import { jobCost, round2 } from 'mapflow-bridge/functions/core/credits.ts';
import { readFile } from 'node:fs/promises';
import { parseSince, scanJobs } from './export.ts';
import { table } from './format.ts';
import { openLedger } from './jobs.ts';
import { LEDGER_OPTIONS, ledgerChoice, OPTIONS, runCommand, usageOf, UsageError, type CliOptions, type CommandLine } from './args.ts';

export type CostGrouping = 'day' | 'route' | 'model';
export const COST_GROUPINGS: readonly CostGrouping[] = ['day', 'route', 'model'];

export interface CostLine {
  key: string;
  jobs: number;
  succeeded: number;
  failed: number;
  rejected: number;
  cancelled: number;
  /** Jobs not ended yet. */
  inFlight: number;
  /** Credits Mapflow charged (jobs of every status). */
  credits: number;
  /** Estimated credits of jobs in flight with no charge known yet. */
  inFlightEstimate: number;
}

export interface CostReport {
  by: CostGrouping;
  since?: string;
  lines: CostLine[];
  total: Omit<CostLine, 'key'>;
}

/** The model a job ran (from the routes: the route's model, else the default GeoJSON model; GeoTIFFs upload-only without one). */
export function modelOf(row: Pick<LedgerRow, 'routeName' | 'kind'>, routes: Routes): string {
  const route = routes.routes.find((r) => r.name === row.routeName);
  if (row.kind === 'geotiff' && !route?.processImages) return '(upload only)';
  return route?.model ?? DEFAULT_GEOJSON_MODEL;
}

const emptyLine = (): Omit<CostLine, 'key'> => ({ jobs: 0, succeeded: 0, failed: 0, rejected: 0, cancelled: 0, inFlight: 0, credits: 0, inFlightEstimate: 0 });

export async function costReport(rows: AsyncIterable<LedgerRow>, by: CostGrouping, options: { since?: string; routes?: string } = {}): Promise<CostReport> {
  const routes = parseRoutes(options.routes);
  const lines = new Map<string, CostLine>();
  const total = emptyLine();
  for await (const row of rows) {
    const key = by === 'day' ? (row.finishedAt ?? row.createdAt).slice(0, 10) : by === 'route' ? row.routeName : modelOf(row, routes);
    const line = lines.get(key) ?? { key, ...emptyLine() };
    const cost = jobCost(row);
    for (const target of [line, total]) {
      target.jobs++;
      if (row.status === 'SUCCEEDED') target.succeeded++;
      else if (row.status === 'FAILED') target.failed++;
      else if (row.status === 'REJECTED') target.rejected++;
      else if (row.status === 'CANCELLED') target.cancelled++;
      else target.inFlight++;
      if (cost?.kind === 'charged') target.credits += cost.credits;
      else if (cost && !isFinalStatus(row.status)) target.inFlightEstimate += cost.credits;
    }
    lines.set(key, line);
  }
  const sorted = [...lines.values()]
    .map((l) => ({ ...l, credits: round2(l.credits), inFlightEstimate: round2(l.inFlightEstimate) }))
    .sort((a, b) => (by === 'day' ? a.key.localeCompare(b.key) : b.credits - a.credits || a.key.localeCompare(b.key)));
  return { by, ...(options.since ? { since: options.since } : {}), lines: sorted, total: { ...total, credits: round2(total.credits), inFlightEstimate: round2(total.inFlightEstimate) } };
}

export function formatCostReport(report: CostReport): string {
  if (report.total.jobs === 0) return `No jobs${report.since ? ` since ${report.since}` : ''}.`;
  const header = [report.by.toUpperCase(), 'JOBS', 'SUCCEEDED', 'FAILED', 'REJECTED', 'CANCELLED', 'IN FLIGHT', 'CREDITS CHARGED', 'NOT CHARGED YET (EST.)'];
  const cells = (key: string, l: Omit<CostLine, 'key'>) => [
    key,
    String(l.jobs),
    String(l.succeeded),
    String(l.failed),
    String(l.rejected),
    String(l.cancelled),
    String(l.inFlight),
    String(l.credits),
    l.inFlightEstimate ? String(l.inFlightEstimate) : '',
  ];
  return table([header, ...report.lines.map((l) => cells(l.key, l)), cells('total', report.total)]);
}

export const COSTS_COMMAND = {
  name: 'costs',
  synopsis: `Usage: mapflow-bridge costs [--by day|route|model] [--since <when>] [--json]

Credits spent, from the job ledger: what Mapflow charged, by day (of the job's
end), route or model, whatever the job's end (a job cancelled or failed part-way
counts what its parts were charged); jobs still running with no charge known
show their estimate apart. One column per end status: the counts add up to JOBS.`,
  options: {
    by: { type: 'string', value: '<grouping>', help: 'day (default), route or model' },
    since: { type: 'string', value: '<when>', help: 'jobs created since a date (2025-05-01), a time or an age (24h, 7d)' },
    routes: { ...OPTIONS.routes, help: 'the routes JSON the bridge runs with (for --by model; default the built-in routes)' },
    json: OPTIONS.json,
    ...LEDGER_OPTIONS,
    help: OPTIONS.help,
  },
} as const satisfies CommandLine<CliOptions>;

export const COSTS_USAGE = usageOf(COSTS_COMMAND);

export async function runCostsCommand(args: string[]): Promise<number> {
  return runCommand(COSTS_COMMAND, args, async ({ values }) => {
    const by = (values.by ?? 'day') as CostGrouping;
    if (!COST_GROUPINGS.includes(by)) throw new UsageError(`--by must be one of ${COST_GROUPINGS.join(', ')}`);
    let since: string | undefined;
    let routes: string | undefined;
    try {
      since = values.since ? parseSince(values.since) : undefined;
      routes = values.routes ? await readFile(values.routes, 'utf8') : process.env.ROUTES;
      parseRoutes(routes);
    } catch (error) {
      throw new UsageError((error as Error).message, { cause: error });
    }
    let source;
    try {
      source = await openLedger({ ...ledgerChoice(values), command: 'mapflow-bridge costs' });
    } catch (error) {
      console.error(`mapflow-bridge costs: ${(error as Error).message}`);
      return 1;
    }
    try {
      const report = await costReport(scanJobs(source.doc, source.table, since ? { since } : {}), by, { ...(since ? { since } : {}), ...(routes ? { routes } : {}) });
      console.log(values.json ? JSON.stringify(report, null, 2) : formatCostReport(report));
      return 0;
    } catch (error) {
      console.error(`mapflow-bridge costs: cannot read ${source.description}: ${(error as Error).name}: ${(error as Error).message}`);
      return 1;
    } finally {
      await source.close();
    }
  });
}
