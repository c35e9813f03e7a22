/**
 * Coordinate reference systems the bridge can place on the map: from an EPSG
 * code (or a user-defined projection read from the GeoKeys, geokeys.ts) to a
 * proj4 definition, and reprojection of image corners to WGS84.
 *
 * Covered: every projected and geographic CRS of the EPSG dataset, as GDAL
 * reads them from a GeoTIFF (crs-definitions.json, scripts/make-crs-definitions.ts
 * says why that table and not a GeoKeys library). The first ones below keep
 * their hand-written definitions (the ones the bridge shipped first, with their
 * datum shifts); WGS84 (4326) and the geographic systems that match it within
 * a metre (ETRS89 4258, NAD83 4269) are read as WGS84.
 */
import { brotliDecompressSync } from 'node:zlib';
import proj4 from 'proj4';
import { CRS_AREAS } from './crs-areas.ts';
import packedDefinitions from './crs-definitions.json' with { type: 'json' };

/** A CRS: an EPSG code, or the proj4 definition of a user-defined one (GeoKey 32767, geokeys.ts). */
export type CrsRef = number | string;

let table: Map<number, { definition: string; area?: [number, number, number, number] }> | undefined;

/** The EPSG dataset's definitions, unpacked on first use (about 1 MB of text, a few milliseconds). */
function epsgTable(): Map<number, { definition: string; area?: [number, number, number, number] }> {
  if (table) return table;
  table = new Map();
  const text = brotliDecompressSync(Buffer.from(packedDefinitions.brotliBase64, 'base64')).toString('utf8');
  for (const row of text.split('\n')) {
    const [code, definition, area] = row.split('\t');
    const bounds = area ? (area.split(',').map(Number) as [number, number, number, number]) : undefined;
    table.set(Number(code), { definition: definition!, ...(bounds && { area: bounds }) });
  }
  return table;
}

const NATIONAL_GRIDS: Record<number, string> = {
  // Swiss CH1903+ / LV95
  2056: '+proj=somerc +lat_0=46.9524055555556 +lon_0=7.43958333333333 +k_0=1 +x_0=2600000 +y_0=1200000 +ellps=bessel +towgs84=674.374,15.056,405.346,0,0,0,0 +units=m +no_defs',
  // Dutch Amersfoort / RD New
  28992: '+proj=sterea +lat_0=52.1561605555556 +lon_0=5.38763888888889 +k=0.9999079 +x_0=155000 +y_0=463000 +ellps=bessel +towgs84=565.417,50.3319,465.552,-0.398957,0.343988,-1.8774,4.0725 +units=m +no_defs',
  // British National Grid
  27700: '+proj=tmerc +lat_0=49 +lon_0=-2 +k=0.9996012717 +x_0=400000 +y_0=-100000 +ellps=airy +towgs84=446.448,-125.157,542.06,0.15,0.247,0.842,-20.489 +units=m +no_defs',
  // ETRS89 / LAEA Europe
  3035: '+proj=laea +lat_0=52 +lon_0=10 +x_0=4321000 +y_0=3210000 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs',
  // French RGF93 / Lambert-93
  2154: '+proj=lcc +lat_0=46.5 +lon_0=3 +lat_1=49 +lat_2=44 +x_0=700000 +y_0=6600000 +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs',
};

/** Geographic systems treated as WGS84 (they differ by about a metre at most). */
const WGS84_LIKE_GEOGRAPHIC = new Set([4326, 4258, 4269]);

export const SUPPORTED_CRS_TEXT =
  'every projected and geographic CRS of the EPSG dataset, and user-defined projections GDAL reads from the GeoKeys';

/** The EPSG codes with a hand-written definition (the rest come from the EPSG dataset's table), in order. */
export const SUPPORTED_EPSG_CODES: readonly number[] = [
  ...WGS84_LIKE_GEOGRAPHIC,
  3857,
  900913,
  3785,
  102100,
  ...Array.from({ length: 60 }, (_, i) => 32601 + i),
  ...Array.from({ length: 60 }, (_, i) => 32701 + i),
  ...Array.from({ length: 11 }, (_, i) => 25828 + i),
  ...Array.from({ length: 23 }, (_, i) => 26901 + i),
  ...Object.keys(NATIONAL_GRIDS).map(Number),
];

/** proj4 definition of a CRS, or undefined when the bridge does not know it (EPSG codes are integers). */
export function projDefinition(crs: CrsRef): string | undefined {
  if (typeof crs === 'string') return crs;
  return builtInDefinition(crs) ?? (Number.isInteger(crs) ? epsgTable().get(crs)?.definition : undefined);
}

function builtInDefinition(epsg: number): string | undefined {
  if (!Number.isInteger(epsg)) return undefined;
  if (WGS84_LIKE_GEOGRAPHIC.has(epsg)) return '+proj=longlat +datum=WGS84 +no_defs';
  if (epsg === 3857 || epsg === 900913 || epsg === 3785 || epsg === 102100) {
    return '+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +wktext +no_defs';
  }
  const zone = epsg % 100;
  const family = Math.floor(epsg / 100);
  if ((family === 326 || family === 327) && zone >= 1 && zone <= 60) {
    return `+proj=utm +zone=${zone}${family === 327 ? ' +south' : ''} +datum=WGS84 +units=m +no_defs`;
  }
  if (family === 258 && zone >= 28 && zone <= 38) return `+proj=utm +zone=${zone} +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs`;
  if (family === 269 && zone >= 1 && zone <= 23) return `+proj=utm +zone=${zone} +datum=NAD83 +units=m +no_defs`;
  return NATIONAL_GRIDS[epsg];
}

/** Whether a CRS is geographic (longitude and latitude in degrees). */
export function isGeographic(crs: CrsRef): boolean {
  if (typeof crs === 'number' && WGS84_LIKE_GEOGRAPHIC.has(crs)) return true;
  return /^\+proj=longlat\b/.test(projDefinition(crs) ?? '');
}

/** How the CRS is named in messages and in the image's `crs`: EPSG:<code>, or USER:<hash of its definition>. */
export function crsName(crs: CrsRef): string {
  if (typeof crs === 'number') return `EPSG:${crs}`;
  let hash = 0x811c9dc5;
  for (let i = 0; i < crs.length; i++) hash = Math.imul(hash ^ crs.charCodeAt(i), 0x01000193);
  return `USER:${(hash >>> 0).toString(16).padStart(8, '0')}`;
}

/** Metres per unit of a projected CRS's definition (+units or +to_meter; metre when it says none). */
export function definitionUnitInMetres(crs: CrsRef): number {
  const definition = projDefinition(crs) ?? '';
  const toMeter = /\+to_meter=([0-9.eE+-]+)/.exec(definition);
  if (toMeter) return Number(toMeter[1]);
  const units = /\+units=(\S+)/.exec(definition)?.[1];
  return units === 'ft' ? 0.3048 : units === 'us-ft' ? 1200 / 3937 : units === 'km' ? 1000 : 1;
}

/** Converts positions of a CRS to WGS84 [lon, lat]. */
export function toWgs84(crs: CrsRef): (position: [number, number]) => [number, number] {
  const definition = projDefinition(crs);
  if (!definition) throw new Error(`${crsName(crs)} is not supported`);
  if (typeof crs === 'number' && WGS84_LIKE_GEOGRAPHIC.has(crs)) return (p) => [p[0], p[1]];
  const converter = proj4(definition, 'EPSG:4326');
  return (p) => converter.forward(p) as [number, number];
}

/** Converts WGS84 [lon, lat] to positions of a CRS (the inverse of toWgs84). */
export function fromWgs84(crs: CrsRef): (position: [number, number]) => [number, number] {
  const definition = projDefinition(crs);
  if (!definition) throw new Error(`${crsName(crs)} is not supported`);
  if (typeof crs === 'number' && WGS84_LIKE_GEOGRAPHIC.has(crs)) return (p) => [p[0], p[1]];
  const converter = proj4(definition, 'EPSG:4326');
  return (p) => converter.inverse(p) as [number, number];
}

/** Area of use of an EPSG code the bridge knows, [west, south, east, north] (west > east: across 180°); none for a user-defined CRS. */
export function areaOfUse(crs: CrsRef): readonly [number, number, number, number] | undefined {
  if (typeof crs === 'string') return undefined;
  return CRS_AREAS[crs] ?? (builtInDefinition(crs)?.includes('+proj=merc') ? CRS_AREAS[3857] : Number.isInteger(crs) ? epsgTable().get(crs)?.area : undefined);
}

/** Metres per degree of longitude and of latitude at a latitude, on the WGS84 ellipsoid. */
export function metresPerDegree(latDeg: number): [number, number] {
  const a = 6378137;
  const e2 = 0.00669437999014;
  const phi = (latDeg * Math.PI) / 180;
  const w = Math.sqrt(1 - e2 * Math.sin(phi) ** 2);
  const lon = ((Math.PI / 180) * a * Math.cos(phi)) / w;
  const lat = ((Math.PI / 180) * a * (1 - e2)) / w ** 3;
  return [lon, lat];
}
