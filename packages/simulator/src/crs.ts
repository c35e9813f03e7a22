/**
 * The CRSs the simulator reads from an upload's GeoKeys, as the live service
 * does (it reads images with GDAL, which knows every EPSG CRS and user-defined
 * projections spelt out in the keys): an EPSG code through the EPSG dataset's
 * proj4 definitions (epsg-index, ISC), or a user-defined Transverse Mercator
 * (ProjectedCSTypeGeoKey 32767, ProjCoordTransGeoKey 1) on an EPSG geographic
 * CRS. The simulator's own code: it imports nothing of the bridge.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The proj4 definition of an EPSG code from epsg-index, without grid shifts proj4js cannot load; undefined when there is none. */
function epsgDefinition(code: number): string | undefined {
  if (!Number.isInteger(code) || code <= 0) return undefined;
  try {
    const entry = require(`epsg-index/s/${code}.json`) as { kind?: string; proj4?: string };
    if (entry.kind !== 'CRS-PROJCRS' && entry.kind !== 'CRS-GEOGCRS') return undefined;
    return entry.proj4?.replace(/ \+type=crs$/, '').replace(/ \+nadgrids=(?!@null)\S+/, '') || undefined;
  } catch {
    return undefined;
  }
}

/** A user-defined Transverse Mercator from its keys (OGC GeoTIFF 1.1, annex C), on the ellipsoid of its geographic CRS. */
function userDefinedTransverseMercator(keys: Record<string, unknown>): string | undefined {
  if (keys.ProjCoordTransGeoKey !== 1) return undefined;
  const datum = epsgDefinition(Number(keys.GeographicTypeGeoKey ?? 4326))
    ?.split(' ')
    .filter((p) => /^\+(datum|ellps|towgs84)=/.test(p))
    .join(' ');
  const n = (key: string, fallback?: number) => (typeof keys[key] === 'number' ? (keys[key] as number) : fallback);
  const params = [n('ProjNatOriginLatGeoKey', 0), n('ProjNatOriginLongGeoKey'), n('ProjScaleAtNatOriginGeoKey', 1), n('ProjFalseEastingGeoKey', 0), n('ProjFalseNorthingGeoKey', 0)];
  if (!datum || params.some((v) => v === undefined)) return undefined;
  const [lat0, lon0, k, x0, y0] = params;
  return `+proj=tmerc +lat_0=${lat0} +lon_0=${lon0} +k=${k} +x_0=${x0} +y_0=${y0} ${datum} +units=m +no_defs`;
}

/** The proj4 definition of an upload's CRS and its name (EPSG:<code>, or USER for a user-defined one), or undefined. */
export function crsFromGeoKeys(keys: Record<string, unknown>): { projection: string; name: string; geographic: boolean } | undefined {
  const code = Number(keys.ProjectedCSTypeGeoKey ?? keys.GeographicTypeGeoKey ?? NaN);
  const projection = code === 32767 ? userDefinedTransverseMercator(keys) : epsgDefinition(code);
  if (!projection) return undefined;
  return { projection, name: code === 32767 ? 'USER' : `EPSG:${code}`, geographic: projection.startsWith('+proj=longlat') };
}
