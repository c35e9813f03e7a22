/**
 * Areas whose imagery cannot exist, refused before anything is spent.
 *
 * - Tile providers (every `dataProvider` of `/user/status`, and a URL source
 *   of XYZ or TMS tiles in Web Mercator) serve Web Mercator tiles, which end at
 *   ±85.05113° of latitude (the square world of EPSG:3857) and reach the poles
 *   only at infinity. Geoalert's plugin models every server-side provider as
 *   "a tile-based (mosaic) data provider" in `CRS.web_mercator` (mapflow-qgis
 *   mapflow/entity/provider/default.py lines 93-122). A polygon wholly beyond
 *   that latitude, or reaching a pole, has no tile to process: Mapflow would
 *   still bill its area.
 * - A polygon narrower than one pixel of the finest zoom any tile source has
 *   (22: 360° / 256 / 2^22 = 3.4e-7° of longitude, 3.7 cm at the equator)
 *   holds no pixel at any zoom: see validatePolygon (geometry.ts).
 */
import type { MultiPolygon, Polygon, Position } from 'geojson';
import { InputRejected } from '../core/errors.ts';

/** Where Web Mercator's square world ends: atan(sinh(π)) in degrees. */
export const WEB_MERCATOR_MAX_LAT = (Math.atan(Math.sinh(Math.PI)) * 180) / Math.PI;

/** One pixel of a 256-pixel tile at zoom 22, in degrees of longitude (of latitude at the equator). */
export const FINEST_PIXEL_DEG = 360 / 256 / 2 ** 22;

/** Whether a processing's source is made of Web Mercator tiles. */
export function isWebMercatorTileSource(sourceParams: Record<string, unknown>): boolean {
  if (sourceParams.dataProvider !== undefined) return true;
  const url = sourceParams.userDefined as { sourceType?: unknown; crs?: unknown } | undefined;
  if (!url) return false;
  const type = typeof url.sourceType === 'string' ? url.sourceType.toLowerCase() : '';
  const crs = typeof url.crs === 'string' ? url.crs.toUpperCase() : 'EPSG:3857';
  return (type === 'xyz' || type === 'tms') && (crs === 'EPSG:3857' || crs === 'EPSG:900913');
}

/**
 * @throws InputRejected NO_IMAGERY when a polygon lies wholly beyond ±85.05113° or reaches a pole, for a tile source
 */
export function checkTileImageryExists(geometry: Polygon | MultiPolygon, sourceParams: Record<string, unknown>, label: string): void {
  if (!isWebMercatorTileSource(sourceParams)) return;
  const polygons = geometry.type === 'Polygon' ? [geometry.coordinates] : geometry.coordinates;
  const provider = (sourceParams.dataProvider as { providerName?: string } | undefined)?.providerName ?? 'the URL source';
  polygons.forEach((rings, polygonIndex) => {
    const outer = rings[0] as Position[];
    let south = Infinity;
    let north = -Infinity;
    for (const p of outer) {
      if (p[1]! < south) south = p[1]!;
      if (p[1]! > north) north = p[1]!;
    }
    const where = polygons.length > 1 ? `${label}, polygon ${polygonIndex}` : label;
    const fix = `draw the area within ±${WEB_MERCATOR_MAX_LAT.toFixed(5)}° of latitude, or use a route with catalog imagery (imagery.search) or your own images`;
    if (north >= 90 || south <= -90) {
      throw new InputRejected(
        'NO_IMAGERY',
        `${where} reaches the ${north >= 90 ? 'North' : 'South'} Pole; ${provider} serves Web Mercator tiles, which reach the poles only at infinity, so no imagery exists for it: ${fix}`,
        { details: { polygonIndex, south, north, maxLatitude: WEB_MERCATOR_MAX_LAT } },
      );
    }
    if (south > WEB_MERCATOR_MAX_LAT || north < -WEB_MERCATOR_MAX_LAT) {
      throw new InputRejected(
        'NO_IMAGERY',
        `${where} lies wholly beyond ${south > 0 ? '' : '-'}${WEB_MERCATOR_MAX_LAT.toFixed(5)}° of latitude (from ${+south.toFixed(5)}° to ${+north.toFixed(5)}°), where the Web Mercator tiles of ${provider} end: no imagery exists for it. ${fix[0]!.toUpperCase()}${fix.slice(1)}`,
        { details: { polygonIndex, south, north, maxLatitude: WEB_MERCATOR_MAX_LAT } },
      );
    }
  });
}
