/**
 * Text formatting shared by the local commands: one line per job state, a
 * progress bar, a summary table. No colours or cursor tricks, so the output
 * reads the same in a terminal, a CI log or a file.
 */
import type { JobError, LedgerRow } from 'mapflow-bridge/functions/core/model.ts';
import { jobCost } from 'mapflow-bridge/functions/core/credits.ts';
import { partsDone } from 'mapflow-bridge/functions/core/progress.ts';
import { printable } from 'mapflow-bridge/functions/core/text.ts';

// Names and messages come from files and from Mapflow: every one printed goes through printable
// (functions/core/text.ts), here and in the commands, so none can drive the terminal.
export { printable };
import { DEFAULT_AREA_BUDGET_SQ_KM, DEFAULT_CREDIT_BUDGET, type Route } from 'mapflow-bridge/functions/routing/index.ts';

export function progressBar(percent: number, width = 20): string {
  const clamped = Math.max(0, Math.min(100, Math.round(percent)));
  const filled = Math.round((clamped / 100) * width);
  return `[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(clamped).padStart(3)}%`;
}

export function formatCost(cost: number | undefined): string {
  return cost === undefined ? '' : `${Number(cost.toFixed(2))} credits`;
}

export function formatError(error: JobError | undefined): string {
  return error ? printable(`${error.code}: ${error.message.replace(/^[A-Z][A-Z0-9_.]+: /, '')}`) : '';
}

/** The file a job was made from, relative to the inbox. */
export function inputName(row: Pick<LedgerRow, 'input'>): string {
  return printable(row.input.key.replace(/^inbox\//, ''));
}

/** Credits a job cost: what Mapflow charged when known (functions/core/credits.ts), else the estimate. */
export function costOf(row: LedgerRow): number | undefined {
  return jobCost(row)?.credits;
}

/** The job's cost as a cell: "45 credits", or "1117 credits (est.)" when nothing charged is known yet. */
export function formatJobCost(row: LedgerRow): string {
  const cost = jobCost(row);
  return cost ? `${formatCost(cost.credits)}${cost.kind === 'estimate' ? ' (est.)' : ''}` : '';
}

/**
 * What a job's percent is, said with it: the job's (every planned part, those
 * not started at 0 %), and for a split job how many parts are done:
 * "57% of job, 9 of 97 parts done".
 */
export function describeProgress(row: Pick<LedgerRow, 'percentCompleted' | 'parts' | 'partCount' | 'status'>): string {
  if (row.percentCompleted === undefined) return '';
  const percent = row.status === 'SUCCEEDED' ? 100 : row.percentCompleted;
  const { done, planned } = partsDone(row);
  return `${percent}% of job${planned > 1 ? `, ${done} of ${planned} parts done` : ''}`;
}

/** Columns padded to the widest cell; each cell printable (a name or message may hold control characters). */
export function table(cells: string[][]): string {
  const rows = cells.map((row) => row.map(printable));
  const widths = rows[0]?.map((_, column) => Math.max(...rows.map((row) => (row[column] ?? '').length))) ?? [];
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join('  ').trimEnd()).join('\n');
}

/** `HH:MM:SS` in local time: short, and the same in every locale. */
export function clock(at: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(at.getHours())}:${pad(at.getMinutes())}:${pad(at.getSeconds())}`;
}

/** A route's budgets as the handlers apply them (functions/jobs/steps/plan-processing.ts): its own, else the defaults. */
export function routeBudget(route: Pick<Route, 'creditBudget' | 'areaBudgetSqKm'>): { creditBudget: number; areaBudgetSqKm: number } {
  return { creditBudget: route.creditBudget ?? DEFAULT_CREDIT_BUDGET, areaBudgetSqKm: route.areaBudgetSqKm ?? DEFAULT_AREA_BUDGET_SQ_KM };
}

/** `default (inbox/) 100 credits or 100 km²; buildings (inbox/buildings/) ...`: each route's budget, on one line. */
export function formatRouteBudgets(routes: readonly Route[]): string {
  return routes
    .map((route) => {
      const budget = routeBudget(route);
      return `${route.name} (inbox/${route.prefix}) ${budget.creditBudget} credits or ${budget.areaBudgetSqKm} km²`;
    })
    .join('; ');
}
