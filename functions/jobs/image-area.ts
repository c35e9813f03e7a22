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
import type { MapflowClient, UserStatus } from '../mapflow/index.ts';
import type { StepContext } from './context.ts';

/** The account's AOI area limit (m²): from the user status, else from the default project's user. */
export async function aoiAreaLimitOf(client: MapflowClient, status: UserStatus, ctx: StepContext): Promise<number | undefined> {
  if (typeof status.aoiAreaLimitSqM === 'number' && status.aoiAreaLimitSqM > 0) return status.aoiAreaLimitSqM;
  try {
    const project = await client.getDefaultProject();
    const limit = project.user?.aoiAreaLimit;
    return typeof limit === 'number' && limit > 0 ? limit : undefined;
  } catch (err) {
    ctx.logger.warn('could not read the AOI area limit from the default project; Mapflow will check it', { err: String(err) });
    return undefined;
  }
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
