/**
 * Mapflow's refusals of a request (cost estimate, create, upload) as
 * rejections that say what to fix. One classification for every call, so a
 * check the server makes on the cost call (a provider's minimum area: the
 * official plugin notes "for credits billing this rides along on the /cost
 * response", mapflow-qgis functional/service/processing_service.py) ends the
 * job REJECTED with the same code as on the create.
 */
import { InputRejected } from '../../core/errors.ts';
import { errorName, mapflowErrorInfo } from './common.ts';

/** Advice shared by the server's and the bridge's own AOI-count check. */
export const TOO_MANY_AOIS_ADVICE =
  'merge the polygons into fewer ones, or process them as separate processings with "splitFeatures": true in the file\'s "mapflow" member or the route';

/**
 * The rejection for a refused request about `subject` (e.g. "part 'x'"),
 * or undefined when the failure is not a refusal of the request itself.
 */
export function rejectionForRequestError(err: unknown, subject: string): InputRejected | undefined {
  const name = errorName(err);
  const { status, code, params, message } = mapflowErrorInfo(err);
  const detail = params && Object.keys(params).length ? ` (${Object.entries(params).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join(', ')})` : '';
  const options = { cause: err, details: { mapflowCode: code, status } };
  if (code === 'TOO_LARGE_PROCESSING') {
    return new InputRejected('AREA_TOO_LARGE', `Mapflow refused ${subject} as too large${detail}; split the area into smaller polygons (or set "splitFeatures": true).`, options);
  }
  if (code === 'NOT_ENOUGH_CREDITS' || code === 'INSUFFICIENT_CREDITS') {
    return new InputRejected('INSUFFICIENT_CREDITS', `the Mapflow account has too few credits for ${subject}${detail}; top up the account or drop a smaller area.`, options);
  }
  if (code === 'ProviderMinAreaError') {
    return new InputRejected('AREA_TOO_SMALL', `the imagery provider needs a larger area than ${subject}${detail}; draw a larger polygon or use another source.`, options);
  }
  // The server: BadRequest("Too many AOI geometries. One processing can have up to N geometries") (ProcessingService.scala).
  if (name === 'MapflowRequestError' && /too many aoi/i.test(message)) {
    return new InputRejected('TOO_MANY_AOIS', `Mapflow refused ${subject}: ${message}; ${TOO_MANY_AOIS_ADVICE}.`, options);
  }
  if (name === 'MapflowAuthError' && status === 403) {
    return new InputRejected(
      'UNKNOWN_PROVIDER',
      `Mapflow does not allow this account to run ${subject} as requested (${message}); the imagery provider or model is probably not linked to the account: choose another source or ask Mapflow to enable it.`,
      options,
    );
  }
  if (name === 'MapflowRequestError' && (status === 400 || status === 422)) {
    return new InputRejected('PROCESSING_REJECTED', `Mapflow refused ${subject}: ${message}${detail}. Check the route's source, model, blocks and inferenceParams.`, options);
  }
  return undefined;
}
