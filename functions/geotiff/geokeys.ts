/**
 * A user-defined CRS (ProjectedCSTypeGeoKey or GeographicTypeGeoKey 32767)
 * from its GeoKeys, as GDAL reads it (libgeotiff's GTIFGetDefn, GDAL
 * frmts/gtiff/gt_wkt_srs.cpp): the projection from ProjectionGeoKey (an EPSG
 * UTM conversion) or ProjCoordTransGeoKey and its parameters, on the datum of
 * GeographicTypeGeoKey (an EPSG geographic CRS), of GeogGeodeticDatumGeoKey,
 * or of an ellipsoid (GeogEllipsoidGeoKey or its axes), in the units of
 * ProjLinearUnitsGeoKey. Key and method codes: OGC GeoTIFF 1.1 (19-008r4),
 * annex C. What this does not know is undefined, and the image is refused as
 * NOT_GEOREFERENCED with a message asking for a reprojection.
 */
import { projDefinition } from './crs.ts';

type Keys = Record<string, unknown>;

const USER_DEFINED = 32767;

/** EPSG ellipsoid codes to proj4 (the ellipsoids of the datums GDAL's tables know best). */
const ELLIPSOIDS: Record<number, string> = {
  7030: '+ellps=WGS84',
  7019: '+ellps=GRS80',
  7004: '+ellps=bessel',
  7001: '+ellps=airy',
  7022: '+ellps=intl',
  7008: '+ellps=clrk66',
  7012: '+ellps=clrk80',
  7024: '+ellps=krass',
  7043: '+ellps=WGS72',
};

/** Coordinate transformation codes (GeoTIFF 1.1 ProjCoordTransGeoKey) to the proj4 parameters they take. */
const METHODS: Record<number, (k: (name: string, fallback?: number) => number | undefined) => string | undefined> = {
  1: (k) => join('tmerc', { lat_0: k('ProjNatOriginLatGeoKey', 0), lon_0: k('ProjNatOriginLongGeoKey'), k: k('ProjScaleAtNatOriginGeoKey', 1) }, k),
  7: (k) => join('merc', { lon_0: k('ProjNatOriginLongGeoKey', 0), k: k('ProjScaleAtNatOriginGeoKey', 1) }, k),
  8: (k) =>
    join('lcc', { lat_1: k('ProjStdParallel1GeoKey'), lat_2: k('ProjStdParallel2GeoKey'), lat_0: k('ProjFalseOriginLatGeoKey', 0), lon_0: k('ProjFalseOriginLongGeoKey') }, k, 'ProjFalseOriginEastingGeoKey', 'ProjFalseOriginNorthingGeoKey'),
  9: (k) => join('lcc', { lat_1: k('ProjNatOriginLatGeoKey'), lat_0: k('ProjNatOriginLatGeoKey'), lon_0: k('ProjNatOriginLongGeoKey'), k_0: k('ProjScaleAtNatOriginGeoKey', 1) }, k),
  10: (k) => join('laea', { lat_0: k('ProjCenterLatGeoKey'), lon_0: k('ProjCenterLongGeoKey') }, k),
  11: (k) => join('aea', { lat_1: k('ProjStdParallel1GeoKey'), lat_2: k('ProjStdParallel2GeoKey'), lat_0: k('ProjNatOriginLatGeoKey', 0), lon_0: k('ProjNatOriginLongGeoKey') }, k),
  15: (k) => join('stere', { lat_0: (k('ProjNatOriginLatGeoKey', 90) ?? 90) < 0 ? -90 : 90, lat_ts: k('ProjNatOriginLatGeoKey'), lon_0: k('ProjStraightVertPoleLongGeoKey') }, k),
  16: (k) => join('sterea', { lat_0: k('ProjNatOriginLatGeoKey'), lon_0: k('ProjNatOriginLongGeoKey'), k: k('ProjScaleAtNatOriginGeoKey', 1) }, k),
  17: (k) => join('eqc', { lat_ts: k('ProjStdParallel1GeoKey', 0), lon_0: k('ProjNatOriginLongGeoKey', 0) }, k),
};

function join(
  proj: string,
  params: Record<string, number | undefined>,
  k: (name: string, fallback?: number) => number | undefined,
  eastingKey = 'ProjFalseEastingGeoKey',
  northingKey = 'ProjFalseNorthingGeoKey',
): string | undefined {
  const all = { ...params, x_0: k(eastingKey, 0), y_0: k(northingKey, 0) };
  if (Object.values(all).some((v) => v === undefined || !Number.isFinite(v))) return undefined;
  return `+proj=${proj} ${Object.entries(all).map(([name, v]) => `+${name}=${v}`).join(' ')}`;
}

/** The datum part of a definition (+datum, +ellps, +towgs84, +a/+b/+rf), from the geographic keys. */
function datumOf(keys: Keys): string | undefined {
  const geographic = keys.GeographicTypeGeoKey as number | undefined;
  if (geographic !== undefined && geographic !== USER_DEFINED) return datumParams(projDefinition(geographic));
  const datum = keys.GeogGeodeticDatumGeoKey as number | undefined;
  // An EPSG datum 6xxx belongs to the geographic CRS 4xxx (6326 WGS 84 -> 4326, 6258 ETRS89 -> 4258).
  if (datum !== undefined && datum !== USER_DEFINED && datum >= 6000 && datum < 7000) return datumParams(projDefinition(datum - 2000));
  const ellipsoid = keys.GeogEllipsoidGeoKey as number | undefined;
  if (ellipsoid !== undefined && ellipsoid !== USER_DEFINED) return ELLIPSOIDS[ellipsoid];
  const a = keys.GeogSemiMajorAxisGeoKey as number | undefined;
  const rf = keys.GeogInvFlatteningGeoKey as number | undefined;
  const b = keys.GeogSemiMinorAxisGeoKey as number | undefined;
  if (typeof a === 'number' && typeof rf === 'number' && rf > 0) return `+a=${a} +rf=${rf}`;
  if (typeof a === 'number' && typeof b === 'number') return `+a=${a} +b=${b}`;
  // GDAL's default for a CRS that names no datum: WGS 84.
  return geographic === undefined && datum === undefined ? '+datum=WGS84' : undefined;
}

function datumParams(definition: string | undefined): string | undefined {
  if (!definition) return undefined;
  const parts = definition.split(' ').filter((p) => /^\+(datum|ellps|towgs84|a|b|rf|pm)=/.test(p));
  return parts.length > 0 ? parts.join(' ') : undefined;
}

function unitsOf(keys: Keys): string | undefined {
  switch (keys.ProjLinearUnitsGeoKey as number | undefined) {
    case undefined:
    case 9001:
      return '+units=m';
    case 9002:
      return '+units=ft';
    case 9003:
      return '+units=us-ft';
    default:
      return undefined;
  }
}

/**
 * The proj4 definition of a user-defined CRS in these GeoKeys, or undefined
 * when they do not define one the bridge can place.
 */
export function userDefinedDefinition(keys: Keys): string | undefined {
  const angular = keys.GeogAngularUnitsGeoKey as number | undefined;
  if (angular !== undefined && angular !== 9102 && angular !== 9122) return undefined; // degrees only
  const datum = datumOf(keys);
  if (!datum) return undefined;
  const model = keys.GTModelTypeGeoKey as number | undefined;
  if (model === 2) return `+proj=longlat ${datum} +no_defs`;
  const units = unitsOf(keys);
  if (!units) return undefined;
  const projection = keys.ProjectionGeoKey as number | undefined;
  // EPSG's UTM conversions: 16001-16060 north, 16101-16160 south.
  if (projection !== undefined && projection !== USER_DEFINED) {
    const zone = projection % 100;
    if (projection >= 16001 && projection <= 16060) return `+proj=utm +zone=${zone} ${datum} ${units} +no_defs`;
    if (projection >= 16101 && projection <= 16160) return `+proj=utm +zone=${zone} +south ${datum} ${units} +no_defs`;
    return undefined;
  }
  const method = METHODS[keys.ProjCoordTransGeoKey as number];
  if (!method) return undefined;
  const value = (name: string, fallback?: number) => {
    const v = keys[name];
    return typeof v === 'number' ? v : fallback;
  };
  const projected = method(value);
  return projected ? `${projected} ${datum} ${units} +no_defs` : undefined;
}
