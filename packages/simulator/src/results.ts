/**
 * Results of an OK processing: a GeoJSON FeatureCollection of plausible
 * features (buildings and construction sites as rectangles, forest as
 * irregular polygons, roads as line strings), every vertex inside its AOI.
 * Deterministic: seeded by the simulator seed, the processing id and the AOI.
 * Produced feature by feature as a stream, never as one big string.
 */
import { Readable } from 'node:stream';
import { area as turfArea } from '@turf/area';
import type { Polygon, Position } from 'geojson';
import type { FeatureKind } from './catalogue.ts';
import { bboxOf, containment, type BBox } from './geometry.ts';
import { between, integerBetween, pick, seededRandom, seedFrom, type Random } from './random.ts';
import type { AoiRecord } from './store.ts';

/** Features per square kilometre, by kind. */
const DENSITY: Record<FeatureKind, number> = { building: 150, construction: 2, forest: 20, road: 15 };
/** Upper bound of features in one result, shared out between its AOIs. */
const MAX_FEATURES = 20_000;
const METRES_PER_DEGREE = 111_320;

export interface ResultPlan {
  processingId: string;
  name: string;
  seed: number;
  kind: FeatureKind;
  aois: AoiRecord[];
  /** All AOIs of the processing (fixes the share of each). */
  aoiCount: number;
  enabledBlocks: string[];
}

interface Frame {
  lat: number;
  /** Converts a metre offset from a centre into a lon/lat position. */
  offset(centre: Position, dx: number, dy: number): Position;
}

function frameFor(polygon: Polygon): Frame {
  const [, south, , north] = bboxOf(polygon);
  const lat = (south + north) / 2;
  const cos = Math.max(0.01, Math.cos((lat * Math.PI) / 180));
  return {
    lat,
    offset: ([lon, latitude], dx, dy) => [round(lon! + dx / (METRES_PER_DEGREE * cos)), round(latitude! + dy / METRES_PER_DEGREE)],
  };
}

const round = (value: number) => Math.round(value * 1e7) / 1e7;

function randomPointIn([west, south, east, north]: BBox, random: Random): Position {
  return [between(random, west, east), between(random, south, north)];
}

function rectangle(frame: Frame, centre: Position, width: number, height: number, angle: number): Position[] {
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  const corners = [[-width / 2, -height / 2], [width / 2, -height / 2], [width / 2, height / 2], [-width / 2, height / 2]].map(([x, y]) =>
    frame.offset(centre, x! * cos - y! * sin, x! * sin + y! * cos),
  );
  return [...corners, corners[0]!];
}

function blob(frame: Frame, centre: Position, radius: number, random: Random): Position[] {
  const vertices = integerBetween(random, 8, 12);
  const ring: Position[] = [];
  for (let i = 0; i < vertices; i++) {
    const angle = (2 * Math.PI * i) / vertices;
    const r = radius * between(random, 0.6, 1.0);
    ring.push(frame.offset(centre, r * Math.cos(angle), r * Math.sin(angle)));
  }
  return [...ring, ring[0]!];
}

/** Yields the features of one AOI as GeoJSON objects. */
function* aoiFeatures(plan: ResultPlan, aoi: AoiRecord, aoiIndex: number, firstId: number): Generator<object> {
  const random = seededRandom(seedFrom(plan.seed, plan.processingId, aoiIndex));
  const frame = frameFor(aoi.geometry);
  const km2 = aoi.areaSqM / 1e6;
  const share = Math.max(1, Math.floor(MAX_FEATURES / Math.max(1, plan.aoiCount)));
  const wanted = Math.min(share, Math.max(1, Math.round(DENSITY[plan.kind] * km2)));
  // Keep features smaller than the AOI so that small AOIs still get some.
  const scale = Math.min(1, Math.sqrt(aoi.areaSqM) / 100);
  // Indexed once per AOI: each test looks at the edges of one band, not at every vertex (a 99,999-vertex AOI blocked the loop 2.8 s).
  const within = containment(aoi.geometry);
  const box = bboxOf(aoi.geometry);
  const inside = (ring: Position[]) => ring.every((p) => within(p));
  const classify = plan.enabledBlocks.includes('Classification');
  const heights = plan.enabledBlocks.includes('Heights');

  let id = firstId;
  let made = 0;
  for (let attempt = 0; made < wanted && attempt < wanted * 30; attempt++) {
    const centre = randomPointIn(box, random);
    if (!within(centre)) continue;
    let feature: object | undefined;
    switch (plan.kind) {
      case 'building':
      case 'construction': {
        const [min, max] = plan.kind === 'building' ? [8, 25] : [40, 150];
        const ring = rectangle(frame, centre, between(random, min, max) * scale, between(random, min, max) * scale, between(random, 0, Math.PI));
        if (!inside(ring)) continue;
        const polygon: Polygon = { type: 'Polygon', coordinates: [ring] };
        const objectType = plan.kind === 'construction' ? 'construction_site' : classify ? pick(random, ['residential', 'commercial', 'industrial']) : 'building';
        feature = { type: 'Feature', geometry: polygon, properties: { id, object_type: objectType, area: Math.max(1, Math.round(turfArea(polygon))) } };
        break;
      }
      case 'forest': {
        const ring = blob(frame, centre, between(random, 30, 150) * scale, random);
        if (!inside(ring)) continue;
        const polygon: Polygon = { type: 'Polygon', coordinates: [ring] };
        const properties: Record<string, unknown> = { id, object_type: 'forest', area: Math.max(1, Math.round(turfArea(polygon))) };
        if (heights) properties.height = Math.round(between(random, 4, 30) * 10) / 10;
        feature = { type: 'Feature', geometry: polygon, properties };
        break;
      }
      case 'road': {
        const line: Position[] = [centre];
        let heading = between(random, 0, 2 * Math.PI);
        let length = 0;
        const segments = integerBetween(random, 2, 5);
        for (let s = 0; s < segments; s++) {
          heading += between(random, -0.4, 0.4);
          const step = between(random, 50, 200) * scale;
          const next = frame.offset(line[line.length - 1]!, step * Math.cos(heading), step * Math.sin(heading));
          if (!within(next)) break;
          line.push(next);
          length += step;
        }
        if (line.length < 2) continue;
        feature = {
          type: 'Feature',
          geometry: { type: 'LineString', coordinates: line },
          properties: { id, object_type: 'road', area: Math.max(1, Math.round(length * 6)), length: Math.round(length) },
        };
        break;
      }
    }
    made++;
    id++;
    yield feature!;
  }
}

/** The result FeatureCollection as a stream of UTF-8 text. */
/** @param share the part of each AOI's features served (a FAILED processing's partial results); default all. */
export function resultStream(plan: ResultPlan, aoiIndexes: number[], share = 1): Readable {
  async function* text(): AsyncGenerator<string> {
    yield `{"type":"FeatureCollection","name":${JSON.stringify(plan.name)},"features":[`;
    let first = true;
    let nextId = 1;
    for (const index of aoiIndexes) {
      const all = [...aoiFeatures(plan, plan.aois[index]!, index, nextId)];
      for (const feature of share >= 1 ? all : all.slice(0, Math.floor(all.length * Math.max(0, share)))) {
        yield (first ? '' : ',') + JSON.stringify(feature);
        first = false;
        nextId++;
      }
    }
    yield ']}';
  }
  return Readable.from(text(), { objectMode: false });
}
