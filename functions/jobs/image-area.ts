/**
 * The account's AOI area limit applied to a GeoTIFF before it is uploaded.
 *
 * Mapflow checks `aoiAreaLimit` on the processing it creates (the server:
 * `Validations.checkProcessingArea` -> TooLargeProcessing, 400
 * TOO_LARGE_PROCESSING); Geoalert's plugin checks the same two limits itself
 * before it starts (mapflow-qgis functional/service/processing_service.py
 * lines 150-174, spec/002_B_processing_api.md "AOI area limit"): the total
 * area and each AOI's longitude/latitude box. An image processed on its own
 * footprint would be uploaded (storage, minutes) and only then refused, so
 * Inspect GeoTIFF runs this check first. Kept apart from the GeoTIFF decoding
 * (functions/geotiff) on purpose: it only needs the footprint.
 */
import type { Polygon, MultiPolygon } from 'geojson';
import { InputRejected } from '../core/errors.ts';
import { geodesicAreaSqM } from '../aoi/geodesic-area.ts';
import { formatKm2 } from '../aoi/index.ts';
import type { MapflowClient, Project, UserStatus } from '../mapflow/index.ts';
import type { Route } from '../routing/index.ts';
import { isNotFound } from './common.ts';
import type { StepContext } from './context.ts';

/**
 * The AOI area limit (m²) of the project the processing goes into: its
 * `user.aoiAreaLimit`, which for a project shared with this account is the
 * owner's, the limit that applies (mapflow-qgis
 * functional/service/project_service.py lines 50-56, schema/project.py lines
 * 57-66). The project is looked up, never created: a route's named project
 * not made yet will be this account's own, with the default project's
 * limit. Without a limit on the project, the user status's `aoiAreaLimit`
 * (the spec's shape) counts; a zero or unknown limit checks nothing here
 * (Mapflow checks it on the create).
 */
export async function aoiAreaLimitOf(client: MapflowClient, status: UserStatus, route: Pick<Route, 'project'>, ctx: StepContext): Promise<number | undefined> {
  return (await targetProjectLimit(client, status, route, ctx)).limitSqM;
}

/** aoiAreaLimitOf, and the id of the target project when it exists already (the cost call names it, as the plugin's does). */
export async function targetProjectLimit(client: MapflowClient, status: UserStatus, route: Pick<Route, 'project'>, ctx: StepContext): Promise<{ limitSqM?: number; projectId?: string }> {
  const positive = (limit: unknown): number | undefined => (typeof limit === 'number' && limit > 0 ? limit : undefined);
  try {
    const project = await targetProject(client, route, ctx);
    const ids = project ? { projectId: project.id } : {};
    const limit = positive(project?.user?.aoiAreaLimit) ?? positive(status.aoiAreaLimitSqM);
    if (limit !== undefined || project?.isDefault) return { limitSqM: limit, ...ids };
    return { limitSqM: positive((await client.getDefaultProject()).user?.aoiAreaLimit), ...ids };
  } catch (err) {
    ctx.logger.warn('could not read the AOI area limit of the target project; Mapflow will check it', { err: String(err) });
    return { limitSqM: positive(status.aoiAreaLimitSqM) };
  }
}

/** The project a route's processings go into, if it exists yet (plan-processing.ts projectFor makes it). */
async function targetProject(client: MapflowClient, route: Pick<Route, 'project'>, ctx: StepContext): Promise<Project | undefined> {
  const wanted = route.project;
  if (wanted?.id) return client.getProject(wanted.id);
  if (!wanted?.name) return client.getDefaultProject();
  const known = await ctx.projects.get(wanted.name);
  if (known) {
    try {
      return await client.getProject(known.id);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  return (await client.listProjects()).find((p) => p.name === wanted.name);
}

/** Area of the longitude/latitude box around a polygon's outer ring. */
function boxAreaSqM(ring: number[][]): number {
  const lons = ring.map((p) => p[0]!);
  const lats = ring.map((p) => p[1]!);
  const [w, s, e, n] = [Math.min(...lons), Math.min(...lats), Math.max(...lons), Math.max(...lats)];
  return geodesicAreaSqM({ type: 'Polygon', coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]]] });
}

/**
 * @throws InputRejected IMAGE_AREA_TOO_LARGE when the image's footprint, or
 *   its longitude/latitude box, is above the limit (a zero or unknown limit
 *   checks nothing, as the plugin: the server decides)
 */
export function checkImageArea(footprint: Polygon | MultiPolygon, limitSqM: number | undefined, key: string): void {
  if (limitSqM === undefined || !(limitSqM > 0)) return;
  const areaSqM = geodesicAreaSqM(footprint);
  const rings = footprint.type === 'Polygon' ? [footprint.coordinates[0]!] : footprint.coordinates.map((p) => p[0]!);
  const boxSqM = Math.max(...rings.map(boxAreaSqM));
  const over = areaSqM > limitSqM ? { what: 'covers', sqM: areaSqM } : boxSqM > limitSqM ? { what: 'has a longitude/latitude bounding box of', sqM: boxSqM } : undefined;
  if (!over) return;
  const limit = formatKm2(limitSqM);
  throw new InputRejected(
    'IMAGE_AREA_TOO_LARGE',
    `the image '${key}' ${over.what} ${formatKm2(over.sqM)}, more than the ${limit} the Mapflow account allows in one processing (aoiAreaLimit); nothing was uploaded. ` +
      `Cut the image into tiles of less than ${limit} each (e.g. gdal_retile.py) and drop the tiles, or drop it under a route that only uploads.`,
    { details: { areaSqM, bboxAreaSqM: boxSqM, aoiAreaLimitSqM: limitSqM } },
  );
}
