/**
 * Register Job: the first task of every execution. Resolves the route and the
 * kind of input, and creates the job's ledger row (once: a re-delivered event
 * or a retried task finds the same row). A job whose row is already final is
 * reported `alreadyFinal` so the machine ends without redoing anything.
 *
 * Every object dispatch starts gets its row and its Job Received event, even
 * one it cannot take: a key with '.', '..' or empty segments or control
 * characters (INVALID_KEY) or a file type the bridge does not handle
 * (UNSUPPORTED_FILE_TYPE, kind 'unsupported') is then rejected here, and Fail
 * Job writes its report and Job Rejected event like any other rejection.
 */
import { ConfigurationError, InputRejected } from '../../core/errors.ts';
import { HOW_TO_RETRY } from '../outcome.ts';
import { EVENT_DETAIL_TYPES, isFinalStatus, type LedgerRow, type PlannedRoute } from '../../core/model.ts';
import type { RegisterResult, WorkflowState } from '../workflow.ts';
import { DEFAULT_GEOJSON_MODEL, invalidKeyRejection, recordedKind, resolveRoute, type Route } from '../../routing/index.ts';
import { slotHolder, waiterOrder } from '../../ledger/slots.ts';
import { publishRow } from '../common.ts';
import type { StepContext } from '../context.ts';

/** The part Admit Job admits (plan parts are numbered from 0). */
const FIRST_PART_INDEX = 0;

/** Route name recorded for a job whose key matches no route. */
export const NO_ROUTE_NAME = '-';

export async function registerJob(state: WorkflowState, ctx: StepContext): Promise<RegisterResult> {
  const { jobId, input } = state;
  const kind = recordedKind(input.key);
  const configured = resolveRoute(ctx.config.routes, input.key, ctx.config.prefixes.inbox);

  const { created, row } = await ctx.ledger.register({
    jobId,
    input,
    kind,
    routeName: configured?.name ?? NO_ROUTE_NAME,
    // The route as it is now, kept with the job: a restart with other routes resumes it on this one.
    ...(configured && { plannedRoute: configured as unknown as PlannedRoute }),
    ...(state.executionArn && { executionArn: state.executionArn }),
  });
  if (created) await publishRow(ctx, EVENT_DETAIL_TYPES.RECEIVED, row);
  else if (state.executionArn && row.executionArn !== state.executionArn && !isFinalStatus(row.status)) {
    await ctx.ledger.update(jobId, { executionArn: state.executionArn });
  }
  // A job registered before (a resume, a re-delivery) keeps the route it was registered with: never today's routes.
  const route = created ? configured : keptRoute(ctx, row);
  if (!created && route && configured && !isFinalStatus(row.status) && JSON.stringify(route) !== JSON.stringify(configured)) {
    ctx.logger.info('the routes changed since this job was registered; it keeps its route', { jobId, route: route.name, now: configured.name });
  }

  const processImages = kind === 'geotiff' && route?.processImages === true;
  const result: RegisterResult = {
    jobId,
    input,
    kind,
    routeName: row.routeName,
    ...(route && { route }),
    status: row.status,
    alreadyFinal: isFinalStatus(row.status),
    processImages,
    hasModel: kind === 'geojson' || processImages,
    ...((state.executionArn ?? row.executionArn) && { executionArn: state.executionArn ?? row.executionArn }),
    createdAt: row.createdAt,
  };
  if (result.alreadyFinal) {
    ctx.logger.info('job already final; nothing to do', { jobId, status: row.status });
    return result;
  }
  // Before anything is spent: a key whose job could not write its results on S3 is refused now.
  const invalidKey = invalidKeyRejection(input.key, ctx.config.prefixes);
  if (invalidKey) throw invalidKey;
  if (kind === 'unsupported') {
    throw new InputRejected(
      'UNSUPPORTED_FILE_TYPE',
      `${JSON.stringify(input.key.slice(ctx.config.prefixes.inbox.length))} is neither GeoJSON (.geojson, .json) nor GeoTIFF (.tif, .tiff); the bridge takes only those file types; save it as one of them (its new name makes it a new job).`,
    );
  }
  if (!route && row.routeName !== NO_ROUTE_NAME) {
    // Registered by an older version on a route that is gone since: never run it on another route than its records name.
    throw new ConfigurationError(`route '${row.routeName}' of this job is no longer configured; add it back to ROUTES, then ${HOW_TO_RETRY}`);
  }
  if (!route) {
    const rel = input.key.slice(ctx.config.prefixes.inbox.length);
    throw new InputRejected(
      'NO_ROUTE',
      `no route matches '${rel}'. Drop the file into a folder that has a route (${ctx.config.routes.routes.map((r) => `'${r.prefix || '(inbox root)'}'`).join(', ')}), or add a route for it to ROUTES.`,
    );
  }
  if (kind === 'geotiff' && processImages && !route.model) {
    // processImages without a model: process with the default model, as GeoJSON does.
    ctx.logger.info('route processes images without naming a model; using the default', { route: route.name, model: DEFAULT_GEOJSON_MODEL });
  }
  if (kind === 'geojson') {
    // Admission is first come, first served by arrival: the job takes its place in the
    // queue now, so a later job cannot overtake it while it is in Plan Processing
    // (docs/architecture.md, "Admission"). A GeoTIFF arrives at Admit Job, once its image is ready.
    await ctx.slots.reserve({
      holder: slotHolder(jobId, FIRST_PART_INDEX),
      order: waiterOrder(row.createdAt, jobId, FIRST_PART_INDEX),
      executionArn: state.executionArn ?? row.executionArn ?? jobId,
    });
  }
  return result;
}

/**
 * The route of a job registered before: the one its row keeps; for a row of an
 * older version (no `plannedRoute`), the route of that name if it is still
 * configured. Undefined for a job that matched no route, or whose route is gone
 * (a later step then says so: routeOf).
 */
function keptRoute(ctx: StepContext, row: LedgerRow): Route | undefined {
  if (row.plannedRoute) return row.plannedRoute as unknown as Route;
  return ctx.config.routes.routes.find((r) => r.name === row.routeName);
}
