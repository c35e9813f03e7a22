/**
 * Mapflow's refusals of a request (cost estimate, create, upload) as
 * rejections that say what to fix. One classification for every call, so a
 * check the server makes on the cost call (a provider's minimum area: the
 * official plugin notes "for credits billing this rides along on the /cost
 * response", mapflow-qgis functional/service/processing_service.py) ends the
 * job REJECTED with the same code as on the create.
 */
import { BridgeError, InputRejected } from '../core/errors.ts';
import { AUTH_ERROR_CODES, isRouteNotFound } from '../mapflow/index.ts';
import { HOW_TO_RETRY } from './outcome.ts';
import { errorName, mapflowErrorInfo } from './common.ts';

/** Advice shared by the server's and the bridge's own AOI-count check. */
export const TOO_MANY_AOIS_ADVICE =
  'merge the polygons into fewer ones, or process them as separate processings with "splitFeatures": true in the file\'s "mapflow" member or the route';

/**
 * What a refused request becomes, or undefined when the failure is not a
 * refusal of the request itself. Mapflow's server sends these codes
 * (package `io.geoalert.mapflow.exception`, `Validations`): TOO_LARGE_PROCESSING
 * (400, over aoiAreaLimit), AREA_LIMIT_EXCEEDED (400, the account's
 * accumulated area limit), ACCESS_DENIED (403, a data provider not granted),
 * FORBIDDEN (403, the account suspended by a team policy: `canRunProcessing`),
 * NOT_FOUND (404, e.g. "WorkflowDef not found by id"), BAD_REQUEST (400, the
 * server's own checks, "Too many AOI geometries" among them); BAD_TOKEN and the
 * other authentication errors are MapflowAuthError (the client) and keep the
 * token hint. Each maps to one bridge code with what to do.
 */
export function rejectionForRequestError(err: unknown, subject: string): BridgeError | undefined {
  const name = errorName(err);
  const { status, code, params, message } = mapflowErrorInfo(err);
  const detail = params && Object.keys(params).length ? ` (${Object.entries(params).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')})` : '';
  const options = { cause: err, details: { mapflowCode: code, status } };
  if (code !== undefined && AUTH_ERROR_CODES.includes(code)) return undefined; // the token hint (outcome.ts)
  if (code === 'TOO_LARGE_PROCESSING') {
    return new InputRejected('AREA_TOO_LARGE', `Mapflow refused ${subject} as too large${detail}; split the area into smaller polygons (or set "splitFeatures": true).`, options);
  }
  if (code === 'AREA_LIMIT_EXCEEDED') {
    return new InputRejected(
      'INSUFFICIENT_CREDITS',
      `Mapflow refused ${subject}: the account's accumulated area limit would be exceeded (${message}); ask Mapflow to raise the account's area limit, or drop a smaller area.`,
      options,
    );
  }
  if (code === 'NOT_ENOUGH_CREDITS' || code === 'INSUFFICIENT_CREDITS' || (code === 'BAD_REQUEST' && /credit/i.test(message))) {
    return new InputRejected('INSUFFICIENT_CREDITS', `the Mapflow account has too few credits for ${subject}${detail}; top up the account or drop a smaller area.`, options);
  }
  if (code === 'ProviderMinAreaError') {
    return new InputRejected('AREA_TOO_SMALL', `the imagery provider needs a larger area than ${subject}${detail}; draw a larger polygon or use another source.`, options);
  }
  // The server: BadRequest("Too many AOI geometries. One processing can have up to N geometries") (ProcessingService.scala).
  if (name === 'MapflowRequestError' && /too many aoi/i.test(message)) {
    return new InputRejected('TOO_MANY_AOIS', `Mapflow refused ${subject}: ${message}; ${TOO_MANY_AOIS_ADVICE}.`, options);
  }
  if (status === 403 && code === 'FORBIDDEN') {
    // Not the file's fault, and nothing to fix in the route: the job FAILS with a code of its own.
    return new BridgeError(
      'ACCOUNT_SUSPENDED',
      `ACCOUNT_SUSPENDED: Mapflow does not let this account run processings (${message}); the account is suspended (e.g. by its team's membership policy): ask the team owner or Mapflow to reactivate it, then ${HOW_TO_RETRY}.`,
      { cause: err },
    );
  }
  if (status === 403) {
    return new InputRejected(
      'UNKNOWN_PROVIDER',
      `Mapflow does not allow this account to run ${subject} as requested (${message}); the imagery provider is probably not linked to the account: choose another source or ask Mapflow to enable it.`,
      options,
    );
  }
  if (status === 404 && !isRouteNotFound(err)) {
    if (/workflow\s*def/i.test(message)) {
      return new InputRejected('UNKNOWN_MODEL', `Mapflow does not know the model of ${subject} (${message}); it is no longer linked to the account: set the route's "model" to one the account has.`, options);
    }
    if (/data\s*provider/i.test(message)) {
      return new InputRejected('UNKNOWN_PROVIDER', `Mapflow does not know the imagery provider of ${subject} (${message}); choose one the account has.`, options);
    }
    return new InputRejected('PROCESSING_REJECTED', `Mapflow could not find something ${subject} refers to (${message}); check the route's project, model and source.`, options);
  }
  // The server's v1 create answers an unknown model with a 400 BAD_REQUEST "Workflow Definition not found"
  // (RunProcessingService, issue 36 point 8), not the 404 of checkWorkflowDefPermission: the same rejection.
  if (name === 'MapflowRequestError' && status === 400 && /workflow\s*def\w*\s+not\s+found/i.test(message)) {
    return new InputRejected('UNKNOWN_MODEL', `Mapflow does not know the model of ${subject} (${message}); it is not linked to the account: set the route's "model" to one the account has.`, options);
  }
  if (name === 'MapflowRequestError' && (status === 400 || status === 422)) {
    return new InputRejected('PROCESSING_REJECTED', `Mapflow refused ${subject}: ${message}${detail}. Check the route's source, model, blocks and inferenceParams.`, options);
  }
  return undefined;
}
