/**
 * A quicklook picture (SVG): the AOI outline and the features, to scale (a
 * local equirectangular projection in metres around the picture's centre),
 * with a scale bar, the feature count and, for a failed job, the reason.
 *
 * Bounded whatever the input: at most `maxFeatures` features and `maxPoints`
 * vertices are kept for drawing (the picture says how many were drawn);
 * everything else is only counted.
 */

export interface QuicklookLimits {
  /** Picture width in pixels. Default 800. */
  width?: number;
  /** Features drawn at most. Default 5,000. */
  maxFeatures?: number;
  /** Vertices kept at most (all features together). Default 200,000. */
  maxPoints?: number;
}

export interface QuicklookText {
  /** First line, e.g. the input file. */
  title: string;
  /** Line under the title, e.g. the route or the status. */
  subtitle?: string;
  /** Why the job failed (a failure quicklook). */
  reason?: string;
  /** Features in the result, when more were counted than added (streamed results). */
  featureCount?: number;
  /** Features that were counted but could not be read. */
  unreadable?: number;
}

type Position = [number, number];
interface Shape {
  kind: 'area' | 'line' | 'point';
  parts: Position[][];
}

const M_PER_DEG_LAT = 110_574;
const M_PER_DEG_LON_EQUATOR = 111_320;
const FOOTER = 64;
const MAX_DEPTH = 8;

export class Quicklook {
  private readonly aoi: Shape[] = [];
  private readonly features: Shape[] = [];
  private points = 0;
  /** Features given to addFeature. */
  added = 0;
  /** Features drawn (not beyond the limits). */
  drawn = 0;
  private readonly width: number;
  private readonly maxFeatures: number;
  private readonly maxPoints: number;

  constructor(limits: QuicklookLimits = {}) {
    this.width = limits.width ?? 800;
    this.maxFeatures = limits.maxFeatures ?? 5_000;
    this.maxPoints = limits.maxPoints ?? 200_000;
  }

  /** The AOI (any GeoJSON: geometry, Feature, FeatureCollection); drawn as outlines. */
  setAoi(geojson: unknown): this {
    collectShapes(geojson, this.aoi, { budget: this.maxPoints }, 0);
    return this;
  }

  addFeature(feature: unknown): void {
    this.added++;
    if (this.drawn >= this.maxFeatures || this.points >= this.maxPoints) return;
    const shapes: Shape[] = [];
    const budget = { budget: this.maxPoints - this.points };
    collectShapes(feature, shapes, budget, 0);
    if (shapes.length === 0) return;
    this.points = this.maxPoints - budget.budget;
    this.features.push(...shapes);
    this.drawn++;
  }

  render(text: QuicklookText): string {
    const count = text.featureCount ?? this.added;
    const box = bounds(this.aoi.length > 0 ? this.aoi : this.features) ?? bounds(this.features);
    const width = this.width;
    let mapHeight = 0;
    let body = '';
    let scaleBar = '';
    if (box) {
      const lat0 = (box.minLat + box.maxLat) / 2;
      const kx = M_PER_DEG_LON_EQUATOR * Math.cos((lat0 * Math.PI) / 180);
      // At least ~50 m across, and 5 % of margin on each side.
      let wm = Math.max((box.maxLon - box.minLon) * kx, 50);
      let hm = Math.max((box.maxLat - box.minLat) * M_PER_DEG_LAT, 50);
      wm *= 1.1;
      hm *= 1.1;
      const scale = Math.min(width / wm, 900 / hm); // pixels per metre
      mapHeight = Math.max(200, Math.round(hm * scale));
      const cx = (box.minLon + box.maxLon) / 2;
      const cy = (box.minLat + box.maxLat) / 2;
      const project = ([lon, lat]: Position): Position => [width / 2 + (lon - cx) * kx * scale, mapHeight / 2 - (lat - cy) * M_PER_DEG_LAT * scale];
      body =
        `<g id="features" fill="#e8590c" fill-opacity="0.45" stroke="#a33c00" stroke-width="0.8">${this.features.map((s) => shapeSvg(s, project)).join('')}</g>` +
        `<g id="aoi" fill="none" stroke="#1c5fd4" stroke-width="2" stroke-dasharray="6 3">${this.aoi.map((s) => shapeSvg({ ...s, kind: s.kind === 'point' ? 'point' : 'line' }, project)).join('')}</g>`;
      scaleBar = scaleBarSvg(scale, mapHeight);
    } else {
      mapHeight = 120;
      body = `<text x="${width / 2}" y="64" text-anchor="middle" fill="#666">no geometry to draw</text>`;
    }
    const counted =
      text.reason === undefined || count > 0
        ? `${count.toLocaleString('en-US')} feature${count === 1 ? '' : 's'}${this.drawn < count ? ` (${this.drawn.toLocaleString('en-US')} drawn: the picture is capped)` : ''}${text.unreadable ? `, ${text.unreadable} unreadable` : ''}`
        : '';
    const lines = [
      { text: text.title, weight: 'bold' },
      ...(text.subtitle ? [{ text: text.subtitle, weight: 'normal' }] : []),
      ...(counted ? [{ text: counted, weight: 'normal' }] : []),
      ...wrap(text.reason ? `Reason: ${text.reason}` : '', 110).map((line) => ({ text: line, weight: 'normal', fill: '#b00020' })),
    ];
    const footer = Math.max(FOOTER, 14 + lines.length * 18);
    const height = mapHeight + footer;
    const footerSvg = lines
      .map((line, i) => `<text x="10" y="${mapHeight + 20 + i * 18}" font-weight="${line.weight}"${'fill' in line ? ` fill="${line.fill}"` : ''}>${escapeXml(line.text)}</text>`)
      .join('');
    return (
      `<?xml version="1.0" encoding="UTF-8"?>\n` +
      `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="13" data-feature-count="${count}" data-features-drawn="${this.drawn}">` +
      `<rect width="${width}" height="${mapHeight}" fill="#f3f1ec"/>` +
      `<rect y="${mapHeight}" width="${width}" height="${footer}" fill="#ffffff"/>` +
      body +
      scaleBar +
      footerSvg +
      `</svg>\n`
    );
  }
}

/** Walks any GeoJSON value into shapes, spending at most `budget.budget` vertices. */
function collectShapes(value: unknown, out: Shape[], budget: { budget: number }, depth: number): void {
  if (!value || typeof value !== 'object' || depth > MAX_DEPTH || budget.budget <= 0) return;
  const o = value as Record<string, unknown>;
  switch (o.type) {
    case 'FeatureCollection':
      if (Array.isArray(o.features)) for (const f of o.features) collectShapes(f, out, budget, depth + 1);
      return;
    case 'Feature':
      collectShapes(o.geometry, out, budget, depth + 1);
      return;
    case 'GeometryCollection':
      if (Array.isArray(o.geometries)) for (const g of o.geometries) collectShapes(g, out, budget, depth + 1);
      return;
    case 'Point':
      pushShape(out, 'point', [[o.coordinates]], budget);
      return;
    case 'MultiPoint':
      pushShape(out, 'point', [asArray(o.coordinates)], budget);
      return;
    case 'LineString':
      pushShape(out, 'line', [o.coordinates], budget);
      return;
    case 'MultiLineString':
      pushShape(out, 'line', asArray(o.coordinates), budget);
      return;
    case 'Polygon':
      pushShape(out, 'area', asArray(o.coordinates), budget);
      return;
    case 'MultiPolygon':
      for (const polygon of asArray(o.coordinates)) pushShape(out, 'area', asArray(polygon), budget);
      return;
    default:
  }
}

function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function pushShape(out: Shape[], kind: Shape['kind'], rawParts: unknown[], budget: { budget: number }): void {
  const parts: Position[][] = [];
  for (const raw of rawParts) {
    const part: Position[] = [];
    for (const p of asArray(raw)) {
      if (budget.budget <= 0) break;
      if (!Array.isArray(p)) continue;
      const lon = p[0];
      const lat = p[1];
      if (typeof lon !== 'number' || typeof lat !== 'number' || !Number.isFinite(lon) || !Number.isFinite(lat) || Math.abs(lat) > 90 || Math.abs(lon) > 540) continue;
      part.push([lon, lat]);
      budget.budget--;
    }
    if (part.length > 0) parts.push(part);
  }
  if (parts.length > 0) out.push({ kind, parts });
}

function bounds(shapes: Shape[]): { minLon: number; minLat: number; maxLon: number; maxLat: number } | undefined {
  let minLon = Infinity;
  let minLat = Infinity;
  let maxLon = -Infinity;
  let maxLat = -Infinity;
  for (const shape of shapes) {
    for (const part of shape.parts) {
      for (const [lon, lat] of part) {
        if (lon < minLon) minLon = lon;
        if (lon > maxLon) maxLon = lon;
        if (lat < minLat) minLat = lat;
        if (lat > maxLat) maxLat = lat;
      }
    }
  }
  return minLon === Infinity ? undefined : { minLon, minLat, maxLon, maxLat };
}

function shapeSvg(shape: Shape, project: (p: Position) => Position): string {
  if (shape.kind === 'point') {
    return shape.parts
      .flat()
      .map((p) => {
        const [x, y] = project(p);
        return `<circle cx="${r(x)}" cy="${r(y)}" r="3"/>`;
      })
      .join('');
  }
  const d = shape.parts
    .map((part) => {
      let last: Position | undefined;
      const points: string[] = [];
      for (const p of part) {
        const [x, y] = project(p);
        // Vertices closer than half a pixel add bytes, not detail.
        if (last && Math.abs(x - last[0]) < 0.5 && Math.abs(y - last[1]) < 0.5) continue;
        points.push(`${r(x)} ${r(y)}`);
        last = [x, y];
      }
      return points.length > 0 ? `M${points.join('L')}${shape.kind === 'area' ? 'Z' : ''}` : '';
    })
    .join('');
  if (!d) return '';
  return shape.kind === 'area' ? `<path d="${d}" fill-rule="evenodd"/>` : `<path d="${d}" fill="none"/>`;
}

function scaleBarSvg(pixelsPerMetre: number, mapHeight: number): string {
  const target = 160 / pixelsPerMetre; // metres in ~160 px
  const magnitude = 10 ** Math.floor(Math.log10(target));
  const metres = [5, 2, 1].map((f) => f * magnitude).find((m) => m <= target) ?? magnitude;
  const length = metres * pixelsPerMetre;
  const label = metres >= 1000 ? `${metres / 1000} km` : `${metres} m`;
  const y = mapHeight - 16;
  return (
    `<g id="scale-bar"><rect x="10" y="${y - 16}" width="${r(length + 20)}" height="26" fill="#ffffff" fill-opacity="0.8"/>` +
    `<path d="M20 ${y - 4}V${y}H${r(20 + length)}V${y - 4}" fill="none" stroke="#222" stroke-width="2"/>` +
    `<text x="${r(20 + length / 2)}" y="${y - 6}" text-anchor="middle" font-size="11">${label}</text></g>`
  );
}

function r(value: number): number {
  return Math.round(value * 10) / 10;
}

function wrap(text: string, width: number): string[] {
  if (!text) return [];
  const words = text.split(/\s+/);
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    if (line && line.length + word.length + 1 > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
    if (lines.length >= 6) break;
  }
  if (line && lines.length < 6) lines.push(line);
  return lines;
}

/** Text for SVG: XML-escaped, control characters and lone surrogates dropped, bounded. */
export function escapeXml(text: string): string {
  return text
    .slice(0, 300)
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffe\uffff]/g, '')
    .replace(/[\ud800-\udfff]/g, (c, i: number, s: string) => {
      const code = c.charCodeAt(0);
      const next = s.charCodeAt(i + 1);
      const prev = s.charCodeAt(i - 1);
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) return c;
      if (code >= 0xdc00 && prev >= 0xd800 && prev <= 0xdbff) return c;
      return '';
    })
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}
